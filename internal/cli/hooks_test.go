package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// hook is an entry of .pre-commit-hooks.yaml with the keys pre-commit's
// manifest schema defines that nodegen uses.
type hook struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Description   string `json:"description"`
	Entry         string `json:"entry"`
	Language      string `json:"language"`
	PassFilenames *bool  `json:"pass_filenames"`
	Files         string `json:"files"`
}

// TestPreCommitHooks checks the pre-commit manifest: the nodegen-check
// hook runs `nodegen check` on the repository (not on file names), only
// when the source or the output is touched, and its entry is a command
// that passes on a clean tree and fails on a stale one.
func TestPreCommitHooks(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testsrc.RepoRoot(), ".pre-commit-hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var hooks []hook
	if err := yaml.UnmarshalStrict(b, &hooks); err != nil {
		t.Fatalf("strict decode of .pre-commit-hooks.yaml: %v", err)
	}
	var check *hook
	for i, h := range hooks {
		if h.ID == "" || h.Name == "" || h.Entry == "" || h.Language != "golang" {
			t.Errorf("hook %d: id, name, entry and language golang are required: %+v", i, h)
		}
		if h.ID == "nodegen-check" {
			check = &hooks[i]
		}
	}
	if check == nil {
		t.Fatal("no nodegen-check hook")
	}
	if check.PassFilenames == nil || *check.PassFilenames {
		t.Error("nodegen-check must set pass_filenames: false (check takes no arguments)")
	}
	// pre-commit matches `files` with Python's re.search on paths
	// relative to the repository root; Go's MatchString searches too.
	files := regexp.MustCompile(check.Files)
	for path, want := range map[string]bool{
		"nodegroups/gpu-t4.cue":         true,
		"out/terraform/main.tf":         true,
		"out/gce/gpu-t4/kube-env":       true,
		"README.md":                     false,
		"docs/nodegroups/notes.md":      false,
		"cmd/nodegen/main.go":           false,
		"infra/out/terraform/main.tf":   false,
		"nodegroups-old/gpu-t4.cue.bak": false,
	} {
		if got := files.MatchString(path); got != want {
			t.Errorf("files %q matches %s: %v, want %v", check.Files, path, got, want)
		}
	}

	args := strings.Fields(check.Entry)
	if len(args) < 2 || args[0] != "nodegen" {
		t.Fatalf("entry %q does not run nodegen", check.Entry)
	}
	dir := t.TempDir()
	run := func(args ...string) int {
		var out, errb bytes.Buffer
		return cli.Main(append(args, "--source", testsrc.Dir(), "--out", filepath.Join(dir, "out")), strings.NewReader(""), &out, &errb)
	}
	if code := run(args[1:]...); code != cli.ExitUsage {
		t.Errorf("the hook's entry without out/: exit %d, want %d (gen never run)", code, cli.ExitUsage)
	}
	if code := run("gen"); code != cli.ExitOK {
		t.Fatalf("gen: exit %d", code)
	}
	if code := run(args[1:]...); code != cli.ExitOK {
		t.Errorf("the hook's entry on a fresh out/: exit %d, want 0", code)
	}
}
