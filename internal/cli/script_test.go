package cli_test

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/diff"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/revision"
	"github.com/nodegen/nodegen/internal/testing/testcp"
	"github.com/nodegen/nodegen/internal/testing/testhooks"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

var update = flag.Bool("update", false, "update testscript golden files")

func TestMain(m *testing.M) {
	// The in-process runs of gen and check keep check's shortcut records
	// (internal/fastcheck) in a cache of this test process, not the user's.
	var cache string
	if os.Getenv("NODEGEN_CACHE_DIR") == "" {
		var err error
		if cache, err = os.MkdirTemp("", "nodegen-test-cache-"); err != nil {
			panic(err)
		}
		os.Setenv("NODEGEN_CACHE_DIR", cache)
	}
	testscript.Main(cleanupM{m, cache}, map[string]func(){
		"nodegen": func() {
			os.Exit(cli.Command(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) // as cmd/nodegen does
		},
	})
}

// cleanupM removes the test cache, and the hooked nodegen if a script
// built it, once every test ran.
type cleanupM struct {
	*testing.M
	cache string
}

func (m cleanupM) Run() int {
	code := m.M.Run()
	if m.cache != "" {
		os.RemoveAll(m.cache)
	}
	if hooked.path != "" {
		os.RemoveAll(filepath.Dir(hooked.path))
	}
	return code
}

// TestScript runs testdata/script/*.txtar. Each script starts in a work
// directory holding the tests' copy of the example (internal/testing/testsrc) in nodegroups/ (unless
// the script brings its own files there), and the tests' fleet source
// (testsrc.FleetDir) in fleet/ (likewise).
//
// A script that runs the rendered scripts against a cluster says
// "[!testcp] skip" and then "apiserver": it gets KUBECONFIG for the admin
// of a real kube-apiserver in production mode (internal/testing/testcp),
// its own, started by that line and stopped when the script ends.
func TestScript(t *testing.T) {
	cp := scriptControlPlane(t, "testdata/script")
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"exitcode": exitCode, "refused": refused, "fillrevisions": fillRevisions, "dochook": docHook, "hookednodegen": hookedNodegen, "apiserver": cp.use},
		Condition: func(cond string) (bool, error) {
			if cond == "testcp" {
				return cp.ok, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			// check's shortcut keeps its records in the script's own cache.
			env.Setenv("NODEGEN_CACHE_DIR", filepath.Join(env.WorkDir, ".nodegen-cache"))
			if _, err := os.Stat(filepath.Join(env.WorkDir, "fleet")); err != nil {
				if err := testsrc.CopyFleetTo(filepath.Join(env.WorkDir, "fleet")); err != nil {
					return err
				}
			}
			dst := filepath.Join(env.WorkDir, "nodegroups")
			if _, err := os.Stat(dst); err == nil {
				return nil
			}
			return testsrc.CopyTo(dst)
		},
	})
}

// scriptCP gives the scripts that use one a test control plane.
type scriptCP struct {
	t  *testing.T // TestScript
	ok bool       // the binaries are there, or their absence fails the scripts
}

// scriptControlPlane says whether the scripts in dir that have an
// "apiserver" line can have a test control plane: its binaries are there
// (or testcp.EnvRequire makes their absence a failure); they skip
// otherwise.
func scriptControlPlane(t *testing.T, dir string) scriptCP {
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^apiserver$`)
	used := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if line.Match(b) {
			used = true
			break
		}
	}
	if !used {
		return scriptCP{}
	}
	if _, err := testcp.FindBinaries(); err != nil && os.Getenv(testcp.EnvRequire) != "1" {
		t.Logf("the scripts that need the test control plane skip: %v", err)
		return scriptCP{}
	}
	return scriptCP{t: t, ok: true}
}

// use implements "apiserver": it starts a control plane of the script's
// own, stopped when the script ends (idle, one costs about 1.4 CPU-s a
// minute here: the scripts that use none do not pay for it), and sets
// KUBECONFIG to its admin's.
func (c scriptCP) use(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: apiserver")
	}
	if !c.ok {
		ts.Fatalf("no test control plane: the script must start with [!testcp] skip")
	}
	tb := &scriptTB{TB: c.t, ts: ts}
	ts.Defer(tb.cleanup)
	cp := testcp.StartWith(tb, testcp.Options{Production: true})
	ts.Setenv("KUBECONFIG", cp.Admin().Kubeconfig)
}

// scriptTB is the testing.TB testcp.StartWith gets from a script: its
// logs and fatal errors go to the script and its cleanups run when the
// script ends; the rest (TempDir, Helper, and Errorf, which the cleanups
// call when a process does not stop) is TestScript's.
type scriptTB struct {
	testing.TB
	ts       *testscript.TestScript
	cleanups []func()
}

func (s *scriptTB) Cleanup(f func())                  { s.cleanups = append(s.cleanups, f) }
func (s *scriptTB) Logf(format string, args ...any)   { s.ts.Logf(format, args...) }
func (s *scriptTB) Fatalf(format string, args ...any) { s.ts.Fatalf(format, args...) }
func (s *scriptTB) Skipf(format string, args ...any)  { s.ts.Fatalf(format, args...) }

// Failed reports true: a script cannot tell whether it failed, and the
// end of the control plane's logs that testcp then writes to the
// script's log shows only when it did (or with -v).
func (s *scriptTB) Failed() bool { return true }

// cleanup runs the cleanups, the last registered first.
func (s *scriptTB) cleanup() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

// hooked is the tests' nodegen built with the test hooks, made once per
// test process by hookedNodegen.
var hooked struct {
	once sync.Once
	path string
	err  error
}

// hookedNodegen implements "hookednodegen PATH": put at PATH a nodegen
// built from cmd/nodegen with the test hooks (the build tag of
// internal/testing/testhooks), a program of its own that honours
// NODEGEN_FAILPOINT, so that a script can make a real gen fail, or die,
// at a stage of its write. The nodegen users build has no such hook.
func hookedNodegen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: hookednodegen PATH")
	}
	hooked.once.Do(func() {
		dir, err := os.MkdirTemp("", "nodegen-hooked-")
		if err != nil {
			hooked.err = err
			return
		}
		hooked.path = filepath.Join(dir, "nodegen")
		cmd := exec.Command("go", "build", "-tags", testhooks.Tag, "-o", hooked.path, "./cmd/nodegen")
		cmd.Dir = testsrc.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			hooked.err = fmt.Errorf("go build -tags %s ./cmd/nodegen: %v\n%s", testhooks.Tag, err, out)
		}
	})
	ts.Check(hooked.err)
	b, err := os.ReadFile(hooked.path)
	ts.Check(err)
	ts.Check(os.MkdirAll(filepath.Dir(ts.MkAbs(args[0])), 0o755))
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o755))
}

// docHook implements "dochook DEST": write the plain git pre-commit hook
// that docs/ci-and-hooks.md shows to DEST, executable, so that a script
// runs the documented hook itself.
func docHook(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: dochook DEST")
	}
	doc, err := os.ReadFile(filepath.Join(testsrc.RepoRoot(), "docs", "ci-and-hooks.md"))
	if err != nil {
		ts.Fatalf("%v", err)
	}
	_, hook, ok := strings.Cut(string(doc), "## A plain git hook")
	if ok {
		_, hook, ok = strings.Cut(hook, "```sh\n")
	}
	if ok {
		hook, _, ok = strings.Cut(hook, "```\n")
	}
	if !ok || !strings.HasPrefix(hook, "#!/bin/sh\n") {
		ts.Fatalf("docs/ci-and-hooks.md: no sh block under \"A plain git hook\"")
	}
	if err := os.WriteFile(ts.MkAbs(args[0]), []byte(hook), 0o755); err != nil {
		ts.Fatalf("%v", err)
	}
}

