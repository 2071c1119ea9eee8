package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// setFailPoint makes Write fail at stage for the rest of the test.
func setFailPoint(t *testing.T, f func(stage string) error) {
	t.Helper()
	FailPoint = f
	t.Cleanup(func() { FailPoint = nil })
}

func failAtStage(stage string) func(string) error {
	return func(at string) error {
		if at == stage {
			return fmt.Errorf("failpoint %s", at)
		}
		return nil
	}
}

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

// TestFailPoints: an error at any stage leaves the directory as it was
// (before the swap) or completely new (after it), never a mix.
func TestFailPoints(t *testing.T) {
	for _, c := range []struct {
		stage string
		want  layout.Files
	}{
		{"mid-tree", oldRender},
		{"before-swap", oldRender},
		{"after-swap", newRender},
	} {
		t.Run(c.stage, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			mustWrite(t, dir, oldRender)
			setFailPoint(t, failAtStage(c.stage))
			if _, err := Write(dir, newRender); err == nil || !strings.Contains(err.Error(), "failpoint "+c.stage) {
				t.Fatalf("Write: %v, want the failpoint's error", err)
			}
			assertHolds(t, dir, c.want)

			// The next run starts clean and finishes the job.
			FailPoint = nil
			mustWrite(t, dir, newRender)
			assertHolds(t, dir, newRender)
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("left behind: %q", l)
			}
		})
	}
}

// TestFailPointsReached makes sure each stage TestFailPoints names is one
// Write passes through when it changes something, and none when it does
// not.
func TestFailPointsReached(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	var stages []string
	setFailPoint(t, func(s string) error { stages = append(stages, s); return nil })
	mustWrite(t, dir, oldRender)
	if want := []string{"mid-tree", "before-swap", "after-swap"}; !slices.Equal(stages, want) {
		t.Errorf("stages %q, want %q", stages, want)
	}
	stages = nil
	mustWrite(t, dir, oldRender)
	if len(stages) > 0 {
		t.Errorf("an unchanged write went through %q", stages)
	}
}

// TestInterruptedRunCleaned: what a killed run leaves (a half-built
// staging tree, a retired tree) is removed by the next run and never
// becomes part of the output.
func TestInterruptedRunCleaned(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "out")
	mustWrite(t, dir, oldRender)
	// Two killed runs: each leaves its scratch directory, marked, and the
	// second removes the first's before it starts.
	for range 2 {
		setFailPoint(t, failAtStage("before-swap"))
		if _, err := Write(dir, newRender); err == nil {
			t.Fatal("Write did not fail at its failpoint")
		}
		FailPoint = nil
	}
	if l := leftovers(t, dir); len(l) != 1 || !strings.HasPrefix(l[0], ".out.nodegen-") {
		t.Fatalf("the killed runs left %q, want one scratch directory", l)
	}
	if _, reason, err := Intact(dir, Options{}, nil); err != nil || !strings.Contains(reason, "an interrupted run left") {
		t.Errorf("Intact after killed runs: %q, %v", reason, err)
	}
	mustWrite(t, dir, newRender)
	assertHolds(t, dir, newRender)
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left behind: %q", l)
	}

	// Also when the render has not changed.
	setFailPoint(t, failAtStage("before-swap"))
	if _, err := Write(dir, oldRender); err == nil {
		t.Fatal("Write did not fail at its failpoint")
	}
	FailPoint = nil
	r := mustWrite(t, dir, newRender)
	if !r.Clean() {
		t.Errorf("changes %v", r.Changes)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left behind: %q", l)
	}
}

