// Command crosscheck type-checks Go packages, and every package they import,
// for other platforms than the one it runs on, from source and without
// compiling: CI's check that what users build on macOS and Windows (the
// README's `go install ./cmd/nodegen` and the commit hook's
// `go install ./...`) still builds there, at a fraction of the CPU time of
// a cross-compile.
//
// Each platform's packages are selected by `go list` with that platform's
// GOOS and GOARCH (and CGO_ENABLED=0, as for any cross-compile), so the
// files of each build constraint are the ones that platform compiles; they
// are then type-checked by go/types with that platform's sizes (int,
// uintptr, alignment), function bodies included, through
// golang.org/x/tools/go/packages. A cross-compile also runs the compiler's
// back end and the linker: what only those can find (an assembly function
// missing for one architecture in a dependency) is not checked here.
//
// Usage (from the repository root):
//
//	go run ./hack/crosscheck [-platforms darwin/arm64,darwin/amd64,windows/amd64] [packages]
//
// The packages default to ./... . It prints one line per platform and
// exits 1 with every error, at file:line:col, when a package does not
// type-check, does not load, or no package was found.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	platforms := flag.String("platforms", "darwin/arm64,darwin/amd64,windows/amd64", "comma-separated GOOS/GOARCH pairs")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	failed := false
	for _, platform := range strings.Split(*platforms, ",") {
		if err := check(os.Stdout, ".", platform, patterns); err != nil {
			fmt.Fprintf(os.Stderr, "crosscheck: %s\n", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// check type-checks the packages of patterns, in dir, and all they import,
// for platform ("GOOS/GOARCH"), and prints one line about it to w. The
// error names every package error found.
func check(w io.Writer, dir, platform string, patterns []string) error {
	goos, goarch, ok := strings.Cut(platform, "/")
	if !ok || goos == "" || goarch == "" {
		return fmt.Errorf("platform %q is not GOOS/GOARCH", platform)
	}
	cfg := &packages.Config{
		// NeedDeps with NeedSyntax and NeedTypes: every package of the
		// graph is parsed and type-checked from source, bodies included,
		// rather than read from compiled export data.
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps |
			packages.NeedSyntax | packages.NeedTypes,
		Dir: dir,
		Env: append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0"),
	}
	roots, err := packages.Load(cfg, patterns...)
	if err != nil {
		return fmt.Errorf("%s: %v", platform, err)
	}
	var errs []string
	n := 0
	packages.Visit(roots, nil, func(p *packages.Package) {
		n++
		for _, e := range p.Errors {
			errs = append(errs, fmt.Sprintf("%s: %s: %s", platform, p.PkgPath, e))
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("%d errors:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	if len(roots) == 0 {
		return fmt.Errorf("%s: no package matches %s", platform, strings.Join(patterns, " "))
	}
	fmt.Fprintf(w, "%s: %d packages (%d of them named) type-check\n", platform, n, len(roots))
	return nil
}
