package source

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/diag"
)

// schemaAt returns the schema's value for path: the field the schema
// declares there, or the pattern constraint that applies to it ("[Name=_]:
// #NodeGroup", list elements). A node group's schema is resolved with the
// group's kind, so that fields declared only for cloud groups are known
// exactly when the group is one. It returns a value that does not exist
// when the schema has nothing at path.
func (l *Loaded) schemaAt(path []cue.Selector) cue.Value {
	s := l.schema
	for i := range path {
		if s = l.schemaStep(s, path[:i+1]); !s.Exists() {
			break
		}
	}
	return s
}

// schemaStep returns the schema of the last selector of path, given s, the
// schema of the path before it.
func (l *Loaded) schemaStep(s cue.Value, path []cue.Selector) cue.Value {
	next := lookupStep(s, path[len(path)-1])
	if !next.Exists() {
		return cue.Value{}
	}
	return l.withKind(next, path)
}

// lookupStep returns the schema s declares for sel (a field, a pattern's
// or a list's element), not resolved with a kind.
func lookupStep(s cue.Value, sel cue.Selector) cue.Value {
	var next cue.Value
	if !s.Exists() {
		// Most of cue.Value's methods panic on a value that is not there
		// (the zero cue.Value): nothing is declared below it.
		return cue.Value{}
	}
	switch sel.Type() {
	case cue.IndexLabel:
		next = s.LookupPath(cue.MakePath(cue.AnyIndex))
	default:
		if !s.Allows(sel) {
			return cue.Value{}
		}
		next = s.LookupPath(cue.MakePath(sel))
		if !next.Exists() {
			next = s.LookupPath(cue.MakePath(sel.Optional()))
		}
		if !next.Exists() {
			next = s.LookupPath(cue.MakePath(cue.AnyString))
		}
	}
	return next
}

