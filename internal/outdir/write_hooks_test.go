//go:build nodegen_testhooks

package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
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

// The tests of Write that make it fail at a stage (FailPoint, a test hook:
// see internal/testing/testhooks). TestHooked runs them in a plain go test.

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

// TestWriteFailPoints: a run that dies while building the new tree or just
// before the swap leaves the old tree as it was; the next run cleans up.
func TestWriteFailPoints(t *testing.T) {
	for _, stage := range []string{"mid-tree", "before-swap"} {
		t.Run(stage, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			old := many(40, "1")
			if _, err := Write(out, old); err != nil {
				t.Fatal(err)
			}
			boom := errors.New("boom")
			FailPoint = func(at string) error {
				if at == stage {
					return boom
				}
				return nil
			}
			defer func() { FailPoint = nil }()
			if _, err := Write(out, many(40, "2")); !errors.Is(err, boom) {
				t.Fatalf("got %v, want the failpoint's error", err)
			}
			if !maps.EqualFunc(readTree(t, out), old, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Fatal("the old tree changed")
			}
			FailPoint = nil
			next := many(40, "2")
			if _, err := Write(out, next); err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(readTree(t, out), next, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Fatal("the retried write did not produce the new tree")
			}
			entries, _ := os.ReadDir(filepath.Dir(out))
			if len(entries) != 1 {
				t.Errorf("leftovers next to out: %v", entries)
			}
		})
	}
}

// What another process writes into the directory while Write runs (a new
// file, a new directory, a file replaced by rename as editors do, a file
// at a generated path) is in the directory afterwards.
func TestFilesWrittenDuringRunKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	mustWrite(t, dir, oldRender)
	writeTestFile(t, filepath.Join(dir, "README"), "v1\n")
	setFailPoint(t, func(stage string) error {
		if stage != "before-swap" {
			return nil
		}
		writeTestFile(t, filepath.Join(dir, "notes/today.txt"), "written during the run\n")
		writeTestFile(t, filepath.Join(dir, "README.tmp"), "v2\n")
		if err := os.Rename(filepath.Join(dir, "README.tmp"), filepath.Join(dir, "README")); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "empty"), 0o700); err != nil {
			t.Error(err)
		}
		writeTestFile(t, filepath.Join(dir, "k8s/x.yaml.tmp"), "my x\n")
		if err := os.Rename(filepath.Join(dir, "k8s/x.yaml.tmp"), filepath.Join(dir, "k8s/x.yaml")); err != nil {
			t.Error(err)
		}
		return nil
	})
	r := mustWrite(t, dir, newRender)
	if got := readFile(t, filepath.Join(dir, "notes/today.txt")); got != "written during the run\n" {
		t.Errorf("notes/today.txt: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "README")); got != "v2\n" {
		t.Errorf("README: %q, want the version written during the run", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "empty")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("empty: %v %v", fi, err)
	}
	if got := readFile(t, filepath.Join(dir, "k8s/x.yaml.nodegen-concurrent")); got != "my x\n" {
		t.Errorf("k8s/x.yaml.nodegen-concurrent: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "k8s/x.yaml")); got != string(newRender["k8s/x.yaml"]) {
		t.Errorf("k8s/x.yaml: %q", got)
	}
	want := []string{"README", "empty/", "k8s/x.yaml.nodegen-concurrent", "notes/", "notes/today.txt"}
	slices.Sort(r.Carried)
	if !slices.Equal(r.Carried, want) {
		t.Errorf("carried %q, want %q", r.Carried, want)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left behind: %q", l)
	}
}
