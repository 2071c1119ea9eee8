package source

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/schema"
)

// hiddenLabel is a hidden field's label as CUE's error paths print it.
var hiddenLabel = regexp.MustCompile(`^_[A-Za-z0-9_$]+$`)

// cueErr is one CUE error, taken apart.
type cueErr struct {
	path      []string  // labels, without the schema's #Source
	pos       token.Pos // where the user wrote the offending value, if known
	schemaPos token.Pos // the schema position involved, if any
	format    string
	args      []any
}

func (e cueErr) msg() string { return fmt.Sprintf(e.format, e.args...) }

// CUE's message formats that addErr rewrites.
const (
	fmtDisjunction = "%d errors in empty disjunction:"
	fmtConflict    = "conflicting values %s and %s"
	fmtIncomplete  = "incomplete value %v"
	fmtNotAllowed  = "field not allowed"
	fmtUnresolved  = "unresolved disjunction %v (type %s)"
	fmtMismatch    = "conflicting values %s and %s (mismatched types %s and %s)"
	fmtBound       = "invalid value %v (out of bound %s)"
)

// addErr turns CUE errors into findings. Errors about one value are
// merged into one finding: the alternatives of a disjunction become "X is
// not one of A, B or C", with a suggestion when one is a slip away.
func (l *Loaded) addErr(err error) {
	var errs []cueErr
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		path := e.Path()
		if len(path) > 0 && (path[0] == "#Source" || path[0] == "#Fleet") {
			path = path[1:]
		}
		ce := cueErr{path: path, format: format, args: args}
		ce.pos, ce.schemaPos = pickPos(e)
		if hint := hashCommentHint(ce.pos); hint != "" {
			ce.format, ce.args = format+"%s", append(slices.Clone(args), hint)
		} else if hint := unquotedLabelHint(ce.pos, fmt.Sprintf(format, args...)); hint != "" {
			ce.format, ce.args = format+"%s", append(slices.Clone(args), hint)
		}
		errs = append(errs, ce)
	}
	if len(errs) == 0 {
		l.Findings = append(l.Findings, diag.Finding{Msg: err.Error()})
		return
	}

	// Group the errors by path and position, keeping their order.
	type key struct {
		path string
		pos  token.Pos
	}
	var order []key
	groups := map[key][]cueErr{}
	for _, e := range errs {
		k := key{strings.Join(e.path, "\x00"), e.pos}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	// A disjunction's summary comes without a position; its parts have one.
	hasParts := map[string]bool{}
	for _, k := range order {
		for _, e := range groups[k] {
			if e.format != fmtDisjunction {
				hasParts[k.path] = true
			}
		}
	}
	for _, k := range order {
		var g []cueErr
		for _, e := range groups[k] {
			if e.format == fmtDisjunction && hasParts[k.path] {
				continue
			}
			g = append(g, e)
		}
		for _, e := range merge(g) {
			l.addFinding(e)
		}
	}
}

