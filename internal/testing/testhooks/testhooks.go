// Package testhooks runs the tests that need nodegen's test hooks.
//
// A test hook changes what product code does, for a test: outdir.FailPoint
// makes a write fail (or the process die) at a named stage, and
// outdir.StampWindow changes how old a file must be for its stamp to
// count. Hooks are compiled only with the build tag nodegen_testhooks
// (Tag), so that the nodegen a user builds has none of them. The tests
// that use a hook live in _test.go files with that build constraint; a
// package with such files has a test that calls Run, so that a plain
// `go test` runs them too, in a test binary built with the tag.
package testhooks

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Tag is the build tag that compiles the test hooks in.
const Tag = "nodegen_testhooks"

// Run runs the tests of the package in the current directory that are
// built only with Tag: in this binary when it was built with Tag (they
// run as any test does, and Run has nothing to do), otherwise with
// `go test -tags nodegen_testhooks -run '^(those tests)$'`, failing t
// when they fail or none ran.
func Run(t *testing.T) {
	t.Helper()
	names := HookedTests(t, ".")
	if len(names) == 0 {
		t.Fatalf("no Test function in a _test.go file built only with the %s tag", Tag)
	}
	if Enabled {
		t.Logf("built with %s: %s run in this binary", Tag, strings.Join(names, ", "))
		return
	}
	args := []string{"test", "-tags", Tag, "-run", "^(" + strings.Join(names, "|") + ")$"}
	if race {
		args = append(args, "-race")
	}
	if testing.Short() {
		args = append(args, "-short")
	}
	args = append(args, "-v", ".")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, name := range names {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("go %s did not pass %s:\n%s", strings.Join(args, " "), name, out)
		}
	}
	if testing.Verbose() {
		t.Logf("go %s:\n%s", strings.Join(args, " "), out)
	}
}

// HookedTests lists the Test functions of the _test.go files in dir whose
// build constraint needs Tag, sorted.
func HookedTests(t testing.TB, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if !needsTag(f.Comments, f.Package) {
			continue
		}
		for _, d := range f.Decls {
			if name, ok := testFunc(d); ok {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// needsTag reports whether a file's //go:build line (among the comments
// before its package clause) is false without Tag and true with it, on
// this system.
func needsTag(groups []*ast.CommentGroup, pkg token.Pos) bool {
	for _, g := range groups {
		if g.Pos() >= pkg {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return false
			}
			with := expr.Eval(func(tag string) bool { return tag == Tag || builtWith(tag) })
			without := expr.Eval(builtWith)
			return with && !without
		}
	}
	return false
}

// testFunc returns the name of a top-level func TestXxx(t *testing.T).
func testFunc(d ast.Decl) (string, bool) {
	fd, ok := d.(*ast.FuncDecl)
	if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || fd.Type.Params.NumFields() != 1 {
		return "", false
	}
	if rest := fd.Name.Name[len("Test"):]; rest != "" && strings.ToLower(rest[:1]) == rest[:1] && rest[:1] != "_" {
		return "", false // Testing, Testify: not a test
	}
	return fd.Name.Name, true
}

// builtWith reports whether this test binary was built with the build
// tag: the system's (GOOS, GOARCH, unix), the compiler's, a Go release's,
// race.
func builtWith(tag string) bool {
	switch tag {
	case runtime.GOOS, runtime.GOARCH, runtime.Compiler:
		return true
	case "unix":
		return runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1"
	case "race":
		return race
	}
	return strings.HasPrefix(tag, "go1.")
}