// kindsDeclaring lists, for a struct with a kind discriminator at path (a
// node group), the kinds whose schema declares field, in the schema's
// order; nil when the struct has no kind.
func (l *Loaded) kindsDeclaring(path []cue.Selector, field string) []string {
	if len(path) == 0 {
		return nil
	}
	s := lookupStep(l.schemaAt(path[:len(path)-1]), path[len(path)-1])
	kp := cue.MakePath(cue.Str("kind"))
	op, alts := s.LookupPath(kp).Expr()
	if op != cue.OrOp {
		return nil
	}
	var kinds []string
	for _, alt := range alts {
		k, err := alt.String()
		if err != nil {
			continue
		}
		if slices.Contains(fieldNames(s.FillPath(kp, alt)), field) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// withKind resolves a schema struct that has a kind discriminator with the
// kind the user wrote at path. When the user wrote none, or one the schema
// does not accept, it resolves it with the kind that declares the most
// fields, so that no field the user may have meant is taken for unknown.
func (l *Loaded) withKind(s cue.Value, path []cue.Selector) cue.Value {
	kp := cue.MakePath(cue.Str("kind"))
	kv := s.LookupPath(kp)
	if !kv.Exists() || !l.user.Exists() {
		return s
	}
	kind := l.user.LookupPath(cue.MakePath(append(path[:len(path):len(path)], cue.Str("kind"))...))
	if _, err := kind.String(); err == nil {
		if r := s.FillPath(kp, kind); r.LookupPath(kp).Err() == nil {
			return r
		}
	}
	best, most := s, len(fieldNames(s))
	if op, alts := kv.Expr(); op == cue.OrOp {
		for _, alt := range alts {
			if _, err := alt.String(); err != nil {
				continue
			}
			r := s.FillPath(kp, alt)
			if n := len(fieldNames(r)); n > most {
				best, most = r, n
			}
		}
	}
	return best
}

// kindMissing reports whether the struct at path has a kind discriminator
// the user did not write.
func (l *Loaded) kindMissing(path []cue.Selector) bool {
	kind := cue.Str("kind")
	return l.user.Exists() && l.schemaAt(path).LookupPath(cue.MakePath(kind)).Exists() &&
		!l.user.LookupPath(cue.MakePath(append(path[:len(path):len(path)], kind)...)).Exists()
}

// fieldNames lists the fields a schema struct declares, optional ones
// included, in schema order; none when the schema has nothing there.
func fieldNames(s cue.Value) []string {
	var out []string
	if !s.Exists() {
		return nil
	}
	iter, err := s.Fields(cue.Optional(true))
	for err == nil && iter.Next() {
		out = append(out, iter.Selector().Unquoted())
	}
	return out
}

// notAllowed words the finding for a field the schema does not declare
// under parent: a suggestion when a known field is one slip away, the
// list of known fields otherwise.
func (l *Loaded) notAllowed(parent []cue.Selector, field cue.Selector) string {
	names := fieldNames(l.schemaAt(parent))
	if s := diag.SuggestNames(label(field), names); len(s) > 0 {
		return fmt.Sprintf("field not allowed; did you mean %s?", diag.OrList(s))
	}
	msg := "field not allowed"
	// A field of another kind of group: say whose it is.
	if kinds := l.kindsDeclaring(parent, label(field)); len(kinds) > 0 {
		if kind, err := l.user.LookupPath(cue.MakePath(append(parent[:len(parent):len(parent)], cue.Str("kind"))...)).String(); err == nil {
			msg = fmt.Sprintf("field not allowed: %s is a field of %s groups only, and this group is %s", label(field), orList(kinds), kind)
		}
	}
	if len(names) == 0 {
		return msg
	}
	return msg + "; known fields: " + strings.Join(names, ", ")
}

// label is a selector as a person wrote it: a field's name unquoted, a
// list index as its number (cue.Selector.Unquoted panics on an index).
func label(sel cue.Selector) string {
	if sel.LabelType() == cue.StringLabel {
		return sel.Unquoted()
	}
	return sel.String()
}

// undeclared returns the length of the longest prefix of path the schema
// declares: len(path) when the schema declares all of it, otherwise the
// index of the first selector it does not declare. CUE reports a field
// the schema does not declare with the path of a value inside it when
// other errors meet there ("zone: [...]" is reported at zone.0): the
// finding is about that field, and the schema has nothing below it to
// look up.
func (l *Loaded) undeclared(path []cue.Selector) int {
	s := l.schema
	for i := range path {
		if s = l.schemaStep(s, path[:i+1]); !s.Exists() {
			return i
		}
	}
	return len(path)
}

// addUnknownFields reports every field of the user's value that the
// schema does not declare. CUE reports such a field only when nothing else
// is wrong with the struct around it; this finds all of them at once.
func (l *Loaded) addUnknownFields() {
	reported := map[string]bool{}
	for _, f := range l.Findings {
		reported[f.Path] = true
	}
	var walk func(u, s cue.Value, path []cue.Selector)
	walk = func(u, s cue.Value, path []cue.Selector) {
		if !s.Exists() {
			return
		}
		switch u.IncompleteKind() {
		case cue.StructKind:
			iter, err := u.Fields()
			for err == nil && iter.Next() {
				p := append(path[:len(path):len(path)], iter.Selector())
				if !s.Allows(iter.Selector()) {
					if !reported[pathString(p)] {
						l.Findings = append(l.Findings, diag.Finding{
							Pos:  l.KeyPos(p...),
							Path: pathString(p),
							Msg:  l.notAllowed(path, iter.Selector()),
						})
					}
					continue
				}
				walk(iter.Value(), l.schemaStep(s, p), p)
			}
		case cue.ListKind:
			iter, err := u.List()
			for i := 0; err == nil && iter.Next(); i++ {
				p := append(path[:len(path):len(path)], cue.Index(i))
				walk(iter.Value(), l.schemaStep(s, p), p)
			}
		}
	}
	walk(l.user, l.schema, nil)
}

// doc returns the first sentence of the schema's comment on the field at
// path, on one line.
func (l *Loaded) doc(path []cue.Selector) string {
	s := l.schemaAt(path)
	if !s.Exists() {
		return ""
	}
	var text []string
	for _, cg := range s.Doc() {
		text = append(text, strings.Fields(cg.Text())...)
	}
	// The first sentence: up to a full stop followed by a capital letter
	// ("e.g. " does not end one).
	var b strings.Builder
	for i, w := range text {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		if strings.HasSuffix(w, ".") && i+1 < len(text) && unicode.IsUpper([]rune(text[i+1])[0]) {
			break
		}
	}
	return strings.TrimSuffix(b.String(), ".")
}

// pathString writes selectors the way findings name paths.
func pathString(path []cue.Selector) string {
	labels := make([]string, len(path))
	for i, s := range path {
		labels[i] = s.String()
	}
	return strings.Join(labels, ".")
}
