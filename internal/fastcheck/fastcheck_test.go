package fastcheck_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/fastcheck"
	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// tree is a source, an output directory and a cache of records, made
// fresh by a full gen.
type tree struct {
	t             *testing.T
	src, out, dir string
}

func newTree(t *testing.T) *tree {
	t.Helper()
	src := testsrc.Copy(t, nil)
	tr := &tree{t: t, src: src, out: filepath.Join(filepath.Dir(src), "out"), dir: filepath.Dir(src)}
	t.Setenv("NODEGEN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	if code, _, errb := tr.run("gen"); code != cli.ExitOK {
		t.Fatalf("gen: exit %d\n%s", code, errb)
	}
	return tr
}

// run runs nodegen with --source and --out of the tree.
func (tr *tree) run(args ...string) (int, string, string) {
	tr.t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(append(args, "--source", tr.src, "--out", tr.out), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// checkPath runs `check --verbose` and says whether the shortcut answered,
// what it said (which files it read, or why it fell back) and the exit
// code. It then
// runs `check --full` and requires the same answer: the shortcut, or the
// full path it fell back to, never says other than the full check.
func (tr *tree) checkPath() (shortcut bool, reason string, code int) {
	tr.t.Helper()
	code, stdout, stderr := tr.run("check", "--verbose")
	first, _, _ := strings.Cut(stderr, "\n")
	switch {
	case strings.Contains(first, "is current: nothing changed since a full run"):
		shortcut, reason = true, first
	case strings.HasPrefix(first, "nodegen: full check: "):
		reason = strings.TrimPrefix(first, "nodegen: full check: ")
	default:
		tr.t.Fatalf("check --verbose did not say which path it took: %q", stderr)
	}
	fullCode, fullStdout, _ := tr.run("check", "--full")
	if fullCode != code || fullStdout != stdout {
		tr.t.Fatalf("check answered exit %d (shortcut %v), check --full exit %d; stdout:\n%s\nfull:\n%s", code, shortcut, fullCode, stdout, fullStdout)
	}
	return shortcut, reason, code
}

func (tr *tree) write(rel, content string, mode os.FileMode) {
	tr.t.Helper()
	if err := os.WriteFile(filepath.Join(tr.dir, rel), []byte(content), mode); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) read(rel string) string {
	tr.t.Helper()
	b, err := os.ReadFile(filepath.Join(tr.dir, rel))
	if err != nil {
		tr.t.Fatal(err)
	}
	return string(b)
}

func (tr *tree) do(f func() error) {
	tr.t.Helper()
	if err := f(); err != nil {
		tr.t.Fatal(err)
	}
}

// TestShortcutPersonsFolder: a folder a person made next to out/, named
// like nodegen's old scratch directories, is not taken for a leftover of
// nodegen's: the shortcut still answers.
func TestShortcutPersonsFolder(t *testing.T) {
	tr := newTree(t)
	for _, name := range []string{".out.nodegen-new", ".out.nodegen-old", ".out.nodegen-123"} {
		tr.do(func() error { return os.Mkdir(filepath.Join(tr.dir, name), 0o755) })
	}
	if ok, why, code := tr.checkPath(); !ok || code != cli.ExitOK {
		t.Fatalf("full path (%s), exit %d; want the shortcut", why, code)
	}
}

// TestShortcutTaken: after gen, and after a full check, an unchanged tree
// is answered by the shortcut, with the full check's answer.
func TestShortcutTaken(t *testing.T) {
	tr := newTree(t)
	if ok, why, code := tr.checkPath(); !ok || code != cli.ExitOK {
		t.Fatalf("after gen: shortcut %v (%s), exit %d; want the shortcut and exit 0", ok, why, code)
	}
	// A full check records too: drop the records, check fully, then the
	// shortcut answers again.
	tr.do(func() error { return os.RemoveAll(os.Getenv("NODEGEN_CACHE_DIR")) })
	if ok, why, _ := tr.checkPath(); ok || !strings.Contains(why, "no record") {
		t.Fatalf("without a record: shortcut %v (%q), want the full path: no record", ok, why)
	}
	if ok, why, code := tr.checkPath(); !ok || code != cli.ExitOK {
		t.Fatalf("after a full check: shortcut %v (%s), exit %d", ok, why, code)
	}
	// --full never takes it, and leaves no record.
	if code, _, errb := tr.run("check", "--full", "--verbose"); code != cli.ExitOK || !strings.Contains(errb, "full check (--full)") {
		t.Fatalf("check --full --verbose: exit %d, %q", code, errb)
	}
	tr.do(func() error { return os.RemoveAll(os.Getenv("NODEGEN_CACHE_DIR")) })
	if code, _, _ := tr.run("check", "--full"); code != cli.ExitOK {
		t.Fatalf("check --full: exit %d", code)
	}
	if ok, why, _ := tr.checkPath(); ok || !strings.Contains(why, "no record") {
		t.Fatalf("after check --full alone: shortcut %v (%q), want the full path: no record", ok, why)
	}
	// Without --verbose the shortcut is as silent as a clean full check.
	if code, out, errb := tr.run("check"); code != cli.ExitOK || out != "" || errb != "" {
		t.Fatalf("check: exit %d, stdout %q, stderr %q", code, out, errb)
	}
}

// fallBackCase is a change to what a check depends on, the reason the
// check then gives for its full path, and the exit code it then has (-1:
// any, as long as check --full agrees).
type fallBackCase struct {
	name     string
	change   func(tr *tree)
	reason   string
	wantCode int
}

// fallBackCases are the changes that need no test hook.
func fallBackCases() []fallBackCase {
	gpu := filepath.Join("nodegroups", "gpu-t4.cue")
	return []fallBackCase{
		{"source file edited (a comment: same output)", func(tr *tree) {
			tr.write(gpu, tr.read(gpu)+"// a comment\n", 0o644)
		}, "source changed", cli.ExitOK},
		{"source file edited (a label)", func(tr *tree) {
			tr.write(gpu, strings.Replace(tr.read(gpu), `"gpu-burst"`, `"gpu-cloud"`, 1), 0o644)
		}, "source changed", cli.ExitFindings},
		{"source file added", func(tr *tree) {
			tr.write(filepath.Join("nodegroups", "gpu-t4b.cue"), strings.ReplaceAll(tr.read(gpu), `"gpu-t4"`, `"gpu-t4b"`), 0o644)
		}, "source changed", cli.ExitFindings},
		{"source file added (empty)", func(tr *tree) {
			tr.write(filepath.Join("nodegroups", "zz.cue"), "", 0o644)
		}, "source changed", cli.ExitOK},
		{"source file removed", func(tr *tree) {
			tr.do(func() error { return os.Remove(filepath.Join(tr.dir, "nodegroups", "cpu-burst.cue")) })
		}, "source changed", cli.ExitFindings},
		{"source file renamed", func(tr *tree) {
			tr.do(func() error {
				return os.Rename(filepath.Join(tr.dir, gpu), filepath.Join(tr.dir, "nodegroups", "t4.cue"))
			})
		}, "source changed", -1},
		{"source in a CUE module", func(tr *tree) {
			tr.do(func() error { return os.Mkdir(filepath.Join(tr.dir, "cue.mod"), 0o755) })
		}, "CUE module", -1},
		{"artifact edited", func(tr *tree) {
			p := filepath.Join("out", "gce", "gpu-t4", "kube-env")
			tr.write(p, tr.read(p)+"X: y\n", 0o644)
		}, "differs from the record", cli.ExitFindings},
		{"artifact edited, same size", func(tr *tree) {
			p := filepath.Join("out", "cluster-autoscaler", "flags.txt")
			b := []byte(tr.read(p))
			b[len(b)-2] ^= 1
			tr.write(p, string(b), 0o644)
		}, "differs from the record", cli.ExitFindings},
		{"artifact added (a file nodegen does not own)", func(tr *tree) {
			tr.write(filepath.Join("out", "gce", "NOTES.txt"), "mine\n", 0o644)
		}, "not in the record", cli.ExitOK},
		{"artifact added (a link)", func(tr *tree) {
			tr.do(func() error { return os.Symlink("kube-env", filepath.Join(tr.dir, "out", "gce", "gpu-t4", "link")) })
		}, "not a regular file", cli.ExitOK},
		{"artifact removed", func(tr *tree) {
			tr.do(func() error { return os.Remove(filepath.Join(tr.dir, "out", "gce", "gpu-t4", "kube-env")) })
		}, "missing", cli.ExitFindings},
		{"mode changed", func(tr *tree) {
			tr.do(func() error {
				return os.Chmod(filepath.Join(tr.dir, "out", "gce", "gpu-t4", "startup-script.sh"), 0o644)
			})
		}, "mode 0644, recorded 0755", cli.ExitFindings},
		{"manifest edited (a field check ignores)", func(tr *tree) {
			p := filepath.Join("out", outdir.ManifestName)
			tr.write(p, strings.Replace(tr.read(p), `"format": 1,`, `"format": 1,`+"\n  ", 1), 0o644)
		}, "changed since the record", cli.ExitOK},
		{"manifest edited (an entry)", func(tr *tree) {
			p := filepath.Join("out", outdir.ManifestName)
			tr.write(p, strings.Replace(tr.read(p), `"mode": "0755"`, `"mode": "0644"`, 1), 0o644)
		}, "mode 0755, recorded 0644", cli.ExitFindings},
		{"manifest removed", func(tr *tree) {
			tr.do(func() error { return os.Remove(filepath.Join(tr.dir, "out", outdir.ManifestName)) })
		}, "no readable " + outdir.ManifestName, cli.ExitFindings},
		{"nodegen changed", func(tr *tree) {
			fastcheck.SetFingerprint(tr.t, "go-buildid:another/build")
		}, "nodegen changed", cli.ExitOK},
		{"environment: NODEGEN_MAX_MEMORY_MIB", func(tr *tree) {
			tr.t.Setenv("NODEGEN_MAX_MEMORY_MIB", "4096")
		}, "environment changed", cli.ExitOK},
		{"environment: CUE_DEBUG", func(tr *tree) {
			tr.t.Setenv("CUE_DEBUG", "")
		}, "environment changed", cli.ExitOK},
		{"environment: GODEBUG", func(tr *tree) {
			tr.t.Setenv("GODEBUG", "madvdontneed=1")
		}, "environment changed", cli.ExitOK},
		{"--source names another copy", func(tr *tree) {
			other := filepath.Join(tr.t.TempDir(), "nodegroups")
			tr.do(func() error { return os.CopyFS(other, os.DirFS(tr.src)) })
			tr.src = other
		}, "directories or environment changed", cli.ExitOK},
		{"--out names another copy", func(tr *tree) {
			other := filepath.Join(tr.t.TempDir(), "out")
			tr.do(func() error { return os.CopyFS(other, os.DirFS(tr.out)) })
			tr.out = other
		}, "no record", -1},
		{"record missing", func(tr *tree) {
			tr.do(func() error { return os.RemoveAll(os.Getenv("NODEGEN_CACHE_DIR")) })
		}, "no record", cli.ExitOK},
		{"record corrupt", func(tr *tree) {
			files, _ := filepath.Glob(filepath.Join(os.Getenv("NODEGEN_CACHE_DIR"), "check", "*"))
			if len(files) != 1 {
				tr.t.Fatalf("records: %v, want one", files)
			}
			tr.do(func() error { return os.WriteFile(files[0], []byte("{\"format\": 1,"), 0o644) })
		}, "record unreadable", cli.ExitOK},
		{"record of another format", func(tr *tree) {
			files, _ := filepath.Glob(filepath.Join(os.Getenv("NODEGEN_CACHE_DIR"), "check", "*"))
			if len(files) != 1 {
				tr.t.Fatalf("records: %v, want one", files)
			}
			b, _ := os.ReadFile(files[0])
			tr.do(func() error {
				return os.WriteFile(files[0], bytes.Replace(b, []byte("format 1\n"), []byte("format 2\n"), 1), 0o644)
			})
		}, "not a record of this format", cli.ExitOK},
	}
}

// TestShortcutFallsBack: every change to what a check depends on makes it
// take the full path; each case then answers as check --full does.
// (TestShortcutFallsBackStamped does the same with every file's stamp
// known.)
func TestShortcutFallsBack(t *testing.T) {
	for _, c := range fallBackCases() {
		t.Run(c.name+"/files read", func(t *testing.T) { fallBack(t, c, nil) })
	}
}

// fallBack checks case c on a fresh tree, on which stamp (when not nil)
// first makes every file's stamp stand for its content.
func fallBack(t *testing.T, c fallBackCase, stamp func(*testing.T)) {
	tr := newTree(t)
	if stamp != nil {
		stamp(t)
	}
	if ok, why, _ := tr.checkPath(); !ok {
		t.Fatalf("before the change: full path (%s), want the shortcut", why)
	}
	if stamp != nil {
		if ok, note, _ := tr.checkPath(); !ok || !strings.Contains(note, "read 0 of 6 source files and 0 of ") {
			t.Fatalf("before the change, second check: shortcut %v (%s), want the shortcut reading no file", ok, note)
		}
	}
	changeAndCheck(t, tr, c.change, c.reason, c.wantCode)
}

// changeAndCheck makes a change and requires the full path, for reason,
// with the exit code wantCode (-1: any, as long as check --full agrees).
func changeAndCheck(t *testing.T, tr *tree, change func(*tree), reason string, wantCode int) {
	t.Helper()
	{
		{
			c := struct {
				change   func(*tree)
				reason   string
				wantCode int
			}{change, reason, wantCode}
			c.change(tr)
			ok, why, code := tr.checkPath()
			if ok {
				t.Fatalf("after the change: the shortcut answered (exit %d), want the full path", code)
			}
			if !strings.Contains(why, c.reason) {
				t.Errorf("reason %q, want it to say %q", why, c.reason)
			}
			if c.wantCode >= 0 && code != c.wantCode {
				t.Errorf("exit %d, want %d", code, c.wantCode)
			}
		}
	}
}

// TestFlagsAreInputs: a flag that shapes the render (as the command line
// passes every flag but those that cannot) is part of the record's inputs.
func TestFlagsAreInputs(t *testing.T) {
	tr := newTree(t)
	in := fastcheck.Inputs{Source: tr.src, Out: tr.out, Flags: []string{"cluster=a"}}
	code, _, _ := tr.run("check", "--full") // a valid record of the inputs without flags
	if code != cli.ExitOK {
		t.Fatal("check --full failed")
	}
	seen, why, err := outdir.Intact(tr.out, outdir.Options{}, nil)
	if err != nil || why != "" {
		t.Fatalf("Intact: %q, %v", why, err)
	}
	manifest := seen.Manifest
	src, err := fastcheck.SourceDigest(tr.src)
	if err != nil {
		t.Fatal(err)
	}
	if err := fastcheck.Record(in, src, manifest); err != nil {
		t.Fatal(err)
	}
	if ok, why := fastcheck.Fresh(in); !ok {
		t.Fatalf("same flags: %s", why)
	}
	in.Flags = []string{"cluster=b"}
	if ok, why := fastcheck.Fresh(in); ok || !strings.Contains(why, "flags") {
		t.Fatalf("another flag value: fresh %v (%s), want the full path", ok, why)
	}
}

// TestFingerprintIsTheGoBuildID reads the test binary's build ID and
// compares it with what `go tool buildid` says.
func TestFingerprintIsTheGoBuildID(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to compare with")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := exec.Command(goTool, "tool", "buildid", exe).Output()
	if err != nil {
		t.Fatalf("go tool buildid: %v", err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := fastcheck.GoBuildID(f)
	if err != nil {
		t.Fatal(err)
	}
	if got != strings.TrimSpace(string(want)) {
		t.Fatalf("build ID %q, go tool buildid says %q", got, want)
	}
	if !fastcheck.ComputedBuildID(got) {
		t.Fatalf("the go command's build ID %q is not taken as computed", got)
	}
	fp, err := fastcheck.Fingerprint()
	if err != nil || fp != "go-buildid:"+got {
		t.Fatalf("fingerprint %q, %v; want go-buildid:%s", fp, err, got)
	}
	for _, id := range []string{"redacted", "", "a/b/c/d", got + "/x", strings.Repeat("A", 20) + "/" + strings.Repeat("A", 20)} {
		if fastcheck.ComputedBuildID(id) {
			t.Errorf("build ID %q taken as computed by the go command", id)
		}
	}
}
