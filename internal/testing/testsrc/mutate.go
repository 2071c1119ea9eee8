package testsrc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// The mistakes Mutate makes to a field, each a slip a person makes in a
// source: the first byte of a mutation, modulo len(Mistakes).
const (
	// MistakeRename gives the field a near-miss name (a letter dropped or
	// added, another case, two letters swapped) or the name of another
	// field of the source.
	MistakeRename = iota
	// MistakeRetype gives the field a value of another type: a number
	// written as a string, a string as a number, a list, a struct, null,
	// a bool.
	MistakeRetype
	// MistakeDelete removes the field.
	MistakeDelete
	// MistakeSwap gives the field the value of another field of the
	// source.
	MistakeSwap
	// MistakeExtreme gives the field a number at or beyond a bound: 0,
	// -1, the largest int64, beyond 64 bits, a huge float.
	MistakeExtreme
	mistakes
)

// A Mutation is one mistake made to one field of a source: Mistake (one
// of the Mistake constants, modulo their number), Field (the index of the
// field among every field of the source, in file order and then in the
// order written, modulo their number) and Param (which variant of the
// mistake).
type Mutation struct {
	Mistake, Param uint8
	Field          uint16
}

// Mutations decodes a fuzz input into two or three mutations (the first
// byte chooses how many), four bytes each: mistake, field (two bytes, big
// endian), param. It returns nil when the input is too short.
func Mutations(b []byte) []Mutation {
	if len(b) < 1 {
		return nil
	}
	n := 2 + int(b[0])%2
	b = b[1:]
	if len(b) < 4*n {
		return nil
	}
	out := make([]Mutation, n)
	for i := range out {
		m := b[4*i:]
		out[i] = Mutation{Mistake: m[0], Field: uint16(m[1])<<8 | uint16(m[2]), Param: m[3]}
	}
	return out
}

// Encode is the inverse of Mutations, for seeds.
func Encode(ms ...Mutation) []byte {
	b := []byte{byte(len(ms) - 2)}
	for _, m := range ms {
		b = append(b, m.Mistake, byte(m.Field>>8), byte(m.Field), m.Param)
	}
	return b
}

// fieldRef is a field of a parsed source: the slice of declarations that
// holds it and its index there, and its path (labels joined by dots).
type fieldRef struct {
	decls *[]ast.Decl
	i     int
	path  string
}

func (r fieldRef) field() *ast.Field { return (*r.decls)[r.i].(*ast.Field) }

// parsedSource is the .cue files of a directory, parsed, by name.
type parsedSource struct {
	names []string
	files map[string]*ast.File
}

func parseDir(dir string) (*parsedSource, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ps := &parsedSource{files: map[string]*ast.File{}}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".cue") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(e.Name(), b, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		ps.names = append(ps.names, e.Name())
		ps.files[e.Name()] = f
	}
	slices.Sort(ps.names)
	return ps, nil
}

// fields lists every field of the source: in file order, then as written.
func (ps *parsedSource) fields() []fieldRef {
	var out []fieldRef
	var decls func(d *[]ast.Decl, prefix string)
	var expr func(e ast.Expr, prefix string)
	decls = func(d *[]ast.Decl, prefix string) {
		for i, x := range *d {
			switch x := x.(type) {
			case *ast.Field:
				name, _, err := ast.LabelName(x.Label)
				if err != nil {
					name = "?"
				}
				label := name
				if !ast.IsValidIdent(name) {
					label = literal.String.Quote(name)
				}
				p := strings.TrimPrefix(prefix+"."+label, ".")
				out = append(out, fieldRef{decls: d, i: i, path: p})
				expr(x.Value, p)
			case *ast.EmbedDecl:
				expr(x.Expr, prefix)
			}
		}
	}
	expr = func(e ast.Expr, prefix string) {
		switch e := e.(type) {
		case *ast.StructLit:
			decls(&e.Elts, prefix)
		case *ast.ListLit:
			for i, x := range e.Elts {
				expr(x, fmt.Sprintf("%s.%d", prefix, i))
			}
		case *ast.BinaryExpr:
			expr(e.X, prefix)
			expr(e.Y, prefix)
		case *ast.ParenExpr:
			expr(e.X, prefix)
		}
	}
	for _, n := range ps.names {
		decls(&ps.files[n].Decls, "")
	}
	return out
}

