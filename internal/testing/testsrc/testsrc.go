// Package testsrc gives tests their own copy of the example source, so
// that no test depends on what a user has made of nodegroups/ (the
// directory users fork and edit). Only the golden test of the shipped
// example (internal/cli/golden_test.go) reads nodegroups/, through
// ShippedDir.
package testsrc

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
)

// here is this package's directory.
func here() string { return filepath.Join(RepoRoot(), "internal", "testing", "testsrc") }

// root is the repository's root directory, found when the test binary
// starts, before any test changes the working directory.
var root, rootErr = findRoot()

// findRoot returns the repository's root: the directory of this source
// file's module when the binary recorded its absolute path, else (built
// with -trimpath, where runtime.Caller names the file by its module path)
// the module's root as go finds it: the nearest directory holding a go.mod
// at or above the working directory, which go test sets to the package's
// directory.
func findRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "..", "..", ".."), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("testsrc: no go.mod at or above %s", wd)
		}
	}
}

// Dir returns the tests' copy of the example source,
// internal/testing/testsrc/testdata/nodegroups: four groups (autoscaler, cpu-burst,
// gpu-t4, onprem-gpu) and the cluster. Tests may rely on its content; it
// changes only with the tests that rely on it.
func Dir() string { return filepath.Join(here(), "testdata", "nodegroups") }

// RepoRoot returns the repository's root directory. It panics when the
// test binary runs outside the repository and was built with -trimpath.
func RepoRoot() string {
	if rootErr != nil {
		panic(rootErr)
	}
	return root
}

// ShippedDir returns the repository's nodegroups/ directory. Only the
// golden tests of the shipped example may use it.
func ShippedDir() string { return filepath.Join(RepoRoot(), "nodegroups") }

// ShippedCopyDir returns the tests' fixed copy of the shipped example,
// internal/testing/testsrc/testdata/shipped/nodegroups: the source the
// README and docs/ show the output of (cluster hybrid-ai: autoscaler,
// cpu-burst, gpu-t4, spot-gpu-t4, onprem-gpu). The docs' examples run on
// it, never on nodegroups/, so that a fork that edits nodegroups/ keeps
// its tests green. TestShippedCopyCurrent holds nodegroups/ of this
// repository to it when NODEGEN_REQUIRE_SHIPPED_EXAMPLE=1.
func ShippedCopyDir() string { return filepath.Join(here(), "testdata", "shipped", "nodegroups") }

// CopyShippedTo copies the fixed copy of the shipped example into dst,
// creating it.
func CopyShippedTo(dst string) error { return copyDir(ShippedCopyDir(), dst) }

// Copy copies the tests' example source into a new temporary directory
// named nodegroups and applies edits: file name → new content, or "" to
// remove the file. It returns the directory.
func Copy(t testing.TB, edits map[string]string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "nodegroups")
	if err := CopyTo(dst); err != nil {
		t.Fatal(err)
	}
	return edit(t, dst, edits)
}

// CopyTo copies the tests' example source into dst, creating it.
func CopyTo(dst string) error { return copyDir(Dir(), dst) }

// copyDir copies the files of src into dst, creating it.
func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Example loads, validates nothing more than the loader does, and renders
// the tests' copy of the example.
func Example(t testing.TB) (*model.Source, layout.Files) {
	t.Helper()
	return Render(t, Dir())
}

// Render loads the one-cluster source in dir as the loader does (no rule
// of validate beyond it) and renders it, failing the test on an error.
func Render(t testing.TB, dir string) (*model.Source, layout.Files) {
	t.Helper()
	l, err := source.Load(dir)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatalf("rendering %s: %v", dir, err)
	}
	return l.Fleet.Clusters[0], files
}

// FleetDir returns the tests' fleet source,
// internal/testing/testsrc/testdata/fleet: two clusters (serve: autoscaler,
// gateway, gpu-t4; train: autoscaler, gpu-t4, onprem-gpu) sharing a hidden
// cluster base (_cluster), a definition (#Autoscaler) and a hidden group
// (_gpu, used by train with max changed), and a primary-remote mesh
// (serve primary, train remote). Tests may rely on its content.
func FleetDir() string { return filepath.Join(here(), "testdata", "fleet") }

// CopyFleetTo copies the tests' fleet source into dst, creating it.
func CopyFleetTo(dst string) error { return copyDir(FleetDir(), dst) }

// CopyFleet copies FleetDir into a new temporary directory named fleet and
// applies edits like Copy. It returns the directory.
func CopyFleet(t testing.TB, edits map[string]string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "fleet")
	if err := copyDir(FleetDir(), dst); err != nil {
		t.Fatal(err)
	}
	return edit(t, dst, edits)
}

// edit applies edits to the source in dst (file name → new content, or ""
// to remove the file) and returns dst.
func edit(t testing.TB, dst string, edits map[string]string) string {
	t.Helper()
	for name, content := range edits {
		p := filepath.Join(dst, name)
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
