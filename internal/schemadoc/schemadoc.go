// Package schemadoc reads the field reference of nodegen's source format
// (every field with its type, default and comment) out of the embedded
// CUE schema, so that a field is documented in one place: its comment in
// schema/nodegen.cue.
package schemadoc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/schema"
)

// Path segments that stand for a key chosen by the user or a list element.
const (
	GroupKey = "<name>"
	AnyKey   = "<key>"
	Elem     = "[]"
)

// Field is one field of the source format.
type Field struct {
	// Path is the field's path from the source root, with <name> for a
	// node group's key and [] for a list element: "nodeGroups.<name>.taints[].key".
	Path string
	// Type is the field's constraint as CUE writes it, without its default
	// ("int & >=10 & <=65536", "#Taint", "[...#Taint]").
	Type string
	// Default is the CUE text of the value the field takes when it is not
	// written; empty when it has none.
	Default string
	// Derived is set for a field nodegen fills in itself (a group's name).
	Derived string
	// Optional is set for a field declared with '?'.
	Optional bool
	// Required is set when the field (or a field below it) must be written.
	Required bool
	// Kinds lists the node-group kinds the field exists for, when it does
	// not exist for all of them.
	Kinds []string
	// Doc is the field's comment in the schema.
	Doc string
}

// Def is a named scalar type of the schema (#Name, #Duration).
type Def struct {
	Name, Type, Doc string
}

// Schema is the walked schema.
type Schema struct {
	Fields []Field
	Defs   []Def
	// GroupKinds are the node-group kinds in schema order.
	GroupKinds []string
}

// Field returns the field at path, or nil.
func (s *Schema) Field(path string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Path == path {
			return &s.Fields[i]
		}
	}
	return nil
}

// Load returns the embedded schema's description, read once per process
// (the schema is built into the binary): every cluster's docs and the
// docs command share it, and must not change it.
//
// The description is walked from the compiled schema when the code is
// generated (Walk, go generate: hack/schemadoc writes zz_walked.go, a
// composite literal the compiler lays out in the binary), not on every
// run: the source's evaluation is then the one compilation of the schema
// in a run, and reading the description decodes nothing. A description
// that was written for another schema is not used: Load then compiles
// and walks the schema itself, and TestWalkedCurrent fails until it is
// regenerated.
func Load() (*Schema, error) { return loaded() }

var loaded = sync.OnceValues(func() (*Schema, error) {
	if s, ok := embedded(); ok {
		return s, nil
	}
	return Walk()
})

//go:generate go run ../../hack/schemadoc -out zz_walked.go

// Walked is what go generate writes (the variable walked): the
// description and the digest of the schema it was walked from.
type Walked struct {
	// Schema is the SHA-256 of schema.Source, in hex.
	Schema string
	// Description is Walk's result.
	Description *Schema
}

// Digest is the SHA-256 of the embedded schema, in hex: Walked.Schema of
// a description of it.
func Digest() string {
	sum := sha256.Sum256(schema.Source)
	return hex.EncodeToString(sum[:])
}

// embedded returns the generated description when it was walked from the
// embedded schema.
func embedded() (*Schema, bool) {
	if walked.Schema != Digest() || walked.Description == nil {
		return nil, false
	}
	return walked.Description, true
}

// Walk compiles the embedded schema and walks it: what Load returns,
// computed (go generate stores it in zz_walked.go).
func Walk() (*Schema, error) { return load() }

