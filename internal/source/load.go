// Package source loads a nodegen source directory, unifies it with the
// embedded schema and decodes it into the model, reporting every problem
// with its file, line and column.
package source

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/schema"
)

// Loaded is an evaluated source as a whole: the one-cluster form (a
// fleet of one) or a fleet. Its clusters are its Members; the problems
// found in any part of it are its Findings.
type Loaded struct {
	// Dir is the source directory as given.
	Dir string
	// Files are the .cue files of the source, relative to Dir, sorted.
	Files []string
	// Digest identifies the names and bytes of Files exactly as they were
	// read (see DigestDir): the check shortcut's record of the source.
	Digest string
	// Syntax holds the parsed files (those that parse), with comments, for
	// checks on what the user wrote rather than on what it evaluates to.
	Syntax []*ast.File
	// Value is the unified value (schema and data).
	Value cue.Value
	// Findings are the problems CUE found: syntax errors, values the
	// schema rejects, unknown fields, missing fields.
	Findings diag.List
	// Broken says which parts of the source did not decode because of
	// Findings; checks on the decoded model must skip them.
	Broken FleetBroken

	// Fleet is the whole source as a fleet: in the one-cluster form one
	// cluster with Single set; in the fleet form every cluster that
	// decoded, and the mesh when it has one and it decoded. Set by Open
	// whenever something could be evaluated.
	Fleet *model.Fleet
	// Members are the clusters of the source, in Fleet.Clusters order:
	// in the one-cluster form its one cluster, in the fleet form each
	// cluster that decoded at least in part.
	Members []*Member

	// name is the source's name (its directory's), every cluster's
	// Source.Name.
	name string
	// user is the value of the user's files alone; its positions point at
	// what the user wrote.
	user cue.Value
	// pkg is the user's package, which scopes its hidden fields (_name).
	pkg string
	// schema is the schema's #Source (one-cluster form) or #Fleet.
	schema cue.Value
}

// FleetBroken lists the parts of a whole source that did not decode;
// each Member's Broken says what of that cluster did not.
type FleetBroken struct {
	// All is set when nothing of the source decoded (a syntax error, an
	// unresolved reference, a one-cluster source that does not decode as
	// a whole).
	All bool
	// Clusters are the fleet's clusters that did not decode as a whole:
	// they have no Member.
	Clusters map[string]bool
	// Mesh is set when the fleet's mesh did not decode.
	Mesh bool
}

// Load reads every .cue file in dir (not its subdirectories), unifies the
// files with the schema's #Source, checks that the result is concrete and
// decodes it. Problems in the source are returned as a diag.List; other
// errors (an unreadable directory) as plain errors.
func Load(dir string) (*Loaded, error) {
	l, err := Open(dir)
	if err != nil {
		return nil, err
	}
	if len(l.Findings) > 0 {
		return nil, l.Findings.Sorted()
	}
	return l, nil
}

