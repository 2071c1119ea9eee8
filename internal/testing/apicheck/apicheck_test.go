package apicheck

import (
	"fmt"
	"go/types"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/nodegen/nodegen"

// use is what references an exported package-level name: code outside
// tests, the tests of its own package (internal or external test
// package), the tests of another package.
type use struct{ product, ownTests, otherTests bool }

// TestNoTestOnlyExports lists the exported package-level names (funcs,
// types, vars, consts) of the packages under internal/ whose only
// references are in their own package's _test.go files, each at its
// declaration as file:line. A test in the same package reaches an
// unexported name; an external test package that needs one gets it from
// an export_test.go of the package.
func TestNoTestOnlyExports(t *testing.T) {
	root := moduleRoot(t)
	pkgs, err := packages.Load(&packages.Config{
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:   root,
		Tests: true,
	}, module+"/...")
	if err != nil {
		t.Fatal(err)
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		t.Fatalf("%d errors loading the module", n)
	}

	// The declarations: the exported package-level names of each product
	// package under internal/ (its variant without tests).
	decls := map[string]types.Object{}
	for _, p := range pkgs {
		if p.ID != p.PkgPath || !strings.HasPrefix(p.PkgPath, module+"/internal/") || p.Name == "main" {
			continue
		}
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			if obj := scope.Lookup(name); obj.Exported() {
				decls[key(obj)] = obj
			}
		}
	}
	if len(decls) < 100 {
		t.Fatalf("%d exported names under internal/: the load missed the module", len(decls))
	}

	// The references, from every variant: a package's product files are
	// in both its variants, its _test.go files in the one with tests or in
	// its external test package (the import path and "_test").
	uses := map[string]*use{}
	for _, p := range pkgs {
		if p.TypesInfo == nil || strings.HasSuffix(p.ID, ".test") {
			continue
		}
		owner := strings.TrimSuffix(p.PkgPath, "_test")
		for id, obj := range p.TypesInfo.Uses {
			if obj.Pkg() == nil || obj.Parent() != obj.Pkg().Scope() || !obj.Exported() {
				continue
			}
			k := key(obj)
			if _, ok := decls[k]; !ok {
				continue
			}
			u := uses[k]
			if u == nil {
				u = &use{}
				uses[k] = u
			}
			switch {
			case !strings.HasSuffix(p.Fset.Position(id.Pos()).Filename, "_test.go"):
				u.product = true
			case owner == obj.Pkg().Path():
				u.ownTests = true
			default:
				u.otherTests = true
			}
		}
	}

	var found []string
	for k, obj := range decls {
		if u := uses[k]; u != nil && u.ownTests && !u.product && !u.otherTests {
			found = append(found, where(t, root, pkgs, obj)+": "+obj.Name()+" is exported but only its own package's tests use it")
		}
	}
	slices.Sort(found)
	for _, f := range found {
		t.Error(f)
	}
}

// key names a package-level object across the variants of its package,
// which type-check it as distinct objects.
func key(obj types.Object) string { return obj.Pkg().Path() + "." + obj.Name() }

// where is obj's declaration as file:line relative to the module's root.
func where(t *testing.T, root string, pkgs []*packages.Package, obj types.Object) string {
	for _, p := range pkgs {
		if p.Types == obj.Pkg() {
			pos := p.Fset.Position(obj.Pos())
			rel, err := filepath.Rel(root, pos.Filename)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("%s:%d", filepath.ToSlash(rel), pos.Line)
		}
	}
	t.Fatalf("no package declares %s", key(obj))
	return ""
}

func moduleRoot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
