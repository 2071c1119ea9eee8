// Package testsrc loads the shipped example source for tests.
package testsrc

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
)

// Dir returns the repository's nodegroups directory.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "nodegroups")
}

// Example loads, validates nothing more than the loader does, and renders
// the shipped example.
func Example(t testing.TB) (*model.Source, render.Files) {
	t.Helper()
	l, err := source.Load(Dir())
	if err != nil {
		t.Fatalf("loading the example: %v", err)
	}
	files, err := render.All(l.Source)
	if err != nil {
		t.Fatalf("rendering the example: %v", err)
	}
	return l.Source, files
}
