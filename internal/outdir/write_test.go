package outdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/layout"
)

// gen makes a render: every file carries nodegen's header, so that
// Write may delete the ones a later render drops.
func gen(files map[string]string) layout.Files {
	out := layout.Files{}
	for p, body := range files {
		out[p] = []byte("# " + layout.HeaderLine("nodegroups") + "\n" + body)
	}
	return out
}

var (
	oldRender = gen(map[string]string{
		"gce/a/kube-env":          "a-old\n",
		"gce/a/startup-script.sh": "#!/bin/bash\necho a\n",
		"gce/b/kube-env":          "b\n", // dropped by the new render
		"k8s/x.yaml":              "x-old\n",
		"k8s/same.yaml":           "same\n",
	})
	newRender = gen(map[string]string{
		"gce/a/kube-env":          "a-new\n",
		"gce/a/startup-script.sh": "#!/bin/bash\necho a\n",
		"gce/c/kube-env":          "c\n", // added
		"k8s/x.yaml":              "x-new\n",
		"k8s/same.yaml":           "same\n",
	})
)

func mustWrite(t *testing.T, dir string, files layout.Files) Report {
	t.Helper()
	r, err := Write(dir, files)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return r
}

// assertHolds fails unless dir holds exactly files (plus foreign).
func assertHolds(t *testing.T, dir string, files layout.Files, foreign ...string) {
	t.Helper()
	r, err := Compare(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		var paths []string
		for _, c := range r.Changes {
			paths = append(paths, c.Kind.String()+" "+c.Path)
		}
		t.Errorf("%s differs from the render: %s", dir, strings.Join(paths, ", "))
	}
	if !slices.Equal(r.Foreign, foreign) {
		t.Errorf("foreign files %q, want %q", r.Foreign, foreign)
	}
}

// leftovers lists what Write left next to dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != filepath.Base(dir) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteFresh(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	r := mustWrite(t, dir, oldRender)
	if len(r.Changes) != len(oldRender) {
		t.Errorf("%d changes, want %d", len(r.Changes), len(oldRender))
	}
	assertHolds(t, dir, oldRender)
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left behind: %q", l)
	}
	fi, err := os.Stat(filepath.Join(dir, "gce/a/startup-script.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("script mode %v, want 0755", fi.Mode().Perm())
	}
}

func TestWriteReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	mustWrite(t, dir, oldRender)
	r := mustWrite(t, dir, newRender)
	var got []string
	for _, c := range r.Changes {
		got = append(got, c.Kind.String()+" "+c.Path)
	}
	want := []string{"removed gce/b/kube-env", "modified gce/a/kube-env", "added gce/c/kube-env", "modified k8s/x.yaml"}
	slices.Sort(want)
	slices.SortFunc(got, func(a, b string) int { return strings.Compare(a, b) })
	if !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	assertHolds(t, dir, newRender)
	if _, err := os.Stat(filepath.Join(dir, "gce/b")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed group's directory is still there: %v", err)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left behind: %q", l)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUnchangedFilesKept: a file whose content does not change keeps its
// inode and mtime (make and Terraform see no change); a changed file is a
// new file.
func TestUnchangedFilesKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	mustWrite(t, dir, oldRender)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	before := map[string]os.FileInfo{}
	for _, p := range oldRender.Paths() {
		fp := filepath.Join(dir, p)
		if err := os.Chtimes(fp, old, old); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(fp)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = fi
	}
	mustWrite(t, dir, newRender)
	for _, p := range []string{"gce/a/startup-script.sh", "k8s/same.yaml"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(fi, before[p]) {
			t.Errorf("%s was rewritten (new inode)", p)
		}
		if !fi.ModTime().Equal(old) {
			t.Errorf("%s mtime %v, want %v", p, fi.ModTime(), old)
		}
	}
	for _, p := range []string{"gce/a/kube-env", "k8s/x.yaml"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.ModTime().Equal(old) || os.SameFile(fi, before[p]) {
			t.Errorf("%s changed content but kept its file", p)
		}
	}
}

// TestForeignFilesKept: files nodegen did not generate (no header) are
// never deleted, keep their content, mode and mtime, and are reported;
// so are symbolic links and empty directories a person made.
func TestForeignFilesKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	mustWrite(t, dir, oldRender)
	writeTestFile(t, filepath.Join(dir, "gce/b/NOTES.md"), "notes about b\n") // in a group that goes away
	writeTestFile(t, filepath.Join(dir, "README"), "mine\n")
	if err := os.Chmod(filepath.Join(dir, "README"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("k8s/x.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(filepath.Join(dir, "README"))
	if err != nil {
		t.Fatal(err)
	}

	r := mustWrite(t, dir, newRender)
	want := []string{"README", "gce/b/NOTES.md", "link.yaml"}
	if !slices.Equal(r.Foreign, want) {
		t.Errorf("reported foreign %q, want %q", r.Foreign, want)
	}
	assertHolds(t, dir, newRender, want...)
	if b, err := os.ReadFile(filepath.Join(dir, "gce/b/NOTES.md")); err != nil || string(b) != "notes about b\n" {
		t.Errorf("NOTES.md: %q, %v", b, err)
	}
	after, err := os.Stat(filepath.Join(dir, "README"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("README changed: %v %v → %v %v", before.Mode(), before.ModTime(), after.Mode(), after.ModTime())
	}
	if target, err := os.Readlink(filepath.Join(dir, "link.yaml")); err != nil || target != "k8s/x.yaml" {
		t.Errorf("link.yaml: %q, %v", target, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "empty")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("empty directory: %v, %v", fi, err)
	}
	// The generated file of the removed group is gone.
	if _, err := os.Stat(filepath.Join(dir, "gce/b/kube-env")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("gce/b/kube-env: %v", err)
	}
}

// TestCompareSeesWholeTrees: a Compare running while Writes swap trees
// sees the old tree or the new one, never a mix.
func TestCompareSeesWholeTrees(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	mustWrite(t, dir, oldRender)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		renders := []layout.Files{newRender, oldRender}
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if _, err := Write(dir, renders[i%2]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 300 {
		r, err := Compare(dir, oldRender)
		if err != nil {
			t.Fatal(err)
		}
		got := seen(r, oldRender)
		if !equalFiles(got, oldRender) && !equalFiles(got, newRender) {
			t.Errorf("Compare saw a mix of trees: %q", got.Paths())
			break
		}
	}
	close(done)
	wg.Wait()
}

// seen rebuilds the tree Compare read from its report against files.
func seen(r Report, files layout.Files) layout.Files {
	out := layout.Files{}
	for p, b := range files {
		out[p] = b
	}
	for _, c := range r.Changes {
		switch c.Kind {
		case Added:
			delete(out, c.Path)
		case Modified, Removed:
			out[c.Path] = c.Old
		}
	}
	return out
}

func equalFiles(a, b layout.Files) bool {
	if len(a) != len(b) {
		return false
	}
	for p, x := range a {
		if y, ok := b[p]; !ok || string(x) != string(y) {
			return false
		}
	}
	return true
}