// load compiles the embedded schema and walks #Source.
func load() (*Schema, error) {
	ctx := cuecontext.New()
	sch := ctx.CompileBytes(schema.Source, cue.Filename(schema.Filename))
	if err := sch.Err(); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s := &Schema{}
	root := sch.LookupPath(cue.MakePath(cue.Def("Source")))
	fields, err := walk(root, "")
	if err != nil {
		return nil, err
	}
	// A node group's fields depend on its kind (the cloud-only fields sit
	// in an `if kind != "onprem"` block): walk the group once per kind
	// and merge, remembering which kinds have each field.
	groups := root.LookupPath(cue.ParsePath("nodeGroups"))
	const probe = "probe"
	elem := groups.FillPath(cue.MakePath(cue.Str(probe)), map[string]any{}).LookupPath(cue.MakePath(cue.Str(probe)))
	s.GroupKinds, err = disjuncts(elem.LookupPath(cue.ParsePath("kind")))
	if err != nil {
		return nil, err
	}
	prefix := "nodeGroups." + GroupKey
	var merged []Field
	where := map[string][]string{}
	for _, k := range s.GroupKinds {
		fs, err := walk(elem.FillPath(cue.ParsePath("kind"), k), prefix)
		if err != nil {
			return nil, err
		}
		merged = mergeFields(merged, fs)
		for _, f := range fs {
			where[f.Path] = append(where[f.Path], k)
		}
	}
	for i := range merged {
		f := &merged[i]
		if len(where[f.Path]) < len(s.GroupKinds) {
			f.Kinds = where[f.Path]
		}
		switch f.Path {
		case prefix + ".kind":
			// Each walk fixed kind; describe the field as written.
			f.Type = typeString(elem.LookupPath(cue.ParsePath("kind")))
			f.Default = ""
			f.Required = true
		case prefix + ".name":
			f.Type = typeString(groups.LookupPath(cue.MakePath(cue.AnyString, cue.Str("name"))))
			if f.Default == strconv.Quote(probe) {
				f.Default, f.Derived = "", "the group's key in nodeGroups"
				f.Required = false
			}
		}
	}
	at := slices.IndexFunc(fields, func(f Field) bool { return f.Path == "nodeGroups" })
	if at < 0 {
		return nil, fmt.Errorf("schema: #Source has no nodeGroups")
	}
	fields[at].Type = "map of #NodeGroup"
	fields[at].Required = true
	s.Fields = slices.Insert(fields, at+1, merged...)

	// The fleet form: clusters, each holding a cluster and its node
	// groups as above (its mesh is #Source's).
	fleet := sch.LookupPath(cue.MakePath(cue.Def("Fleet"), cue.Str("clusters")))
	if !fleet.Exists() {
		return nil, fmt.Errorf("schema: #Fleet has no clusters")
	}
	s.Fields = append(s.Fields, Field{Path: "clusters", Optional: true, Doc: docOf(fleet),
		Type: "map of {cluster: #Cluster, nodeGroups: map of #NodeGroup}"})

	it, err := sch.Fields(cue.Definitions(true))
	if err != nil {
		return nil, err
	}
	for it.Next() {
		v := it.Value()
		if !it.Selector().IsDefinition() || v.IncompleteKind()&cue.StructKind != 0 || v.IncompleteKind() == cue.BottomKind {
			continue
		}
		s.Defs = append(s.Defs, Def{Name: it.Selector().String(), Type: typeString(v), Doc: docOf(v)})
	}
	return s, nil
}

// mergeFields adds the fields of next that base lacks, each after the
// field that precedes it in next.
func mergeFields(base, next []Field) []Field {
	has := map[string]bool{}
	for _, f := range base {
		has[f.Path] = true
	}
	prev := -1
	for _, f := range next {
		if i := slices.IndexFunc(base, func(b Field) bool { return b.Path == f.Path }); i >= 0 {
			prev = i
			continue
		}
		base = slices.Insert(base, prev+1, f)
		prev++
	}
	return base
}

