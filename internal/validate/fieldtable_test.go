package validate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestFieldTable holds docs/validation.md's field-by-field table to the
// tests: every row names at least one test, and every test it names
// exists (a testscript of internal/cli, or a Go test function of the
// module).
func TestFieldTable(t *testing.T) {
	root := testsrc.RepoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "validation.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "<!-- field-table -->\n")
	if ok {
		table, _, ok = strings.Cut(table, "<!-- /field-table -->")
	}
	if !ok {
		t.Fatal("docs/validation.md: no <!-- field-table --> … <!-- /field-table --> block")
	}
	goTests := map[string]bool{}
	funcs := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`)
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		for _, m := range funcs.FindAllStringSubmatch(string(b), -1) {
			goTests[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile("`([A-Za-z0-9_.]+)`")
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 7 || strings.TrimSpace(cells[1]) == "field" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		rows++
		tests := names.FindAllStringSubmatch(cells[5], -1)
		if len(tests) == 0 {
			t.Errorf("row %q names no test", strings.TrimSpace(cells[1]))
		}
		for _, m := range tests {
			name := m[1]
			switch {
			case strings.HasSuffix(name, ".txtar"):
				if _, err := os.Stat(filepath.Join(root, "internal", "cli", "testdata", "script", name)); err != nil {
					t.Errorf("row %q: no testscript %s", strings.TrimSpace(cells[1]), name)
				}
			case strings.HasPrefix(name, "Test"):
				if !goTests[name] {
					t.Errorf("row %q: no Go test %s", strings.TrimSpace(cells[1]), name)
				}
			default:
				t.Errorf("row %q: %q is neither a testscript nor a Go test", strings.TrimSpace(cells[1]), name)
			}
		}
	}
	if rows == 0 {
		t.Fatal("the field table has no rows")
	}
}
