package source

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
)

// Member is one cluster of a source: the cluster of the one-cluster form,
// or one of a fleet's clusters. It is a Positioner for its cluster (paths
// relative to the cluster: cluster..., nodeGroups...).
type Member struct {
	// Source is the cluster's decoded and resolved model. When the source
	// has problems, it holds only what decoded: see Broken.
	Source *model.Source
	// Broken says which parts of the cluster did not decode because of
	// the source's findings; checks on the model must skip them.
	Broken Broken
	// Prefix is the member's path in the source (clusters."<name>"), ""
	// in the one-cluster form. Findings about the member carry it before
	// their path.
	Prefix string
	// Key is the member's key in clusters; "" in the one-cluster form.
	Key string

	// value is the member's part of the unified value, user of the user's
	// value alone (its positions point at what the user wrote).
	value, user cue.Value
	// root is the whole source the member is part of; its Findings are
	// the member's too.
	root *Loaded
	// released is set by Release; groupKeys are then the positions of the
	// node groups' names, by name.
	released  bool
	groupKeys map[string]token.Pos
}

// Broken lists the parts of a cluster that did not decode.
type Broken struct {
	// All is set when nothing of the cluster decoded: Source is empty.
	All bool
	// Cluster is set when the cluster field did not decode.
	Cluster bool
	// Groups are the node groups that did not decode.
	Groups map[string]bool
	// Partial holds, of the Groups, those that decode without the fields
	// the source's findings are about: the group's own checks run on them
	// too, so that one run reports every mistake of a group (checks
	// across groups skip them, as they skip every one of Groups).
	Partial map[string]*PartialGroup
}

// A PartialGroup is a node group decoded without the fields the source's
// findings are about, each left to the schema's default.
type PartialGroup struct {
	Group *model.NodeGroup
	// Refused are the paths (as findings name them) of the fields left
	// out: a finding about one of them, or about what is under it, is
	// about the default, not about what the user wrote.
	Refused []string
}

// Pos returns the position of the value at path (CUE selectors, relative
// to the member) in the user's files, walking up to the nearest ancestor
// the user wrote when the value itself comes from the schema (a default).
// After Release it knows no position (token.NoPos).
func (m *Member) Pos(sels ...cue.Selector) token.Pos { return valuePos(m.user, sels) }

// KeyPos returns the position of the label of the field at path, for
// findings about a key (a label key, a group name). After Release it
// knows only the node groups' names (nodeGroups.<name>).
func (m *Member) KeyPos(sels ...cue.Selector) token.Pos {
	if m.released {
		if len(sels) == 2 && sels[0].String() == "nodeGroups" && sels[1].LabelType() == cue.StringLabel {
			return m.groupKeys[sels[1].Unquoted()]
		}
		return token.NoPos
	}
	return labelPos(m.user, sels)
}

// PathPrefix returns Prefix: findings about a member name their path
// from the root of the source.
func (m *Member) PathPrefix() string { return m.Prefix }

// sub is the path of a finding about the field at labels of m.
func (m *Member) sub(labels ...string) string {
	p := diag.Path(labels...)
	if m.Prefix == "" {
		return p
	}
	return m.Prefix + "." + p
}

// decode fills m.Source: all of it when CUE found no problem in the
// source, otherwise the cluster and each node group that has no problem
// of its own. Problems decoding are findings of the root.
func (m *Member) decode() {
	src := m.Source
	root := m.root
	if len(root.Findings) == 0 {
		if err := decode(m.value, src); err != nil {
			root.addDecodeErr(err)
			m.Broken.All = true
			return
		}
	} else {
		m.Broken.Groups = map[string]bool{}
		if root.under(m.sub("cluster")) {
			m.Broken.Cluster = true
		} else if err := decode(m.value.LookupPath(cue.ParsePath("cluster")), &src.Cluster); err != nil {
			root.addDecodeErr(err)
			m.Broken.Cluster = true
		}
		iter, err := m.user.LookupPath(cue.ParsePath("nodeGroups")).Fields()
		for err == nil && iter.Next() {
			name := iter.Selector().Unquoted()
			p := cue.MakePath(cue.Str("nodeGroups"), cue.Str(name))
			g := &model.NodeGroup{}
			if root.under(m.sub("nodeGroups", name)) {
				m.Broken.Groups[name] = true
				if pg := m.partial(name); pg != nil {
					if m.Broken.Partial == nil {
						m.Broken.Partial = map[string]*PartialGroup{}
					}
					m.Broken.Partial[name] = pg
				}
				continue
			}
			if err := decode(m.value.LookupPath(p), g); err != nil {
				root.addDecodeErr(err)
				m.Broken.Groups[name] = true
				continue
			}
			src.NodeGroups[name] = g
		}
	}
	src.Resolve()
	m.origins()
}

// origins records in m.Source the file each node group and the cluster
// were written in.
func (m *Member) origins() {
	src := m.Source
	src.Origins = map[string]string{}
	for name := range src.NodeGroups {
		if p := m.Pos(cue.Str("nodeGroups"), cue.Str(name)); p.IsValid() {
			src.Origins[name] = src.Name + "/" + filepath.Base(p.Filename())
		}
	}
	if p := m.Pos(cue.Str("cluster")); p.IsValid() {
		src.ClusterOrigin = src.Name + "/" + filepath.Base(p.Filename())
	}
}

// partial decodes the node group name without the fields the source's
// findings are about, or returns nil when that leaves no complete group:
// a required field refused (or its kind, which decides its other
// fields), or a finding about the group as a whole.
func (m *Member) partial(name string) *PartialGroup {
	root := m.root
	group := m.sub("nodeGroups", name)
	u := m.user.LookupPath(cue.MakePath(cue.Str("nodeGroups"), cue.Str(name)))
	if !u.Exists() || u.IncompleteKind() != cue.StructKind {
		return nil
	}
	refused := map[string]bool{}
	for _, f := range root.Findings {
		rest, ok := strings.CutPrefix(f.Path, group+".")
		if !ok {
			if f.Path == group {
				return nil
			}
			continue
		}
		field := cue.ParsePath(rest).Selectors()
		if len(field) == 0 {
			return nil
		}
		refused[field[0].String()] = true
	}
	if refused["kind"] || refused["name"] {
		return nil
	}
	var sels []cue.Selector
	if m.Key != "" {
		sels = append(sels, cue.Str("clusters"), cue.Str(m.Key))
	}
	sels = append(sels, cue.Str("nodeGroups"), cue.Str(name))
	v := root.schemaAt(sels)
	if !v.Exists() {
		return nil
	}
	v = v.FillPath(cue.MakePath(cue.Str("name")), name)
	iter, err := u.Fields()
	for err == nil && iter.Next() {
		if refused[iter.Selector().String()] {
			continue
		}
		v = v.FillPath(cue.MakePath(iter.Selector()), iter.Value())
	}
	if err != nil || v.Validate(cue.Concrete(true), cue.Final()) != nil {
		return nil
	}
	g := &model.NodeGroup{}
	if decode(v, g) != nil {
		return nil
	}
	(&model.Source{NodeGroups: map[string]*model.NodeGroup{name: g}}).Resolve()
	pg := &PartialGroup{Group: g}
	for _, f := range slices.Sorted(maps.Keys(refused)) {
		pg.Refused = append(pg.Refused, group+"."+f)
	}
	return pg
}
