package source

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// implicitPackage is the package the files of a source without package
// clauses are loaded as. CUE scopes a file without a package clause to
// itself, so that a definition (#GPU) or a hidden field (_gpu) written in
// one file would be unknown in the others; in one package they are shared,
// which is what a source split into files means.
const implicitPackage = "nodegen_source"

// onePackage wraps a parse hook so that every file without a package
// clause is parsed into implicitPackage. Sources whose files have a
// package clause keep it (packageClauses checked they agree).
func onePackage(parse func(string, any, parser.Config) (*ast.File, error)) func(string, any, parser.Config) (*ast.File, error) {
	return func(name string, src any, cfg parser.Config) (*ast.File, error) {
		f, err := parse(name, src, cfg)
		if err != nil || f.PackageName() != "" {
			return f, err
		}
		pkg := &ast.Package{Name: ast.NewIdent(implicitPackage)}
		// After the leading attributes and comments, like a written clause.
		i := 0
		for i < len(f.Decls) {
			if _, ok := f.Decls[i].(*ast.Attribute); !ok {
				break
			}
			i++
		}
		f.Decls = slices.Insert(f.Decls, i, ast.Decl(pkg))
		return f, nil
	}
}

// fleetForm reports whether the user wrote the fleet form (a top-level
// clusters field).
func (l *Loaded) fleetForm() bool {
	return l.user.Exists() && l.user.LookupPath(cue.MakePath(cue.Str("clusters"))).Exists()
}

// formFindings reports a source that mixes the one-cluster and the fleet
// form, and a mesh in a one-cluster source. It returns true when the
// source cannot be evaluated as either form.
func (l *Loaded) formFindings() bool {
	top := func(name string) bool { return l.user.LookupPath(cue.MakePath(cue.Str(name))).Exists() }
	if l.fleetForm() {
		mixed := false
		for _, name := range []string{"cluster", "nodeGroups"} {
			if top(name) {
				l.Findings = append(l.Findings, diag.Finding{
					Pos:  l.KeyPos(cue.Str(name)),
					Path: name,
					Msg:  fmt.Sprintf("a source is either one cluster (top-level cluster and nodeGroups) or a fleet (top-level clusters), not both: move %s under clusters.<name>", name),
				})
				mixed = true
			}
		}
		return mixed
	}
	if top("mesh") {
		l.Findings = append(l.Findings, diag.Finding{
			Pos:  l.KeyPos(cue.Str("mesh")),
			Path: "mesh",
			Msg:  "a mesh joins the clusters of a fleet, and this source is one cluster: write the source as a fleet (clusters: <name>: {cluster: ..., nodeGroups: ...}) to add a mesh",
		})
	}
	// The mesh is checked against the schema all the same, so that every
	// mistake in it is reported at once.
	return false
}

// decodeFleet decodes every cluster of a fleet on its own, then the mesh.
func (l *Loaded) decodeFleet() {
	l.Fleet = &model.Fleet{}
	l.Broken.Clusters = map[string]bool{}
	clusters := cue.MakePath(cue.Str("clusters"))
	iter, err := l.user.LookupPath(clusters).Fields()
	if err != nil {
		l.Findings = append(l.Findings, diag.Finding{Pos: l.Pos(cue.Str("clusters")), Path: "clusters", Msg: "want a struct of clusters by name"})
		l.Broken.All = true
		return
	}
	for iter.Next() {
		key := iter.Selector().Unquoted()
		p := cue.MakePath(cue.Str("clusters"), cue.Str(key))
		m := &Member{
			Source: l.newSource(layout.ClusterDir(false, key)),
			Prefix: diag.Path("clusters", key),
			Key:    key,
			value:  l.Value.LookupPath(p),
			user:   l.user.LookupPath(p),
			root:   l,
		}
		if !l.under(m.Prefix) {
			// CUE's validation of the whole fleet does not always report
			// a field missing inside a cluster; the cluster's own does.
			if err := m.value.Validate(cue.Concrete(true), cue.Final()); err != nil {
				l.addErr(err)
			}
		}
		if slices.ContainsFunc(l.Findings, func(f diag.Finding) bool { return f.Path == m.Prefix }) {
			// The cluster itself is wrong (its key): nothing in it decodes.
			m.Broken.All = true
		} else {
			m.decode()
		}
		if m.Broken.All {
			l.Broken.Clusters[key] = true
			continue
		}
		if !m.Broken.Cluster {
			if name := m.Source.Cluster.Name; name != key {
				msg := fmt.Sprintf("cluster name %q differs from its key %q in clusters: a fleet's cluster is named by its key (cluster.name defaults to it); remove cluster.name or make it %q", name, key, key)
				if l.user.LookupPath(cue.MakePath(cue.Str("clusters"), cue.Str(name))).Exists() {
					msg = fmt.Sprintf("cluster name %q is the key of another cluster in clusters, and differs from this cluster's key %q: two clusters of a fleet cannot share a name; remove cluster.name or make it %q", name, key, key)
				}
				l.Findings = append(l.Findings, diag.Finding{Pos: m.Pos(cue.Str("cluster"), cue.Str("name")), Path: m.sub("cluster", "name"), Msg: msg})
				m.Broken.Cluster = true
			}
		}
		l.Members = append(l.Members, m)
	}
	slices.SortFunc(l.Members, func(a, b *Member) int { return strings.Compare(a.Key, b.Key) })
	for _, m := range l.Members {
		l.Fleet.Clusters = append(l.Fleet.Clusters, m.Source)
	}
	if !l.user.LookupPath(cue.MakePath(cue.Str("mesh"))).Exists() {
		return
	}
	if l.under("mesh") {
		l.Broken.Mesh = true
		return
	}
	mesh := &model.Mesh{}
	if err := decode(l.Value.LookupPath(cue.MakePath(cue.Str("mesh"))), mesh); err != nil {
		l.addDecodeErr(err)
		l.Broken.Mesh = true
		return
	}
	l.Fleet.Mesh = mesh
}

// Member returns the member for the cluster named name, or nil.
func (l *Loaded) Member(name string) *Member {
	for _, m := range l.Members {
		if m.Source.Cluster.Name == name || (m.Key != "" && m.Key == name) {
			return m
		}
	}
	return nil
}

// isGroupName reports whether path (labels, from the root of the source)
// is a node group's name field: nodeGroups.<g>.name, or the same below
// clusters.<c>.
func isGroupName(path []string) bool {
	path = memberRel(path)
	return len(path) == 3 && path[0] == "nodeGroups" && path[2] == "name"
}

// isClusterName reports whether path is clusters.<c>.cluster.name.
func isClusterName(path []string) bool {
	return len(path) == 4 && path[0] == "clusters" && path[2] == "cluster" && path[3] == "name"
}

// validName is the schema's #Name.
var validName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// memberRel strips the clusters.<c> prefix from a path in a fleet.
func memberRel(path []string) []string {
	if len(path) >= 2 && path[0] == "clusters" {
		return path[2:]
	}
	return path
}
