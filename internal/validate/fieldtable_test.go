package validate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/schemadoc"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestFieldTable holds docs/validation.md's field-by-field table to the
// schema and to the tests:
//   - every field of the schema that holds a value (a leaf: a field with no
//     field below it) has a row, and every field a row names is a field of
//     the schema (node-group and cluster keys written as *);
//   - every row names at least one test, and every test it names exists (a
//     testscript of internal/cli, or a Go test function of the module);
//   - for every field of a row, one of the row's tests mentions it (its
//     last name: the field a bad value is written to).
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

	// The schema's leaves, in the table's spelling.
	s, err := schemadoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	spell := strings.NewReplacer(schemadoc.GroupKey, "*", schemadoc.AnyKey, "*")
	leaves := map[string]bool{}
	for _, f := range s.Fields {
		leaf := !slices.ContainsFunc(s.Fields, func(g schemadoc.Field) bool {
			return strings.HasPrefix(g.Path, f.Path+".") || strings.HasPrefix(g.Path, f.Path+schemadoc.Elem+".")
		})
		if leaf {
			leaves[spell.Replace(f.Path)] = false
		}
	}

	// Each Go test function's text.
	goTests := map[string]string{}
	funcs := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`)
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		src := string(b)
		ms := funcs.FindAllStringSubmatchIndex(src, -1)
		for i, m := range ms {
			end := len(src)
			if i+1 < len(ms) {
				end = ms[i+1][0]
			}
			goTests[src[m[2]:m[3]]] = src[m[0]:end]
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	quoted := regexp.MustCompile("`([^`]+)`")
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) != 5 || strings.HasPrefix(line, "| field ") {
			continue
		}
		rows++
		name := strings.TrimPrefix(cells[0], "| ")
		var fields []string
		for _, m := range quoted.FindAllStringSubmatch(cells[0], -1) {
			fields = append(fields, m[1])
			if _, ok := leaves[m[1]]; ok {
				leaves[m[1]] = true
			} else if !slices.ContainsFunc(s.Fields, func(f schemadoc.Field) bool { return spell.Replace(f.Path) == m[1] }) {
				t.Errorf("row %s: %s is no field of the schema", name, m[1])
			}
		}
		if len(fields) == 0 {
			t.Errorf("row %s names no field", name)
		}
		var texts []string
		tests := quoted.FindAllStringSubmatch(strings.TrimSuffix(cells[4], " |"), -1)
		if len(tests) == 0 {
			t.Errorf("row %s names no test", name)
		}
		for _, m := range tests {
			test := m[1]
			switch {
			case strings.HasSuffix(test, ".txtar"):
				b, err := os.ReadFile(filepath.Join(root, "internal", "cli", "testdata", "script", test))
				if err != nil {
					t.Errorf("row %s: no testscript %s", name, test)
				}
				texts = append(texts, string(b))
			case strings.HasPrefix(test, "Test"):
				text, ok := goTests[test]
				if !ok {
					t.Errorf("row %s: no Go test %s", name, test)
				}
				texts = append(texts, text)
			default:
				t.Errorf("row %s: %q is neither a testscript nor a Go test", name, test)
			}
		}
		for _, f := range fields {
			i := strings.LastIndexAny(f, ".]")
			last := strings.Trim(f[i+1:], `"`)
			if i >= 0 && f[i] == '.' && strings.HasSuffix(f, `"`) {
				// a quoted key: "ephemeral-storage", "imagefs.available"
				last = f[strings.LastIndex(f[:len(f)-1], `"`)+1 : len(f)-1]
			}
			if !slices.ContainsFunc(texts, func(text string) bool { return strings.Contains(text, last) }) {
				t.Errorf("row %s: none of its tests mentions %s (%s)", name, last, f)
			}
		}
	}
	if rows == 0 {
		t.Fatal("the field table has no rows")
	}
	var missing []string
	for f, covered := range leaves {
		if !covered {
			missing = append(missing, f)
		}
	}
	slices.Sort(missing)
	for _, f := range missing {
		t.Errorf("the field table has no row for %s", f)
	}
}