// TestPersonsFoldersKept: folders next to out/ that nodegen did not make
// survive every run, a killed one and the one after it included, whatever
// their names: nodegen knows its scratch directories by the mark it writes
// into them, not by their names.
func TestPersonsFoldersKept(t *testing.T) {
	exchanges := map[string]func(a, b string) error{
		"exchange":  exchangePaths,
		"2 renames": func(a, b string) error { return errNoExchange },
	}
	for name, ex := range exchanges {
		for _, stage := range []string{"", "mid-tree", "before-swap", "mid-swap", "after-swap"} {
			if stage == "mid-swap" && name == "exchange" {
				continue // no such stage with an atomic exchange
			}
			t.Run(name+"/failpoint="+stage, func(t *testing.T) {
				exchange = ex
				t.Cleanup(func() { exchange = exchangePaths })
				root := t.TempDir()
				dir := filepath.Join(root, "out")
				mustWrite(t, dir, oldRender)
				mine := map[string]string{
					".out.nodegen-old/notes.txt":               "mine\n",
					".out.nodegen-new/k8s/x.yaml":              "mine too\n",
					".out.nodegen-12345/plan.txt":              "a name of the scratch shape\n",
					".out.nodegen-777/" + markName:             "nodegen scratch directory of \"other\"\n",
					".out.nodegen-888/" + markName + "/inside": "a directory where the mark would be\n",
					".out.nodegen-999/" + markName:             string(markContent(dir)) + "and more\n",
					".other.nodegen-1/" + markName:             string(markContent(filepath.Join(root, "other"))),
					"out.nodegen-old/keep":                     "not hidden\n",
				}
				for p, c := range mine {
					writeTestFile(t, filepath.Join(root, p), c)
				}
				if stage != "" {
					setFailPoint(t, failAtStage(stage))
					if _, err := Write(dir, newRender); err == nil {
						t.Fatal("Write did not fail at its failpoint")
					}
					FailPoint = nil
				}
				mustWrite(t, dir, newRender)
				if _, err := WriteWith(dir, oldRender, Options{Force: true}); err != nil {
					t.Fatal(err)
				}
				assertHolds(t, dir, oldRender)
				for p, c := range mine {
					b, err := os.ReadFile(filepath.Join(root, p))
					if err != nil || string(b) != c {
						t.Errorf("%s: %q, %v; want it untouched", p, b, err)
					}
				}
				var extra []string
				for _, l := range leftovers(t, dir) {
					if _, ok := mine[l]; !ok && !slices.ContainsFunc(mapsKeys(mine), func(p string) bool { return strings.HasPrefix(p, l+"/") }) {
						extra = append(extra, l)
					}
				}
				if len(extra) > 0 {
					t.Errorf("left behind: %q", extra)
				}
			})
		}
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

// TestConcurrentWrites: two writers never work in the directory at the
// same time, and the result is one render or the other, whole.
func TestConcurrentWrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	var inside, overlaps atomic.Int32
	setFailPoint(t, func(stage string) error {
		switch stage {
		case "mid-tree":
			if inside.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(5 * time.Millisecond) // widen the window
		case "after-swap":
			inside.Add(-1)
		}
		return nil
	})
	renders := []layout.Files{oldRender, newRender}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Write(dir, renders[i%2]); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Write: %v", err)
	}
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d writes overlapped", n)
	}
	a, err := Compare(dir, oldRender)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compare(dir, newRender)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Clean() && !b.Clean() {
		t.Errorf("the directory is neither render: %v / %v", a.Changes, b.Changes)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left behind: %q", l)
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

// TestSwapWithoutExchange runs Write as it runs where there is no atomic
// exchange of two paths (Windows, BSDs, macOS file systems without
// RENAME_SWAP): two renames. A run that dies between them leaves no out/
// but the old tree beside it; Compare reads that old tree, and the next
// Write moves it back before anything else, so readers see the old tree
// or the new one, never a mix, and a person's file in out/ survives.
func TestSwapWithoutExchange(t *testing.T) {
	exchange = func(a, b string) error { return errNoExchange }
	t.Cleanup(func() { exchange = exchangePaths })
	for _, c := range []struct {
		stage string
		want  layout.Files
	}{
		{"", newRender},
		{"before-swap", oldRender},
		{"mid-swap", oldRender},
		{"after-swap", newRender},
	} {
		t.Run("failpoint="+c.stage, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			mustWrite(t, dir, oldRender)
			if err := os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.stage != "" {
				setFailPoint(t, failAtStage(c.stage))
				if _, err := Write(dir, newRender); err == nil || !strings.Contains(err.Error(), "failpoint "+c.stage) {
					t.Fatalf("Write: %v, want the failpoint's error", err)
				}
				FailPoint = nil
			} else {
				mustWrite(t, dir, newRender)
			}
			if c.stage == "mid-swap" {
				if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("after a death between the renames out/ should be gone, got %v", err)
				}
			}
			assertHolds(t, dir, c.want, "NOTES.md")

			mustWrite(t, dir, newRender)
			assertHolds(t, dir, newRender, "NOTES.md")
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("left behind: %q", l)
			}
		})
	}
}
