package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
)

// TestInit: init writes into a new directory a source that vet accepts and
// gen renders; it refuses a directory that holds anything (and changes
// nothing there), leaves nothing when the values do not pass vet (a
// placeholder CA pin), and names the flags it misses.
func TestInit(t *testing.T) {
	t.Setenv("NODEGEN_CACHE_DIR", t.TempDir())
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cli.Main(args, strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	root := t.TempDir()
	src := filepath.Join(root, "nodegroups")
	flags := func(dir, hash string) []string {
		return []string{"init", "--dir", dir, "--name", "lab", "--project", "lab-project-1", "--region", "europe-west4",
			"--control-plane-endpoint", "192.168.10.5:6443", "--kubernetes-version", "1.35.2", "--ca-cert-hash", hash}
	}
	const pin = "sha256:5d1e9b2c7a4f3e8d6c0b1a2f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d"
	if code, _, errb := run(flags(src, pin)...); code != cli.ExitOK {
		t.Fatalf("init: exit %d\n%s", code, errb)
	}
	if code, _, errb := run("vet", "--source", src); code != cli.ExitOK || errb != "" {
		t.Fatalf("vet of init's source: exit %d\n%s", code, errb)
	}
	out := filepath.Join(root, "out")
	if code, _, errb := run("gen", "--source", src, "--out", out); code != cli.ExitOK {
		t.Fatalf("gen of init's source: exit %d\n%s", code, errb)
	}
	for _, p := range []string{"gce/autoscaler/kube-env", "terraform/nodegroup-autoscaler.tf", "docs/day0.md"} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Errorf("gen of init's source: %v", err)
		}
	}

	before, err := os.ReadFile(filepath.Join(src, "cluster.cue"))
	if err != nil {
		t.Fatal(err)
	}
	code, _, errb := run(flags(src, pin)...)
	if code != cli.ExitUsage || !strings.Contains(errb, "holds files already") {
		t.Errorf("init into a directory with files: exit %d, %q", code, errb)
	}
	if after, _ := os.ReadFile(filepath.Join(src, "cluster.cue")); !bytes.Equal(after, before) {
		t.Errorf("init changed a file of a directory it refused")
	}

	bad := filepath.Join(root, "bad")
	code, _, errb = run(flags(bad, "sha256:"+strings.Repeat("0", 64))...)
	if code != cli.ExitFindings || !strings.Contains(errb, "is a placeholder") {
		t.Errorf("init with a placeholder CA pin: exit %d, %q", code, errb)
	}
	if entries, _ := os.ReadDir(bad); len(entries) != 0 {
		t.Errorf("init left %d files of a source vet refuses", len(entries))
	}

	code, _, errb = run("init", "--dir", filepath.Join(root, "new"), "--name", "lab")
	if code != cli.ExitUsage || !strings.Contains(errb, "--project, --region, --control-plane-endpoint, --kubernetes-version, --ca-cert-hash") {
		t.Errorf("init without its values: exit %d, %q", code, errb)
	}
}
