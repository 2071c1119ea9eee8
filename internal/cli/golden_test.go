package cli_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestGoldenShippedExample is the one test that reads nodegroups/: it
// renders the shipped example (or the user's edit of it) and compares the
// result with the committed out/ byte for byte, so that `go test ./...`
// alone catches a stale out/ (with --full: the render, never the shortcut
// of a record a previous run left). Every other test uses its own fixtures.
func TestGoldenShippedExample(t *testing.T) {
	root := testsrc.RepoRoot()
	var out, errb bytes.Buffer
	code := cli.Main([]string{"check", "--full", "--source", testsrc.ShippedDir(), "--out", filepath.Join(root, "out")}, strings.NewReader(""), &out, &errb)
	if code != cli.ExitOK {
		t.Fatalf("out/ does not match the rendering of nodegroups/ (exit %d): run nodegen gen (go run ./cmd/nodegen gen) and commit out/\n%s%s", code, out.String(), errb.String())
	}
}

// TestGoldenMeshExample does for the shipped fleet example,
// examples/mesh/nodegroups, what TestGoldenShippedExample does for
// nodegroups/: its committed out/ (examples/mesh/out) must be what gen
// renders.
func TestGoldenMeshExample(t *testing.T) {
	dir := filepath.Join(testsrc.RepoRoot(), "examples", "mesh")
	var out, errb bytes.Buffer
	code := cli.Main([]string{"check", "--source", filepath.Join(dir, "nodegroups"), "--out", filepath.Join(dir, "out")}, strings.NewReader(""), &out, &errb)
	if code != cli.ExitOK {
		t.Fatalf("examples/mesh/out does not match the rendering of examples/mesh/nodegroups (exit %d): run go run ./cmd/nodegen gen --source examples/mesh/nodegroups --out examples/mesh/out and commit it\n%s%s", code, out.String(), errb.String())
	}
}
