package secrets

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/layout"
)

// inSource is where a secret in the source must not be.
const inSource = "in the source"

// Positioner finds where a value, or the key of a field, was written.
type Positioner interface {
	Pos(sels ...cue.Selector) token.Pos
	KeyPos(sels ...cue.Selector) token.Pos
}

// Source reports every secret of a source: in what the user wrote
// (strings, labels and comments of files, found at the secret itself) and
// in the values CUE resolved from it (every string and field name of
// value, so that a secret assembled by concatenation or interpolation is
// found too, at the field that holds it). A secret already reported at a
// path from the text is not reported again there from the value. Paths
// and messages never hold a secret. value may be the zero Value (a source
// that did not evaluate).
func Source(files []*ast.File, value cue.Value, pos Positioner) diag.List {
	list := Syntax(files)
	seen := map[string]bool{}
	for _, f := range list {
		seen[f.Path+"\x00"+f.Msg] = true
	}
	for _, f := range Values(value, pos) {
		if !seen[f.Path+"\x00"+f.Msg] {
			list = append(list, f)
		}
	}
	return list.Sorted()
}

// Syntax reports every string literal, label and comment of files that
// holds a secret, at the position of the secret itself.
func Syntax(files []*ast.File) diag.List {
	var list diag.List
	for _, f := range files {
		scanSyntax(f, &list)
	}
	return list.Sorted()
}

func scanSyntax(f *ast.File, list *diag.List) {
	var path []string
	pushed := map[ast.Node]bool{}
	index := map[ast.Node]int{}
	report := func(pos token.Pos, raw, value string) {
		if found := Find(raw); len(found) > 0 {
			for _, s := range found {
				list.Add(pos.Add(s.Start), Redact(strings.Join(path, ".")), "%s", s.Describe(inSource))
			}
		} else {
			for _, s := range Find(value) {
				list.Add(pos, Redact(strings.Join(path, ".")), "%s", s.Describe(inSource))
			}
		}
	}
	ast.Walk(f, func(n ast.Node) bool {
		if i, ok := index[n]; ok {
			path = append(path, strconv.Itoa(i))
			pushed[n] = true
		}
		switch n := n.(type) {
		case *ast.Field:
			path = append(path, labelString(n.Label))
			pushed[n] = true
		case *ast.ListLit:
			for i, e := range n.Elts {
				index[e] = i
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				value, err := literal.Unquote(n.Value)
				if err != nil {
					value = n.Value
				}
				report(n.ValuePos, n.Value, value)
			}
		case *ast.Comment:
			report(n.Slash, n.Text, n.Text)
		}
		return true
	}, func(n ast.Node) {
		if pushed[n] {
			path = path[:len(path)-1]
		}
	})
}

// labelString writes a field label as findings write paths.
func labelString(l ast.Label) string {
	name, isIdent, err := ast.LabelName(l)
	switch {
	case err != nil:
		return "[_]"
	case isIdent:
		return name
	}
	return diag.Path(name)
}

// kindOf is the kind of v's default (of v when it has none).
func kindOf(v cue.Value) cue.Kind {
	d, _ := v.Default()
	return d.Kind()
}

// Values reports every secret in the strings and field names of v, a
// resolved value, at the position pos gives for the field.
func Values(v cue.Value, pos Positioner) diag.List {
	var list diag.List
	var parts joined
	var walk, walkFields func(v cue.Value, path []cue.Selector)
	walk = func(v cue.Value, path []cue.Selector) {
		// By what the value holds, not by its kind: a struct with an
		// error in one of its fields is of kind bottom, and its other
		// fields must be scanned all the same. A value of a concrete
		// kind goes straight to its case (asking a struct for a string
		// or a list builds an error each time); String, List and Fields
		// all read the default, so the kind is the default's.
		switch kindOf(v) {
		case cue.StructKind:
			walkFields(v, path)
			return
		case cue.NullKind, cue.BoolKind, cue.IntKind, cue.FloatKind, cue.BytesKind:
			return
		}
		if s, err := v.String(); err == nil {
			parts.add(path, s)
			for _, found := range Find(s) {
				list.Add(pos.Pos(path...), Redact(pathString(path)), "%s", found.Describe(inSource))
			}
			return
		}
		if iter, err := v.List(); err == nil {
			for i := 0; iter.Next(); i++ {
				walk(iter.Value(), append(slices.Clip(path), cue.Index(i)))
			}
			return
		}
		walkFields(v, path)
	}
	walkFields = func(v cue.Value, path []cue.Selector) {
		iter, err := v.Fields()
		if err != nil {
			return
		}
		for iter.Next() {
			sel := iter.Selector()
			p := append(slices.Clip(path), sel)
			fv := iter.Value()
			if sel.LabelType() != cue.StringLabel {
				walk(fv, p)
				continue
			}
			label := sel.Unquoted()
			for _, s := range Find(label) {
				list.Add(pos.KeyPos(p...), Redact(pathString(p)), "%s", s.Describe(inSource))
			}
			if k := kindOf(fv); k != cue.StringKind && k != cue.BottomKind {
				walk(fv, p)
				continue
			}
			value, err := fv.String()
			if err != nil {
				walk(fv, p)
				continue
			}
			parts.add(p, value)
			found := Find(value)
			for _, s := range found {
				list.Add(pos.Pos(p...), Redact(pathString(p)), "%s", s.Describe(inSource))
			}
			for _, s := range inField(label, value, found) {
				list.Add(pos.Pos(p...), Redact(pathString(p)), "%s", s.Describe(inSource))
			}
		}
	}
	if v.Exists() {
		walk(v, nil)
	}
	parts.scan(&list, pos)
	return list.Sorted()
}

