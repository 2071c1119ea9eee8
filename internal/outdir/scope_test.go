package outdir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
)

// inTree is a Scope: the tree of one cluster of a fleet's out/.
func inTree(dir string) func(string) bool {
	return func(p string) bool { return strings.HasPrefix(p, dir+"/") }
}

func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A scoped write changes only the files in its scope: the files outside
// it stay (even those no longer rendered, even one edited by hand), and
// so does their record; a later unscoped write sees them as before.
func TestScopedWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	full := gen(map[string]string{
		"a/gce/g/kube-env": "a1\n",
		"a/k8s/x.yaml":     "ax\n",
		"b/gce/g/kube-env": "b1\n",
		"b/k8s/x.yaml":     "bx\n",
		"docs/fleet.md":    "fleet\n",
	})
	if _, err := Write(dir, full); err != nil {
		t.Fatal(err)
	}
	before := readAll(t, dir)
	// b's kube-env edited by hand: outside the scope, not a conflict.
	edited := filepath.Join(dir, "b", "gce", "g", "kube-env")
	if err := os.WriteFile(edited, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	aOnly := gen(map[string]string{
		"a/gce/g/kube-env": "a2\n", // changed
		"a/gce/h/kube-env": "ah\n", // added
		// a/k8s/x.yaml dropped
	})
	r, err := WriteWith(dir, aOnly, Options{Scope: inTree("a")})
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, c := range r.Changes {
		changes = append(changes, c.Kind.String()+" "+c.Path)
	}
	want := []string{"modified a/gce/g/kube-env", "added a/gce/h/kube-env", "removed a/k8s/x.yaml"}
	slices.Sort(want)
	slices.Sort(changes)
	if !slices.Equal(changes, want) {
		t.Errorf("changes = %v, want %v", changes, want)
	}
	if len(r.Conflicts) > 0 || len(r.Foreign) > 0 {
		t.Errorf("conflicts %v, foreign %v", r.Conflicts, r.Foreign)
	}
	if got := r.Outside; !slices.Equal(got, []string{"b/gce/g/kube-env", "b/k8s/x.yaml", "docs/fleet.md"}) {
		t.Errorf("outside = %v", got)
	}
	after := readAll(t, dir)
	for _, p := range []string{"b/k8s/x.yaml", "docs/fleet.md"} {
		if after[p] != before[p] {
			t.Errorf("%s changed: %q", p, after[p])
		}
	}
	if after["b/gce/g/kube-env"] != "mine\n" {
		t.Errorf("the hand edit outside the scope is gone: %q", after["b/gce/g/kube-env"])
	}
	if _, ok := after["a/k8s/x.yaml"]; ok {
		t.Error("a/k8s/x.yaml, no longer rendered in the scope, is still there")
	}

	// The record kept b's entries as they were: an unscoped write of the
	// full render (with a's new files) finds b's hand edit, and restores
	// nothing else.
	next := gen(map[string]string{
		"a/gce/g/kube-env": "a2\n",
		"a/gce/h/kube-env": "ah\n",
		"b/gce/g/kube-env": "b1\n",
		"b/k8s/x.yaml":     "bx\n",
		"docs/fleet.md":    "fleet\n",
	})
	r, err = Compare(dir, next)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changes) != 0 || r.Manifest != nil || len(r.Conflicts) != 1 || r.Conflicts[0].Path != "b/gce/g/kube-env" || r.Conflicts[0].Kind != Edited {
		t.Errorf("unscoped compare after the scoped write: changes %v, manifest %v, conflicts %v", r.Changes, r.Manifest, r.Conflicts)
	}

	// A scoped compare sees only its scope.
	r, err = CompareWith(dir, gen(map[string]string{"b/gce/g/kube-env": "b1\n", "b/k8s/x.yaml": "bx\n"}), Options{Scope: inTree("b")})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Conflicts) != 1 || len(r.Changes) != 0 || r.Manifest != nil {
		t.Errorf("scoped compare of b: changes %v, manifest %v, conflicts %v", r.Changes, r.Manifest, r.Conflicts)
	}
	r, err = CompareWith(dir, aOnly, Options{Scope: inTree("a")})
	if err != nil || !r.Clean() {
		t.Errorf("scoped compare of a: %+v, %v", r, err)
	}

	// Files given outside the scope are a caller's mistake.
	if _, err := WriteWith(dir, layout.Files{"b/x": []byte("x")}, Options{Scope: inTree("a")}); err == nil {
		t.Error("a file outside the scope was accepted")
	}
}

// Without a record, a scoped write takes the files with nodegen's header
// outside its scope as nodegen's too, so that the record it writes lists
// the whole directory.
func TestScopedWriteWithoutRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	for p, b := range gen(map[string]string{"b/k8s/x.yaml": "bx\n"}) {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "b", "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := WriteWith(dir, gen(map[string]string{"a/k8s/x.yaml": "ax\n"}), Options{Scope: inTree("a")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Adopted, []string{"b/k8s/x.yaml"}) {
		t.Errorf("adopted = %v", r.Adopted)
	}
	m, err := parseManifest(ManifestName, []byte(readAll(t, dir)[ManifestName]))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range m.Files {
		paths = append(paths, e.Path)
	}
	if !slices.Equal(paths, []string{"a/k8s/x.yaml", "b/k8s/x.yaml"}) {
		t.Errorf("record lists %v", paths)
	}
	if readAll(t, dir)["b/notes.txt"] != "mine\n" {
		t.Error("the foreign file outside the scope is gone")
	}
}
