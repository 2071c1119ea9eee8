// Package source loads a nodegen source directory, unifies it with the
// embedded schema and decodes it into the model, reporting every problem
// with its file, line and column.
package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/schema"
)

// Loaded is an evaluated source.
type Loaded struct {
	// Source is the decoded and resolved model.
	Source *model.Source
	// Dir is the source directory as given.
	Dir string
	// Files are the .cue files of the source, relative to Dir, sorted.
	Files []string
	// Value is the unified value (schema and data).
	Value cue.Value
	// user is the value of the user's files alone; its positions point at
	// what the user wrote.
	user cue.Value
}

// Load reads every .cue file in dir (not its subdirectories), unifies the
// files with the schema's #Source, checks that the result is concrete and
// decodes it. Problems in the source are returned as a diag.List; other
// errors (an unreadable directory) as plain errors.
func Load(dir string) (*Loaded, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading source: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".cue") {
			files = append(files, e.Name())
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .cue files in %s", dir)
	}
	slices.Sort(files)
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}

	ctx := cuecontext.New()
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join(absDir, f)
	}
	insts := load.Instances(files, &load.Config{Dir: absDir, ParseFile: newPrefetcher(paths).ParseFile})
	inst := insts[0]
	if inst.Err != nil {
		return nil, toList(inst.Err, nil)
	}
	user := ctx.BuildInstance(inst)
	if err := user.Err(); err != nil {
		return nil, toList(err, nil)
	}
	sch := ctx.CompileBytes(schema.Source, cue.Filename(schema.Filename))
	if err := sch.Err(); err != nil {
		return nil, fmt.Errorf("internal error: schema: %w", err)
	}
	v := sch.LookupPath(cue.MakePath(cue.Def("Source"))).Unify(user)
	l := &Loaded{Dir: dir, Files: files, Value: v, user: user}
	if err := v.Validate(cue.Concrete(true), cue.Final()); err != nil {
		return nil, toList(err, l)
	}
	src := &model.Source{}
	if err := decode(v, src); err != nil {
		return nil, toList(err, l)
	}
	src.Resolve()
	src.Name = filepath.Base(absDir)
	src.Origins = map[string]string{}
	for name := range src.NodeGroups {
		if p := l.Pos(cue.Str("nodeGroups"), cue.Str(name)); p.IsValid() {
			src.Origins[name] = src.Name + "/" + filepath.Base(p.Filename())
		}
	}
	l.Source = src
	return l, nil
}

// Pos returns the position of the value at path (CUE selectors) in the
// user's files, walking up to the nearest ancestor the user wrote when
// the value itself comes from the schema (a default).
func (l *Loaded) Pos(sels ...cue.Selector) token.Pos {
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

// toList turns CUE errors into findings, preferring a position in the
// user's files over one in the schema.
func toList(err error, l *Loaded) diag.List {
	var out diag.List
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		path := e.Path()
		pos := pickPos(e)
		if !pos.IsValid() && l != nil && len(path) > 0 {
			pos = l.Pos(selectors(path)...)
		}
		out = append(out, diag.Finding{Pos: pos, Path: diag.Path(path...), Msg: fmt.Sprintf(format, args...)})
	}
	if len(out) == 0 {
		out = append(out, diag.Finding{Msg: err.Error()})
	}
	return out
}

func pickPos(e cueerrors.Error) token.Pos {
	var all []token.Pos
	if p := e.Position(); p.IsValid() {
		all = append(all, p)
	}
	all = append(all, e.InputPositions()...)
	for _, p := range all {
		if p.IsValid() && p.Filename() != schema.Filename {
			return p
		}
	}
	if len(all) > 0 {
		return all[0]
	}
	return token.NoPos
}

// selectors turns error path labels back into selectors.
func selectors(path []string) []cue.Selector {
	var out []cue.Selector
	for _, p := range path {
		s := cue.ParsePath(p).Selectors()
		if len(s) == 1 {
			out = append(out, s[0])
		} else {
			out = append(out, cue.Str(p))
		}
	}
	return out
}

// IsSourceError reports whether err is a list of findings about the source
// (as opposed to an I/O or internal error).
func IsSourceError(err error) bool {
	var l diag.List
	return errors.As(err, &l)
}
