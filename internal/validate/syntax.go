package validate

import (
	"fmt"
	"path/filepath"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/secrets"
)

// Syntax checks what the user wrote rather than what it evaluates to:
// secrets anywhere in the files (string values, labels and comments), and
// node groups defined more than once (CUE would silently merge them).
func Syntax(files []*ast.File) diag.List {
	return append(Secrets(files), DuplicateGroups(files)...).Sorted()
}

// Secrets reports every secret in what the user wrote (string values,
// labels and comments); see package secrets.
func Secrets(files []*ast.File) diag.List { return secrets.Syntax(files) }

// DuplicateGroups reports every node group defined in more than one
// place, at each place.
func DuplicateGroups(files []*ast.File) diag.List {
	var list diag.List
	duplicateGroups(files, &list)
	return list.Sorted()
}

// duplicateGroups reports a node group defined in more than one place,
// at each place.
func duplicateGroups(files []*ast.File, list *diag.List) {
	type def struct {
		name string
		pos  token.Pos
	}
	var defs []def
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			if name, _, err := ast.LabelName(fd.Label); err != nil || name != "nodeGroups" {
				continue
			}
			s, ok := fd.Value.(*ast.StructLit)
			if !ok {
				continue
			}
			for _, e := range s.Elts {
				g, ok := e.(*ast.Field)
				if !ok {
					continue
				}
				name, _, err := ast.LabelName(g.Label)
				if err != nil {
					continue
				}
				defs = append(defs, def{name, g.Label.Pos()})
			}
		}
	}
	for i, d := range defs {
		var others []string
		for j, o := range defs {
			if j != i && o.name == d.name {
				others = append(others, fmt.Sprintf("%s:%d:%d", filepath.Base(o.pos.Filename()), o.pos.Line(), o.pos.Column()))
			}
		}
		if len(others) > 0 {
			list.Add(d.pos, diag.Path("nodeGroups", d.name),
				"node group %q is also defined at %s; CUE would merge the definitions into one group: give each group one definition and a name of its own",
				d.name, strings.Join(others, ", "))
		}
	}
}
