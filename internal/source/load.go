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

// Loaded is an evaluated source.
type Loaded struct {
	// Source is the decoded and resolved model. When the source has
	// problems (Findings is not empty), it holds only what decoded: see
	// Broken for what is missing.
	Source *model.Source
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
	Broken Broken

	// Fleet is the whole source as a fleet: in the one-cluster form one
	// cluster (Source) with Single set; in the fleet form every cluster
	// that decoded, and the mesh when it has one and it decoded. Set by
	// Open whenever something could be evaluated.
	Fleet *model.Fleet
	// Members are the clusters of the source as sources of their own, in
	// Fleet.Clusters order: each is a Positioner for its cluster (paths
	// relative to the cluster: cluster..., nodeGroups...), with its
	// Source and Broken. In the one-cluster form Members is [l] itself.
	// In the fleet form the root's Source is nil: use Members or Fleet.
	Members []*Loaded
	// Prefix is the path of a member in the source (clusters."<name>"),
	// "" for the one-cluster form and for the root of a fleet. Findings
	// about a member carry it before their path.
	Prefix string
	// Key is a fleet member's key in clusters; "" otherwise.
	Key string

	// user is the value of the user's files alone; its positions point at
	// what the user wrote.
	user cue.Value
	// root is the whole source of a fleet member; nil otherwise.
	root *Loaded
	// schema is the schema's #Source.
	schema cue.Value
	// released is set by Release; groupKeys are then the positions of the
	// node groups' names, by name.
	released  bool
	groupKeys map[string]token.Pos
}

// Broken lists the parts of a source that did not decode.
type Broken struct {
	// All is set when nothing could be evaluated (a syntax error, an
	// unresolved reference): Source is empty.
	All bool
	// Cluster is set when the cluster did not decode.
	Cluster bool
	// Groups are the node groups that did not decode.
	Groups map[string]bool
	// Clusters are the fleet's clusters that did not decode as a whole
	// (the root of a fleet only).
	Clusters map[string]bool
	// Mesh is set when the fleet's mesh did not decode (the root of a
	// fleet only).
	Mesh bool
}

// Any reports whether any part of the source is missing from the model.
func (b Broken) Any() bool {
	return b.All || b.Cluster || len(b.Groups) > 0 || len(b.Clusters) > 0 || b.Mesh
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
	l := &Loaded{Dir: dir, Files: files, Source: &model.Source{NodeGroups: map[string]*model.NodeGroup{}}}
	l.Source.Name = filepath.Base(absDir)

	read, err := l.parseFiles(dir, absDir)
	if err != nil {
		return nil, err
	}
	l.packageClauses()
	if len(l.Findings) > 0 {
		l.Broken.All = true
		return l, nil
	}

	if err := guardMemory(func() error { return l.evaluate(absDir, read) }); err != nil {
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
		l.decode()
		l.Members = []*Loaded{l}
		l.Fleet = &model.Fleet{Clusters: []*model.Source{l.Source}, Single: true}
	}
	l.anchorUnpositioned(absDir)
	return nil
}

// rootOf is the whole source l is part of: l itself, or a fleet
// member's fleet.
func (l *Loaded) rootOf() *Loaded {
	if l.root != nil {
		return l.root
	}
	return l
}

// under reports whether a finding of the whole source is about path or
// something below it.
func (l *Loaded) under(path string) bool {
	for _, f := range l.rootOf().Findings {
		if f.Path == path || strings.HasPrefix(f.Path, path+".") {
			return true
		}
	}
	return false
}

// decode fills l.Source: all of it when CUE found no problem, otherwise
// the cluster and each node group that has no problem of its own.
func (l *Loaded) decode() {
	src := l.Source
	root := l.rootOf()
	if len(root.Findings) == 0 {
		if err := decode(l.Value, src); err != nil {
			root.addDecodeErr(err)
			l.Broken.All = true
			return
		}
	} else {
		l.Broken.Groups = map[string]bool{}
		if l.under(l.sub("cluster")) {
			l.Broken.Cluster = true
		} else if err := decode(l.Value.LookupPath(cue.ParsePath("cluster")), &src.Cluster); err != nil {
			root.addDecodeErr(err)
			l.Broken.Cluster = true
		}
		iter, err := l.user.LookupPath(cue.ParsePath("nodeGroups")).Fields()
		for err == nil && iter.Next() {
			name := iter.Selector().Unquoted()
			p := cue.MakePath(cue.Str("nodeGroups"), cue.Str(name))
			g := &model.NodeGroup{}
			if l.under(l.sub("nodeGroups", name)) {
				l.Broken.Groups[name] = true
				continue
			}
			if err := decode(l.Value.LookupPath(p), g); err != nil {
				root.addDecodeErr(err)
				l.Broken.Groups[name] = true
				continue
			}
			src.NodeGroups[name] = g
		}
	}
	src.Resolve()
	src.Origins = map[string]string{}
	for name := range src.NodeGroups {
		if p := l.Pos(cue.Str("nodeGroups"), cue.Str(name)); p.IsValid() {
			src.Origins[name] = src.Name + "/" + filepath.Base(p.Filename())
		}
	}
	if p := l.Pos(cue.Str("cluster")); p.IsValid() {
		src.ClusterOrigin = src.Name + "/" + filepath.Base(p.Filename())
	}
}

// Pos returns the position of the value at path (CUE selectors) in the
// user's files, walking up to the nearest ancestor the user wrote when
// the value itself comes from the schema (a default).
func (l *Loaded) Pos(sels ...cue.Selector) token.Pos {
	if !l.user.Exists() {
		return token.NoPos
	}
	for n := len(sels); n >= 0; n-- {
		v := l.user.LookupPath(cue.MakePath(sels[:n]...))
		if !v.Exists() {
			continue
		}
		if p := userPos(v); p.IsValid() {
			return p
		}
	}
	return token.NoPos
}

// KeyPos returns the position of the label of the field at path, for
// findings about a key (a label key, a group name).
func (l *Loaded) KeyPos(sels ...cue.Selector) token.Pos {
	if l.released {
		return l.releasedKeyPos(sels)
	}
	if !l.user.Exists() {
		return token.NoPos
	}
	v := l.user.LookupPath(cue.MakePath(sels...))
	if !v.Exists() {
		return l.Pos(sels...)
	}
	if f, ok := v.Source().(*ast.Field); ok {
		return f.Label.Pos()
	}
	// The value's source is the value expression: its parent field is not
	// reachable, so report the value's position.
	return l.Pos(sels...)
}

func userPos(v cue.Value) token.Pos {
	if f, ok := v.Source().(*ast.Field); ok {
		return f.Value.Pos()
	}
	return v.Pos()
}

// IsSourceError reports whether err is a list of findings about the source
// (as opposed to an I/O or internal error).
func IsSourceError(err error) bool {
	var l diag.List
	return errors.As(err, &l)
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