// joined collects the string values of each part of a source (a node
// group, the cluster) in the order CUE gives them, so that a secret split
// across several values ("abcdef." in one label, the rest in the next) is
// found in their concatenation.
type joined struct {
	order []string
	parts map[string][]part
}

type part struct {
	path  []cue.Selector
	value string
}

// owner is the part of the source a value at path belongs to: the node
// group (nodeGroups.<name>, also inside a fleet's cluster), else the first
// two labels (cluster.<field>, or a fleet's clusters.<name>).
func owner(path []cue.Selector) string {
	for i := len(path) - 2; i >= 0; i-- {
		if path[i].LabelType() == cue.StringLabel && path[i].Unquoted() == "nodeGroups" {
			return pathString(path[:i+2])
		}
	}
	return pathString(path[:min(2, len(path))])
}

func (j *joined) add(path []cue.Selector, value string) {
	if value == "" {
		return
	}
	if j.parts == nil {
		j.parts = map[string][]part{}
	}
	k := owner(path)
	if _, ok := j.parts[k]; !ok {
		j.order = append(j.order, k)
	}
	j.parts[k] = append(j.parts[k], part{slices.Clip(path), value})
}

// aloneHolds says whether one of ps alone holds a secret of class: then
// the joined finding is that secret running on into the next values.
func aloneHolds(ps []part, class string) bool {
	for _, p := range ps {
		for _, s := range Find(p.value) {
			if s.Class == class {
				return true
			}
		}
	}
	return false
}

// scan reports each secret of a part's concatenated values that spans two
// or more of them (one value alone is scanned where it is read), at the
// first value that holds a piece of it.
func (j *joined) scan(list *diag.List, pos Positioner) {
	for _, k := range j.order {
		ps := j.parts[k]
		if len(ps) < 2 {
			continue
		}
		var b strings.Builder
		starts := make([]int, len(ps))
		for i, p := range ps {
			starts[i] = b.Len()
			b.WriteString(p.value)
		}
		text := b.String()
		at := func(off int) int { // the part holding byte off
			i, _ := slices.BinarySearch(starts, off+1)
			return i - 1
		}
		for _, s := range Find(text) {
			first, last := at(s.Start), at(s.End-1)
			if first == last || aloneHolds(ps[first:last+1], s.Class) {
				continue // reported where the value is read
			}
			var paths []string
			for _, p := range ps[first : last+1] {
				paths = append(paths, Redact(pathString(p.path)))
			}
			list.Add(pos.Pos(ps[first].path...), Redact(pathString(ps[first].path)), "%s; it is split across the values of %s",
				s.Describe(inSource), strings.Join(paths, ", "))
		}
	}
}

// inField finds the secrets that only a field name and its value
// together show (private_key_id: "<40 hex digits>", type:
// "service_account"), not those in either alone.
func inField(label, value string, inValue []Secret) []Secret {
	if !strings.Contains(label, "private_key_id") && !strings.Contains(label, "type") {
		return nil // the only patterns that need the field name
	}
	alone := map[string]bool{}
	for _, s := range append(Find(label), inValue...) {
		alone[s.Class] = true
	}
	var out []Secret
	for _, s := range Find(strconv.Quote(label) + ": " + strconv.Quote(value)) {
		if !alone[s.Class] {
			out = append(out, s)
		}
	}
	return out
}

func pathString(path []cue.Selector) string {
	labels := make([]string, len(path))
	for i, s := range path {
		labels[i] = s.String()
	}
	return strings.Join(labels, ".")
}

// Artifacts reports every secret in the rendered files: the last gate
// before anything is written, for what the source scan cannot see (a
// secret nodegen itself would assemble from harmless parts). The path of
// a finding is the file and line.
func Artifacts(files layout.Files) diag.List {
	var list diag.List
	for _, p := range files.Paths() {
		text := string(files[p])
		for _, s := range Find(text) {
			line := 1 + strings.Count(text[:s.Start], "\n")
			list.Add(token.NoPos, fmt.Sprintf("%s:%d", p, line), "%s", s.Describe("in a generated artifact")+
				"; nothing was written: find the values of the source it is made of (nodegen export shows them)")
		}
	}
	return list.Sorted()
}

// RedactList returns list with every secret in its paths and messages
// replaced by its fingerprint: the gate every printed finding passes.
func RedactList(list diag.List) diag.List {
	out := make(diag.List, len(list))
	for i, f := range list {
		f.Path, f.Msg = Redact(f.Path), Redact(f.Msg)
		out[i] = f
	}
	return out
}
