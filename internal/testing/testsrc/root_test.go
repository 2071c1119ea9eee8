package testsrc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoRoot: the repository's root is found whether or not the test
// binary was built with -trimpath (CI builds with it): its go.mod declares
// this module, and the tests' sources are where Dir and FleetDir say.
func TestRepoRoot(t *testing.T) {
	root := RepoRoot()
	if !filepath.IsAbs(root) {
		t.Errorf("RepoRoot() = %q, want an absolute path", root)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatalf("RepoRoot() = %q: %v", root, err)
	}
	if first, _, _ := strings.Cut(string(b), "\n"); first != "module github.com/nodegen/nodegen" {
		t.Errorf("%s/go.mod begins %q, want this module", root, first)
	}
	for _, dir := range []string{Dir(), FleetDir(), ShippedCopyDir(), ShippedDir()} {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
			t.Errorf("%s: %d entries, %v; want the source", dir, len(entries), err)
		}
	}
}
