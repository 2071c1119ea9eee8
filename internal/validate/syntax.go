package validate

import (
	"fmt"
	"path/filepath"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
)

// DuplicateGroups reports every node group defined in more than one
// place, at each place.
func DuplicateGroups(files []*ast.File) diag.List {
	var list diag.List
	duplicateGroups(files, &list)
	return list.Sorted()
}

// duplicateGroups reports a node group defined in more than one place,
// at each place: top-level nodeGroups, and each fleet cluster's
// (clusters: <c>: nodeGroups).
func duplicateGroups(files []*ast.File, list *diag.List) {
	type def struct {
		cluster, name string
		pos           token.Pos
	}
	var defs []def
	groups := func(cluster string, v ast.Expr) {
		s, ok := v.(*ast.StructLit)
		if !ok {
			return
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
			defs = append(defs, def{cluster, name, g.Label.Pos()})
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			switch name, _, err := ast.LabelName(fd.Label); {
			case err != nil:
			case name == "nodeGroups":
				groups("", fd.Value)
			case name == "clusters":
				for _, c := range fields(fd.Value) {
					cname, _, err := ast.LabelName(c.Label)
					if err != nil {
						continue
					}
					for _, n := range fields(c.Value) {
						if l, _, err := ast.LabelName(n.Label); err == nil && l == "nodeGroups" {
							groups(cname, n.Value)
						}
					}
				}
			}
		}
	}
	type key struct{ cluster, name string }
	at := map[key][]int{}
	for i, d := range defs {
		k := key{d.cluster, d.name}
		at[k] = append(at[k], i)
	}
	for i, d := range defs {
		var others []string
		for _, j := range at[key{d.cluster, d.name}] {
			if j != i {
				o := defs[j]
				others = append(others, fmt.Sprintf("%s:%d:%d", filepath.Base(o.pos.Filename()), o.pos.Line(), o.pos.Column()))
			}
		}
		if len(others) > 0 {
			path := diag.Path("nodeGroups", d.name)
			if d.cluster != "" {
				path = diag.Path("clusters", d.cluster, "nodeGroups", d.name)
			}
			list.Add(d.pos, path,
				"node group %q is also defined at %s; CUE would merge the definitions into one group: give each group one definition and a name of its own",
				d.name, strings.Join(others, ", "))
		}
	}
}

// fields returns the fields of a struct literal (none for another value).
func fields(v ast.Expr) []*ast.Field {
	s, ok := v.(*ast.StructLit)
	if !ok {
		return nil
	}
	var out []*ast.Field
	for _, e := range s.Elts {
		if f, ok := e.(*ast.Field); ok {
			out = append(out, f)
		}
	}
	return out
}
