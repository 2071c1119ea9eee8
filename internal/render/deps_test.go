package render_test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestOneImporter holds the render/* packages to being stages of the
// root's list: in product code (tests aside) only package render imports
// one, so that what another package needs of an artifact family is a
// fact of the model or of a shared package, not a renderer's.
func TestOneImporter(t *testing.T) {
	const root = "github.com/nodegen/nodegen/internal/render"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "github.com/nodegen/nodegen/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	importers := map[string][]string{}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		f := strings.Fields(l)
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, root+"/") {
				importers[imp] = append(importers[imp], f[0])
			}
		}
	}
	if len(lines) < 20 || len(importers) < 5 {
		t.Fatalf("go list printed %d packages, %d render/* packages imported: not the module\n%s", len(lines), len(importers), out)
	}
	for _, pkg := range slices.Sorted(maps.Keys(importers)) {
		for _, by := range importers[pkg] {
			if by != root {
				t.Errorf("%s imports %s: only %s, the stage list, imports a render/* package", by, pkg, root)
			}
		}
	}
}