// walk lists the fields of struct v and, depth first, of its structs,
// struct-valued maps and lists of structs. nodeGroups is listed but not
// entered: Load walks node groups per kind.
func walk(v cue.Value, prefix string) ([]Field, error) {
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", prefix, err)
	}
	var out []Field
	for it.Next() {
		sel := it.Selector()
		name := sel.Unquoted()
		if !ast.IsValidIdent(name) {
			name = strconv.Quote(name)
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		fv := it.Value()
		f := Field{Path: path, Optional: it.IsOptional(), Doc: docOf(fv), Type: typeString(fv)}
		if d, ok := fv.Default(); ok && d.IsConcrete() && d.Validate(cue.Concrete(true)) == nil && fv.IncompleteKind() != cue.StructKind {
			f.Default = cueText(d)
		} else if fv.IncompleteKind()&^cue.StructKind != 0 && fv.Validate(cue.Concrete(true)) == nil {
			f.Default = cueText(fv) // concrete without a default marker
		}
		var sub []Field
		switch {
		case path == "nodeGroups":
		case fv.IncompleteKind() == cue.StructKind:
			if hasRegularFields(fv) {
				sub, err = walk(fv, path)
			} else if e := fv.LookupPath(cue.MakePath(cue.AnyString)); e.Exists() {
				f.Type = "map of " + typeString(e)
				if e.IncompleteKind() == cue.StructKind {
					sub, err = walk(e, path+"."+AnyKey)
				}
			}
		case fv.IncompleteKind() == cue.ListKind:
			if e := fv.LookupPath(cue.MakePath(cue.AnyIndex)); e.Exists() && e.IncompleteKind() == cue.StructKind {
				sub, err = walk(e, path+Elem)
			}
		}
		if err != nil {
			return nil, err
		}
		switch {
		case f.Optional || f.Default != "":
		case fv.IncompleteKind() == cue.StructKind:
			f.Required = slices.ContainsFunc(sub, func(s Field) bool {
				return s.Required && strings.Count(s.Path, ".") == strings.Count(path, ".")+1
			})
		default:
			f.Required = true
		}
		// A field whose need the schema cannot express (vet's rules
		// require it) says so with @nodegen(required).
		if a := fv.Attribute("nodegen"); a.Err() == nil {
			if ok, err := a.Flag(0, "required"); err == nil && ok {
				f.Required = true
			}
		}
		out = append(out, f)
		out = append(out, sub...)
	}
	return out, nil
}

func hasRegularFields(v cue.Value) bool {
	it, err := v.Fields(cue.Optional(true))
	return err == nil && it.Next()
}

func docOf(v cue.Value) string {
	var parts []string
	for _, cg := range v.Doc() {
		if t := strings.TrimSpace(cg.Text()); t != "" {
			parts = append(parts, strings.Join(strings.Fields(t), " "))
		}
	}
	return strings.Join(parts, " ")
}

func cueText(v cue.Value) string {
	b, err := format.Node(v.Syntax(cue.Final(), cue.Concrete(true)))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// typeString writes v's constraint as CUE text without default markers
// ("*100 | int & >=10" becomes "int & >=10"). A definition reference
// stays a reference; a constraint that spans lines is named by its kind.
func typeString(v cue.Value) string {
	if _, path := v.ReferencePath(); len(path.Selectors()) > 0 && v.IncompleteKind() == cue.StructKind {
		return path.String()
	}
	expr, ok := v.Syntax(cue.Raw()).(ast.Expr)
	if !ok {
		return v.IncompleteKind().String()
	}
	b, err := format.Node(stripDefaults(expr))
	if err != nil || strings.Contains(string(b), "\n") {
		if v.IncompleteKind() == cue.StructKind {
			return "struct"
		}
		return v.IncompleteKind().String()
	}
	return string(b)
}

// stripDefaults removes the default markers of a disjunction. A default
// that another alternative already allows is dropped ("*100 | int" is
// "int"); in an enumeration of literals it stays, unmarked.
func stripDefaults(e ast.Expr) ast.Expr {
	var alts, defaults []ast.Expr
	var collect func(ast.Expr)
	collect = func(x ast.Expr) {
		if b, ok := x.(*ast.BinaryExpr); ok && b.Op == token.OR {
			collect(b.X)
			collect(b.Y)
			return
		}
		if u, ok := x.(*ast.UnaryExpr); ok && u.Op == token.MUL {
			defaults = append(defaults, u.X)
			alts = append(alts, u.X)
			return
		}
		alts = append(alts, x)
	}
	collect(e)
	enum := true
	for _, a := range alts {
		if _, ok := a.(*ast.BasicLit); !ok {
			enum = false
		}
	}
	if !enum {
		alts = slices.DeleteFunc(alts, func(a ast.Expr) bool { return slices.Contains(defaults, a) })
	}
	switch len(alts) {
	case 0:
		return e
	case 1:
		return alts[0]
	}
	return ast.NewBinExpr(token.OR, alts...)
}

// disjuncts returns the string alternatives of a disjunction of strings.
func disjuncts(v cue.Value) ([]string, error) {
	op, args := v.Expr()
	if op != cue.OrOp {
		return nil, fmt.Errorf("schema: node-group kind is not a disjunction of strings")
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		s, err := a.String()
		if err != nil {
			return nil, fmt.Errorf("schema: node-group kind: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}
