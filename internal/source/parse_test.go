package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
	"github.com/nodegen/nodegen/internal/diag"
)

func formatted(t *testing.T, f *ast.File) string {
	t.Helper()
	b, err := format.Node(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPrefetcher(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, body := range []string{"a: 1\n", "b: {c: \"x\"}\n", "d: [1, 2]\n"} {
		p := filepath.Join(dir, string(rune('a'+i))+".cue")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cfg := parser.NewConfig(parser.ParseComments)
	p := newPrefetcher(paths)
	for _, path := range paths {
		src, _ := os.ReadFile(path)
		got, err := p.ParseFile(path, src, cfg)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := parser.ParseFile(path, src, cfg)
		if formatted(t, got) != formatted(t, want) || got.Filename != path || got.Pos().Filename() != path {
			t.Errorf("%s: got %q, want %q", path, formatted(t, got), formatted(t, want))
		}
	}

	// Contents other than what was read ahead, another configuration, a
	// second request or an unknown file: parsed from what the loader gives.
	p = newPrefetcher(paths)
	for name, call := range map[string]func() (*ast.File, error){
		"changed":  func() (*ast.File, error) { return p.ParseFile(paths[0], []byte("a: 2\n"), cfg) },
		"config":   func() (*ast.File, error) { return p.ParseFile(paths[1], []byte("b: 3\n"), parser.NewConfig()) },
		"again":    func() (*ast.File, error) { return p.ParseFile(paths[0], []byte("a: 4\n"), cfg) },
		"unknown":  func() (*ast.File, error) { return p.ParseFile(filepath.Join(dir, "z.cue"), []byte("z: 5\n"), cfg) },
		"a string": func() (*ast.File, error) { return p.ParseFile(paths[2], "d: 6\n", cfg) },
	} {
		f, err := call()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s := formatted(t, f); !strings.ContainsAny(s, "23456") {
			t.Errorf("%s: got the file read ahead: %q", name, s)
		}
	}
}

// TestPrefetcherSyntaxError: a file that does not parse gives the parser's
// own error, at its position.
func TestPrefetcherSyntaxError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.cue")
	src := []byte("a: {\n")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := parser.NewConfig()
	_, want := parser.ParseFile(path, src, cfg)
	_, got := newPrefetcher([]string{path}).ParseFile(path, src, cfg)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestLoadSyntaxError: Load reports a syntax error with its file and line.
func TestLoadSyntaxError(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"a.cue": "cluster: name: \"x\"\n", "b.cue": "nodeGroups: {\n  x: kind: \n}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(dir)
	if err == nil || !errors.As(err, new(diag.List)) {
		t.Fatalf("got %v, want findings", err)
	}
	if msg := err.Error(); !strings.Contains(msg, filepath.Join(dir, "b.cue")+":3:") {
		t.Errorf("error %q does not point at b.cue line 3", msg)
	}
}
