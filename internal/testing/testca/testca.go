// Package testca finds or builds the Cluster Autoscaler binary that the
// system tests run: kubernetes/autoscaler's cluster-autoscaler at the
// pinned tag, GCE provider only, optionally with a patch, built by
// hack/testca/build.sh into a cache outside the repository.
package testca

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// Version is the autoscaler release the system tests build (build.sh's
// default CA_VERSION).
const Version = "1.35.2"

// Environment variables read here (and by hack/testca/build.sh).
const (
	// EnvSource says where the autoscaler's source is: a folder, a .tar.gz
	// of kubernetes/autoscaler's cluster-autoscaler/ folder at the tag, or
	// a git URL to clone the tag from.
	EnvSource = "NODEGEN_CA_SOURCE"
	// EnvRequire, "1", makes a missing source fail the tests that need
	// the autoscaler instead of skipping them (CI sets it).
	EnvRequire = "NODEGEN_REQUIRE_CA"
)

var (
	mu     sync.Mutex
	builds = map[string]string{} // patch digest → binary, or "" after a failure
	errs   = map[string]string{}
)

// Binary returns the path of the autoscaler binary, stock for a nil patch,
// else with patch applied, building it first if the cache lacks it (the
// first build on a machine takes minutes; a patched one after the stock
// one about a minute). Without a source (EnvSource unset) the test is
// skipped, or failed when EnvRequire is "1".
func Binary(t testing.TB, patch []byte) string {
	t.Helper()
	key := "stock"
	if patch != nil {
		sum := sha256.Sum256(patch)
		key = hex.EncodeToString(sum[:8])
	}
	mu.Lock()
	defer mu.Unlock()
	if bin, ok := builds[key]; ok {
		if bin == "" {
			t.Fatalf("testca: the autoscaler build failed earlier in this run:\n%s", errs[key])
		}
		return bin
	}
	args := []string{script()}
	if patch != nil {
		f := filepath.Join(t.TempDir(), "autoscaler.patch")
		if err := os.WriteFile(f, patch, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--patch", f)
	}
	cmd := exec.Command("bash", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "CA_VERSION="+Version)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
		msg := "testca: no Cluster Autoscaler source: set " + EnvSource + " to kubernetes/autoscaler's cluster-autoscaler/ folder at tag cluster-autoscaler-" + Version + ", a .tar.gz of it, or https://github.com/kubernetes/autoscaler.git"
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(msg + " (" + EnvRequire + "=1)")
		}
		t.Skip(msg)
	}
	if err != nil {
		builds[key], errs[key] = "", stderr.String()
		t.Fatalf("testca: hack/testca/build.sh: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	bin := lines[len(lines)-1]
	builds[key] = bin
	t.Logf("testca: %s", strings.TrimSpace(stderr.String()))
	return bin
}

func script() string {
	return filepath.Join(testsrc.RepoRoot(), "hack", "testca", "build.sh")
}