// merge reduces the errors CUE reports about one value to the ones a
// person needs: the alternatives of a disjunction as one error, and no
// complaint about a default when the value breaks a real constraint.
func merge(g []cueErr) []cueErr {
	if len(g) <= 1 {
		return g
	}
	var conflicts, others []cueErr
	for _, e := range g {
		if strings.HasPrefix(e.format, fmtConflict) && len(e.args) >= 2 {
			conflicts = append(conflicts, e)
		} else {
			others = append(others, e)
		}
	}
	// The value common to every conflict is the user's; the others are the
	// schema's alternatives.
	value := ""
	if len(conflicts) > 0 {
		a, b := fmt.Sprint(conflicts[0].args[0]), fmt.Sprint(conflicts[0].args[1])
		for _, c := range []string{a, b} {
			common := true
			for _, e := range conflicts[1:] {
				if fmt.Sprint(e.args[0]) != c && fmt.Sprint(e.args[1]) != c {
					common = false
				}
			}
			if common {
				value = c
				break
			}
		}
	}
	alt := func(e cueErr) string {
		if a := fmt.Sprint(e.args[0]); a != value {
			return a
		}
		return fmt.Sprint(e.args[1])
	}
	var general []cueErr // conflicts with a type or bound, not a literal
	for _, e := range conflicts {
		if !isLiteral(alt(e)) {
			general = append(general, e)
		}
	}
	switch {
	case len(others) > 0 || len(general) > 0:
		// A literal alternative is a default ("*100 | int & >=10"): the
		// real constraint says more.
		return append(others, general...)
	case value == "":
		return g
	}
	slices.SortStableFunc(conflicts, func(a, b cueErr) int { return a.schemaPos.Compare(b.schemaPos) })
	var alts []string
	for _, e := range conflicts {
		if a := alt(e); !slices.Contains(alts, a) {
			alts = append(alts, a)
		}
	}
	msg := fmt.Sprintf("%s is not one of %s", value, orList(alts))
	if s, ok := suggestQuoted(value, alts); ok {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	e := conflicts[0]
	e.format, e.args = "%s", []any{msg}
	return []cueErr{e}
}

// suggestQuoted suggests the string alternative one slip away from value.
func suggestQuoted(value string, alts []string) (string, bool) {
	v, err := strconv.Unquote(value)
	if err != nil {
		return "", false
	}
	var cands []string
	for _, a := range alts {
		if s, err := strconv.Unquote(a); err == nil {
			cands = append(cands, s)
		}
	}
	if s := diag.Suggest(v, cands); s != "" {
		return strconv.Quote(s), true
	}
	return "", false
}

// isLiteral reports whether a formatted CUE value is a concrete scalar.
func isLiteral(s string) bool {
	if strings.HasPrefix(s, `"`) || s == "true" || s == "false" || s == "null" {
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func orList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// addFinding records one CUE error as a finding, placing and wording it
// for the person who wrote the source.
func (l *Loaded) addFinding(e cueErr) {
	sels := selectors(e.path, l.pkg)
	msg := e.msg()
	pos := e.pos
	if e.format == fmtUnresolved && len(e.args) > 0 {
		// A struct whose fields depend on a discriminator the user did not
		// write (a node group without kind): that field is what is missing.
		// (Validating a fleet's cluster places the error at the struct.)
		name := l.missingField(sels, fmt.Sprint(e.args[0]))
		if name == "" && l.kindMissing(sels) {
			name = "kind"
		}
		if name != "" {
			e.path = append(e.path[:len(e.path):len(e.path)], name)
			sels = append(sels, cue.Str(name))
			e.format = fmtIncomplete
			pos = token.NoPos
		}
	}
	if n := l.undeclared(sels); e.format == fmtNotAllowed && n < len(sels)-1 {
		// Reported at a value inside the field the schema does not
		// declare: the finding is about that field, at its key.
		sels, e.path, pos = sels[:n+1], e.path[:n+1], token.NoPos
	}
	switch {
	case e.format == fmtMismatch && len(e.args) == 4:
		// Say what type the schema wants, without printing its constraint.
		if u := l.user.LookupPath(cue.MakePath(sels...)); u.Exists() {
			got := u.Kind().String()
			want := fmt.Sprint(e.args[2])
			if want == got {
				want = fmt.Sprint(e.args[3])
			}
			if want != got {
				msg = fmt.Sprintf("want %s %s, not %s %s", article(want), want, article(got), got)
				if k := u.Kind(); k != cue.StructKind && k != cue.ListKind {
					shown := fmt.Sprint(u)
					if s, err := u.String(); err == nil {
						// One line, whatever the string holds.
						shown = strconv.Quote(s)
					}
					msg = fmt.Sprintf("want %s %s, not %s %s (%s)", article(want), want, article(got), got, shown)
				}
			}
		}
	case e.format == fmtBound && isClusterName(e.path) && !l.user.LookupPath(cue.MakePath(sels...)).Exists():
		// The name comes from the key in clusters: report the key.
		e.path = e.path[:2]
		msg = fmt.Sprintf("invalid cluster name %v: it must be a lower-case RFC 1035 label (a-z, 0-9 and '-', starting with a letter), since it prefixes GCE names", e.args[0])
		pos = l.KeyPos(sels[:2]...)
	case e.format == fmtBound && isGroupName(e.path) && !l.user.LookupPath(cue.MakePath(sels...)).Exists():
		// The name comes from the key: report the key.
		n := len(e.path)
		e.path = e.path[:n-1]
		msg = fmt.Sprintf("invalid node group name %v: it must be a lower-case RFC 1035 label (a-z, 0-9 and '-', starting with a letter), since it becomes part of GCE names", e.args[0])
		pos = l.KeyPos(sels[:n-1]...)
	case e.format == fmtBound && len(e.args) == 2 && strings.HasPrefix(fmt.Sprint(e.args[1]), "=~"):
		// A pattern says little to a person: say what the field is
		// instead (its description gives the form, with an example).
		field := sels
		if n := len(field); n > 0 && field[n-1].Type() == cue.IndexLabel {
			field = field[:n-1]
		}
		if doc := l.doc(field); doc != "" {
			msg = fmt.Sprintf("invalid value %v; expected: %s", e.args[0], doc)
		}
	case isGroupName(e.path) && e.pos.IsValid():
		msg = fmt.Sprintf("a node group's name is its key in nodeGroups (%s); remove this field", e.path[len(e.path)-2])
	case e.format == fmtIncomplete && isClusterName(e.path) && !validName.MatchString(e.path[1]) &&
		!l.user.LookupPath(cue.MakePath(sels...)).Exists():
		// The name defaults to the key in clusters, which is not a name.
		e.path = e.path[:2]
		msg = fmt.Sprintf("invalid cluster name %q: it must be a lower-case RFC 1035 label (a-z, 0-9 and '-', starting with a letter), since it prefixes GCE names", label(sels[1]))
		pos = l.KeyPos(sels[:2]...)
	case e.format == fmtIncomplete && !pos.IsValid() && l.user.Exists():
		// A field the user did not write: report the outermost missing
		// field once, at its parent, with the schema's description.
		n := len(sels)
		for n > 1 && !l.user.LookupPath(cue.MakePath(sels[:n-1]...)).Exists() {
			n--
		}
		sels = sels[:n]
		e.path = e.path[:n]
		msg = "required field is missing"
		if doc := l.doc(sels); doc != "" {
			msg += " (" + doc + ")"
		}
		if n > 1 {
			pos = l.KeyPos(sels[:n-1]...)
		}
	case e.format == fmtNotAllowed && len(sels) > 0 && l.kindMissing(sels[:len(sels)-1]) &&
		l.schemaAt(sels[:len(sels)-1]).Allows(sels[len(sels)-1]):
		// A field of a kind the user did not name: the kind is missing.
		parent := sels[:len(sels)-1]
		e.path = append(e.path[:len(parent):len(parent)], "kind")
		msg = "required field is missing"
		if doc := l.doc(append(parent[:len(parent):len(parent)], cue.Str("kind"))); doc != "" {
			msg += " (" + doc + ")"
		}
		pos = l.KeyPos(parent...)
	case e.format == fmtNotAllowed:
		if len(sels) > 0 {
			msg = l.notAllowed(sels[:len(sels)-1], sels[len(sels)-1])
		}
		if !pos.IsValid() {
			pos = l.KeyPos(sels...)
		}
	}
	if !pos.IsValid() && l.user.Exists() && len(sels) > 1 {
		pos = l.Pos(sels...)
	}
	f := diag.Finding{Pos: pos, Path: diag.Path(e.path...), Msg: msg}
	for _, g := range l.Findings {
		if g.Path == f.Path && g.Msg == f.Msg {
			return
		}
	}
	l.Findings = append(l.Findings, f)
}

// missingField returns the field under path that the user did not write
// and whose schema value is the unresolved disjunction want.
func (l *Loaded) missingField(path []cue.Selector, want string) string {
	s := l.schemaAt(path)
	for _, name := range fieldNames(s) {
		p := append(path[:len(path):len(path)], cue.Str(name))
		if l.user.LookupPath(cue.MakePath(p...)).Exists() {
			continue
		}
		if fmt.Sprint(s.LookupPath(cue.MakePath(cue.Str(name)))) == want {
			return name
		}
	}
	return ""
}

func article(kind string) string {
	if strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an"
	}
	return "a"
}

// pickPos returns the position in the user's files that an error is
// about, and the first schema position it mentions.
func pickPos(e cueerrors.Error) (user, sch token.Pos) {
	var all []token.Pos
	if p := e.Position(); p.IsValid() {
		all = append(all, p)
	}
	all = append(all, e.InputPositions()...)
	for _, p := range all {
		switch {
		case !p.IsValid():
		case p.Filename() == schema.Filename:
			if !sch.IsValid() {
				sch = p
			}
		case !user.IsValid():
			user = p
		}
	}
	return user, sch
}

// selectors turns error path labels back into selectors; a hidden field's
// (_name) is pkg's, the package of the user's files.
func selectors(path []string, pkg string) []cue.Selector {
	var out []cue.Selector
	for _, p := range path {
		if hiddenLabel.MatchString(p) && pkg != "" {
			out = append(out, cue.Hid(p, pkg))
			continue
		}
		s := cue.ParsePath(p).Selectors()
		if len(s) == 1 {
			out = append(out, s[0])
		} else {
			out = append(out, cue.Str(p))
		}
	}
	return out
}
