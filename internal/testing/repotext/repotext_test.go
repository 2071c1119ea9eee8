package repotext_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rule is one kind of text no tracked file may hold. The expressions are
// written so that this file does not match them itself.
type rule struct {
	what string
	re   *regexp.Regexp
}

var rules = []rule{
	{"a reference to a numbered issue (say what the change does instead)", regexp.MustCompile(`\b[Ii]ssue\s+#?[0-9]`)},
	{"a reference to a task brief (say what the change does instead)", regexp.MustCompile(`\bthe\s+brief\b`)},
	{"a path into documents outside the repository (cite the upstream source: repository, tag, file)", regexp.MustCompile(`\bshared/+docs\b`)},
	// An absolute path of a build or developer machine: a home folder, the
	// root user's home, a scratch folder or a work folder. Paths a product
	// uses on its own machines (/etc/..., /var/lib/...) are not these.
	{"an absolute path of a machine (use a path relative to the repository, $HOME or $TMPDIR)", regexp.MustCompile(`(^|[\s"'(=:,\x60])/+(work|root|home|Users|tmp)/+[A-Za-z0-9._~-]`)},
}

// finding is one line that breaks a rule.
type finding struct {
	line int
	what string
	text string
}

// scan returns every line of content that breaks a rule.
func scan(content []byte) []finding {
	var found []finding
	for i, line := range strings.Split(string(content), "\n") {
		for _, r := range rules {
			if r.re.MatchString(line) {
				found = append(found, finding{line: i + 1, what: r.what, text: strings.TrimSpace(line)})
			}
		}
	}
	return found
}

// TestScan proves each rule catches what it is for and leaves ordinary
// text alone, so that a clean repository means something.
func TestScan(t *testing.T) {
	bad := []string{
		"// see iss" + "ue 14 for why",
		"Iss" + "ue 15, items 1, 4, 5 and 6",
		"as the bri" + "ef asks",
		"facts in ../shared" + "/docs/facts.md",
		"export DIR=/wo" + "rk/main/out",
		"cd /ro" + "ot/.cache/nodegen",
		"output in /tm" + "p/ci-cold/log",
		"(from /ho" + "me/alice/src)",
		"`/Use" + "rs/bob/nodegen`",
	}
	for _, line := range bad {
		if got := scan([]byte("ok\n" + line + "\n")); len(got) != 1 || got[0].line != 2 {
			t.Errorf("scan(%q) = %v, want one finding on line 2", line, got)
		}
	}
	good := []string{
		"mountPath: /tmp",
		`work="$(mktemp -d "${TMPDIR:-/tmp}/nodegen-testcp.XXXXXX")"`,
		"/var/lib/kubelet/config.yaml and /etc/kubernetes/pki",
		"an issue tracker, a brief pause",
		"docs/shared-vpc.md",
		"${XDG_CACHE_HOME:-$HOME/.cache}/nodegen/testcp",
		"https://github.com/kubernetes/kubernetes/tree/v1.37.2/cmd",
	}
	for _, line := range good {
		if got := scan([]byte(line)); len(got) != 0 {
			t.Errorf("scan(%q) = %v, want nothing", line, got)
		}
	}
}

// TestTrackedFilesSpeakAboutTheProject reads every text file git tracks,
// generated output included, and fails on each line that breaks a rule.
func TestTrackedFilesSpeakAboutTheProject(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s is not a git checkout: %v", root, err)
		}
		t.Skipf("not a git checkout (%v): the tracked files are unknown", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but git is not on PATH: %v", err)
		}
		t.Skipf("git is not on PATH: %v", err)
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(files) < 10 {
		t.Fatalf("git ls-files listed %d files, want the repository's", len(files))
	}
	read := 0
	for _, name := range files {
		content, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(content, 0) >= 0 {
			continue // binary
		}
		read++
		for _, f := range scan(content) {
			t.Errorf("%s:%d: %s:\n\t%s", name, f.line, f.what, f.text)
		}
	}
	if read == 0 {
		t.Fatal("read no tracked text file")
	}
	t.Logf("read %d tracked text files", read)
}