// Mutate copies the .cue files of src into dst (created) with the
// mutations made in turn, each to the fields as the mutations before it
// left them. It returns what it did, one line per mutation, for a failing
// test's message.
func Mutate(src, dst string, ms []Mutation) (string, error) {
	ps, err := parseDir(src)
	if err != nil {
		return "", err
	}
	var did []string
	for _, m := range ms {
		refs := ps.fields()
		if len(refs) == 0 {
			break
		}
		r := refs[int(m.Field)%len(refs)]
		other := refs[int(m.Param)%len(refs)]
		did = append(did, mutate(r, other, m))
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	for _, n := range ps.names {
		b, err := format.Node(ps.files[n])
		if err != nil {
			return "", fmt.Errorf("formatting %s after %s: %w", n, strings.Join(did, "; "), err)
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o644); err != nil {
			return "", err
		}
	}
	return strings.Join(did, "\n"), nil
}

// mutate makes m to the field r; other is the field m.Param picks, whose
// name or value some mistakes take.
func mutate(r, other fieldRef, m Mutation) string {
	f := r.field()
	p := int(m.Param)
	switch m.Mistake % mistakes {
	case MistakeRename:
		name, _, err := ast.LabelName(f.Label)
		if err != nil || name == "" {
			return "rename " + r.path + ": not a plain name, left"
		}
		var to string
		switch p % 5 {
		case 0:
			to = name[:len(name)-1]
		case 1:
			to = name + "s"
		case 2:
			rs := []rune(name)
			if unicode.IsUpper(rs[0]) {
				rs[0] = unicode.ToLower(rs[0])
			} else {
				rs[0] = unicode.ToUpper(rs[0])
			}
			to = string(rs)
		case 3:
			rs := []rune(name)
			if len(rs) > 2 {
				rs[1], rs[2] = rs[2], rs[1]
			}
			to = string(rs) + "x"
		default:
			to, _, _ = ast.LabelName(other.field().Label)
		}
		if to == "" {
			to = "x"
		}
		f.Label = ast.NewString(to)
		return fmt.Sprintf("rename %s to %q", r.path, to)
	case MistakeRetype:
		f.Value = retype(f.Value, p)
		return fmt.Sprintf("retype %s (%d)", r.path, p%6)
	case MistakeDelete:
		*r.decls = slices.Delete(*r.decls, r.i, r.i+1)
		return "delete " + r.path
	case MistakeSwap:
		b, err := format.Node(other.field().Value)
		if err != nil {
			return "swap " + r.path + ": left"
		}
		e, err := parser.ParseExpr("swap", b)
		if err != nil {
			return "swap " + r.path + ": left"
		}
		f.Value = e
		return fmt.Sprintf("give %s the value of %s", r.path, other.path)
	default:
		lit := []string{"0", "-1", "9223372036854775807", "99999999999999999999", "1e300", "4294967296"}[p%6]
		f.Value = &ast.BasicLit{Kind: token.INT, Value: lit}
		if strings.Contains(lit, "e") {
			f.Value = &ast.BasicLit{Kind: token.FLOAT, Value: lit}
		}
		return fmt.Sprintf("set %s to %s", r.path, lit)
	}
}

// retype returns a value of another type than v: variant p picks which.
func retype(v ast.Expr, p int) ast.Expr {
	switch p % 6 {
	case 0:
		// A number as a string, a string as a number, anything else as
		// the string of its text.
		if lit, ok := v.(*ast.BasicLit); ok {
			switch lit.Kind {
			case token.INT, token.FLOAT:
				return ast.NewString(lit.Value)
			case token.STRING:
				if s, err := literal.Unquote(lit.Value); err == nil {
					if _, err := strconv.ParseFloat(s, 64); err == nil {
						return &ast.BasicLit{Kind: token.INT, Value: s}
					}
				}
				return &ast.BasicLit{Kind: token.INT, Value: "1"}
			}
		}
		b, err := format.Node(v)
		if err != nil {
			return ast.NewString("x")
		}
		return ast.NewString(string(b))
	case 1:
		return ast.NewList(v)
	case 2:
		return ast.NewStruct("x", v)
	case 3:
		return ast.NewNull()
	case 4:
		return ast.NewBool(true)
	default:
		return ast.NewString("")
	}
}

// FieldIndex returns the index Mutate gives the field at path (labels
// joined by dots, as CUE quotes them) of the source in dir, for seeds.
func FieldIndex(dir, path string) (int, error) {
	ps, err := parseDir(dir)
	if err != nil {
		return 0, err
	}
	for i, r := range ps.fields() {
		if r.path == path {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s: no field %s", dir, path)
}