// exitCode implements "exitcode CODE program [args...]": run the program
// like exec does (its stdout and stderr are then checked as usual) and
// fail unless it exits with CODE.
func exitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// refused implements "refused [FLAG...] WANT": the source is refused as
// every vet_* script expects. nodegen vet, gen and check, each with the
// flags, exit 1, print nothing on stdout and exactly the file WANT on
// stderr (the findings, with their positions); and the output directory
// (out, or the --out flag's) is left as it was before the three runs,
// every file's bytes and mode, or absent if it was absent.
func refused(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: refused [FLAG...] WANT")
	}
	flags, want := args[:len(args)-1], ts.ReadFile(args[len(args)-1])
	out := "out"
	for i, f := range flags {
		if v, ok := strings.CutPrefix(f, "--out="); ok {
			out = v
		} else if f == "--out" && i+1 < len(flags) {
			out = flags[i+1]
		}
	}
	before := treeOf(ts, out)
	for _, cmd := range []string{"vet", "gen", "check"} {
		got := 0
		if err := ts.Exec("nodegen", append([]string{cmd}, flags...)...); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				ts.Fatalf("nodegen %s: %v", cmd, err)
			}
			got = ee.ExitCode()
		}
		if got != 1 {
			ts.Fatalf("nodegen %s exited with %d, want 1", cmd, got)
		}
		if stdout := ts.ReadFile("stdout"); stdout != "" {
			ts.Fatalf("nodegen %s printed on stdout:\n%s", cmd, stdout)
		}
		if stderr := ts.ReadFile("stderr"); stderr != want {
			ts.Fatalf("nodegen %s: stderr and %s differ:\n%s", cmd, args[len(args)-1], diff.Diff("stderr", []byte(stderr), args[len(args)-1], []byte(want)))
		}
	}
	if after := treeOf(ts, out); after != before {
		ts.Fatalf("%s changed:\n%s", out, diff.Diff(out+" before", []byte(before), out+" after", []byte(after)))
	}
}

// treeOf describes the directory dir of the script's work directory: each
// entry's path, mode and, for a file, its SHA-256; "" when dir is absent.
func treeOf(ts *testscript.TestScript, dir string) string {
	root := ts.MkAbs(dir)
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	var b strings.Builder
	ts.Check(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %v", filepath.ToSlash(rel), info.Mode())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		} else if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " -> %s", target)
		}
		b.WriteByte('\n')
		return nil
	}))
	return b.String()
}

var revisionToken = regexp.MustCompile(`@REVISION:([a-z0-9-]+)@`)

// fillRevisions implements "fillrevisions OUTDIR FILE...": replace every
// @REVISION:<group>@ in the files with the revision that OUTDIR's kube-env
// of the group declares, so that a recorded node can be one made from the
// artifacts gen just rendered, whatever their digest is today.
func fillRevisions(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: fillrevisions OUTDIR FILE...")
	}
	for _, name := range args[1:] {
		data := ts.ReadFile(name)
		var failed error
		data = revisionToken.ReplaceAllStringFunc(data, func(tok string) string {
			group := revisionToken.FindStringSubmatch(tok)[1]
			env, err := os.ReadFile(ts.MkAbs(filepath.Join(args[0], layout.KubeEnvPath(group))))
			if err == nil {
				rev, ok, rerr := revision.FromKubeEnv(env)
				if rerr == nil && ok {
					return rev
				}
				err = errors.Join(rerr, errors.New("no revision label"))
			}
			failed = err
			return tok
		})
		ts.Check(failed)
		ts.Check(os.WriteFile(ts.MkAbs(name), []byte(data), 0o644))
	}
}