// Open is Load without giving up at the first problem: it reports every
// problem CUE finds in l.Findings and decodes what it can (the cluster and
// each node group on their own), so that further checks can run on the
// parts that are valid. Only I/O errors are returned as errors.
func Open(dir string) (*Loaded, error) {
	if err := CheckNames(dir); err != nil {
		return nil, err
	}
	files, err := cueFiles(dir)
	if err != nil {
		return nil, err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	l := &Loaded{Dir: dir, Files: files, name: filepath.Base(absDir)}

	read, err := l.parseFiles(dir, absDir)
	if err != nil {
		return nil, err
	}
	l.packageClauses()
	if len(l.Findings) > 0 {
		l.Broken.All = true
		return l, nil
	}

	if err := l.evaluate(absDir, read); err != nil {
		return nil, err
	}
	return l, nil
}

// parseFiles reads and parses each of l.Files on its own, so that a syntax
// error in one file does not hide the others from the checks that read
// the syntax. It returns the files' digests.
func (l *Loaded) parseFiles(dir, absDir string) ([][sha256.Size]byte, error) {
	files := l.Files
	total := 0
	read := make([][sha256.Size]byte, len(files))
	for i, name := range files {
		b, err := readSourceFile(filepath.Join(absDir, name), filepath.Join(dir, name), MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("reading source: %w", err)
		}
		read[i] = sha256.Sum256(b)
		total += len(b)
		if total > MaxSourceSize {
			return nil, fmt.Errorf("reading source: the .cue files of %s hold more than %d bytes (nodegen's limit for a whole source); split the cluster into several sources", dir, MaxSourceSize)
		}
		if f, ok := checkText(filepath.Join(absDir, name), b); !ok {
			l.Findings = append(l.Findings, f)
			continue
		}
		f, err := parser.ParseFile(filepath.Join(absDir, name), b, parser.ParseComments)
		if err != nil {
			l.addErr(err)
			continue
		}
		if big := checkStructSizes(f); len(big) > 0 {
			l.Findings = append(l.Findings, big...)
			continue
		}
		l.Syntax = append(l.Syntax, f)
	}
	return read, nil
}

// evaluate unifies the parsed files with the schema, checks that the
// result is concrete and decodes it, recording problems in l.Findings.
// Only an internal error is returned.
func (l *Loaded) evaluate(absDir string, read [][sha256.Size]byte) error {
	files := l.Files
	ctx := cuecontext.New()
	sch := ctx.CompileBytes(schema.Source, cue.Filename(schema.Filename))
	if err := sch.Err(); err != nil {
		return fmt.Errorf("internal error: schema: %w", err)
	}
	l.schema = sch.LookupPath(cue.MakePath(cue.Def("Source")))

	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join(absDir, f)
	}
	pf := newPrefetcher(paths)
	inst := load.Instances(files, &load.Config{Dir: absDir, ParseFile: onePackage(pf.ParseFile)})[0]
	l.Digest = pf.digest(files, paths, read)
	if inst.Err != nil {
		l.addErr(inst.Err)
		l.Broken.All = true
		return nil
	}
	l.pkg = inst.ID()
	l.user = ctx.BuildInstance(inst)
	if err := l.user.Err(); err != nil {
		l.addErr(err)
		l.Broken.All = true
		return nil
	}
	if l.fleetForm() {
		l.schema = sch.LookupPath(cue.MakePath(cue.Def("Fleet")))
	}
	if l.formFindings() {
		l.Broken.All = true
		l.anchorUnpositioned(absDir)
		return nil
	}
	l.Value = l.schema.Unify(l.user)
	if err := l.Value.Validate(cue.Concrete(true), cue.Final()); err != nil {
		l.addErr(err)
	}
	if len(l.Findings) > 0 {
		// A source CUE accepts has no unknown field: #Source is closed.
		// When CUE found other problems, it may have left a misspelt
		// field unreported; look for those too.
		l.addUnknownFields()
	}
	if l.fleetForm() {
		l.decodeFleet()
	} else {
		l.decodeSingle()
	}
	l.anchorUnpositioned(absDir)
	return nil
}

// decodeSingle decodes the one-cluster form: its one member.
func (l *Loaded) decodeSingle() {
	m := &Member{
		Source: l.newSource(""),
		value:  l.Value,
		user:   l.user,
		root:   l,
	}
	m.decode()
	if m.Broken.All {
		l.Broken.All = true
	}
	l.Members = []*Member{m}
	l.Fleet = &model.Fleet{Clusters: []*model.Source{m.Source}, Single: true}
}

// newSource is an empty model of one of l's clusters, whose tree in the
// output directory is tree.
func (l *Loaded) newSource(tree string) *model.Source {
	return &model.Source{Name: l.name, NodeGroups: map[string]*model.NodeGroup{}, Tree: tree}
}

// under reports whether a finding of the source is about path or
// something below it.
func (l *Loaded) under(path string) bool {
	for _, f := range l.Findings {
		if f.Path == path || strings.HasPrefix(f.Path, path+".") {
			return true
		}
	}
	return false
}

