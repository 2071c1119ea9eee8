package render_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestScriptsPassShellcheck runs bash -n and shellcheck on every script
// nodegen ships. CI installs shellcheck; without it (and outside CI) only
// bash -n runs.
func TestScriptsPassShellcheck(t *testing.T) {
	_, files := testsrc.Example(t)
	dir := t.TempDir()
	var paths []string
	for _, p := range files.Paths() {
		if strings.HasSuffix(p, ".sh") {
			path := filepath.Join(dir, strings.ReplaceAll(p, "/", "_"))
			if err := os.WriteFile(path, files[p], 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, path)
		}
	}
	remover := filepath.Join(dir, "taint-remover.sh")
	if err := os.WriteFile(remover, shippedScript(t, "taint-remover.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, remover)
	if len(paths) < 4 {
		t.Fatalf("only %d scripts", len(paths))
	}
	for _, p := range paths {
		if out, err := exec.Command("bash", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", filepath.Base(p), err, out)
		}
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("shellcheck is not installed; .ci/run installs it")
		}
		t.Skip("shellcheck not installed")
	}
	out, err := exec.Command("shellcheck", append([]string{"--shell=bash", "--severity=style"}, paths...)...).CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}