// Pos returns the position of the value at path (CUE selectors, from the
// root of the source) in the user's files, walking up to the nearest
// ancestor the user wrote when the value itself comes from the schema (a
// default). After Release it knows no position (token.NoPos).
func (l *Loaded) Pos(sels ...cue.Selector) token.Pos { return valuePos(l.user, sels) }

// KeyPos returns the position of the label of the field at path, for
// findings about a key (a label key, a cluster's name). After Release it
// knows no position.
func (l *Loaded) KeyPos(sels ...cue.Selector) token.Pos { return labelPos(l.user, sels) }

// valuePos is Pos in user, the value of the user's files or part of it.
func valuePos(user cue.Value, sels []cue.Selector) token.Pos {
	if !user.Exists() {
		return token.NoPos
	}
	for n := len(sels); n >= 0; n-- {
		v := user.LookupPath(cue.MakePath(sels[:n]...))
		if !v.Exists() {
			continue
		}
		if p := userPos(v); p.IsValid() {
			return p
		}
	}
	return token.NoPos
}

// labelPos is KeyPos in user.
func labelPos(user cue.Value, sels []cue.Selector) token.Pos {
	if !user.Exists() {
		return token.NoPos
	}
	v := user.LookupPath(cue.MakePath(sels...))
	if !v.Exists() {
		return valuePos(user, sels)
	}
	if f, ok := v.Source().(*ast.Field); ok {
		return f.Label.Pos()
	}
	// The value's source is the value expression: its parent field is not
	// reachable, so report the value's position.
	return valuePos(user, sels)
}

func userPos(v cue.Value) token.Pos {
	if f, ok := v.Source().(*ast.Field); ok {
		return f.Value.Pos()
	}
	return v.Pos()
}

// addDecodeErr reports a value that does not fit the model at its
// position in the user's files.
func (l *Loaded) addDecodeErr(err error) {
	var de *DecodeError
	if !errors.As(err, &de) {
		l.addErr(err)
		return
	}
	path := de.Path
	if len(path) > 0 && (path[0].String() == "#Source" || path[0].String() == "#Fleet") {
		path = path[1:]
	}
	labels := make([]string, len(path))
	for i, s := range path {
		labels[i] = s.String()
	}
	l.Findings = append(l.Findings, diag.Finding{Pos: l.Pos(path...), Path: strings.Join(labels, "."), Msg: de.Err.Error()})
}

// packageClauses reports files whose package clause differs from the
// first file's: CUE loads a directory's files as one package only.
func (l *Loaded) packageClauses() {
	var first *ast.File
	for _, f := range l.Syntax {
		if first == nil {
			first = f
			continue
		}
		if f.PackageName() == first.PackageName() {
			continue
		}
		pos := f.Pos()
		for _, d := range f.Decls {
			if p, ok := d.(*ast.Package); ok {
				pos = p.Pos()
			}
		}
		want := "no package clause"
		if first.PackageName() != "" {
			want = fmt.Sprintf("package %s", first.PackageName())
		}
		got := "no package clause"
		if f.PackageName() != "" {
			got = fmt.Sprintf("package %s", f.PackageName())
		}
		l.Findings = append(l.Findings, diag.Finding{Pos: pos, Msg: fmt.Sprintf("%s, but %s has %s: every file of a source must have the same package clause (nodegen sources need none)", got, filepath.Base(first.Filename), want)})
	}
}

// anchorUnpositioned gives a finding that has no place in the user's files
// (a required top-level field that no file writes) the start of the
// source's first file, so that every finding reads file:line:col.
func (l *Loaded) anchorUnpositioned(absDir string) {
	if len(l.Files) == 0 {
		return
	}
	var start token.Pos
	for i, f := range l.Findings {
		if f.Pos.IsValid() || f.Path == "" {
			continue
		}
		if !start.IsValid() {
			tf := token.NewFile(filepath.Join(absDir, l.Files[0]), -1, 1)
			start = tf.Pos(0, token.NoRelPos)
		}
		l.Findings[i].Pos = start
		l.Findings[i].Msg += "; add it to a file of the source"
	}
}
