package testhooks

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// HookedTests lists exactly the tests of the files that build only with
// the tag: not those of files built without it, or with or without it.
func TestHookedTests(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a_test.go":     "//go:build nodegen_testhooks\n\npackage p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\nfunc TestB(t *testing.T) {}\nfunc Testing(t *testing.T) {}\nfunc helper(t *testing.T) {}\nfunc BenchmarkA(b *testing.B) {}\n",
		"b_test.go":     "// A comment.\n\n//go:build " + runtime.GOOS + " && nodegen_testhooks\n\npackage p\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {}\n",
		"c_test.go":     "//go:build nosuchos && nodegen_testhooks\n\npackage p\n\nimport \"testing\"\n\nfunc TestD(t *testing.T) {}\n",
		"plain_test.go": "package p\n\nimport \"testing\"\n\nfunc TestPlain(t *testing.T) {}\n",
		"off_test.go":   "//go:build !nodegen_testhooks\n\npackage p\n\nimport \"testing\"\n\nfunc TestOff(t *testing.T) {}\n",
		"any_test.go":   "//go:build nodegen_testhooks || !nodegen_testhooks\n\npackage p\n\nimport \"testing\"\n\nfunc TestAny(t *testing.T) {}\n",
		"hooks.go":      "//go:build nodegen_testhooks\n\npackage p\n\nimport \"testing\"\n\nfunc TestNotATestFile(t *testing.T) {}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := HookedTests(t, dir)
	// TestD needs another system as well: it is not built here at all.
	if want := []string{"TestA", "TestB", "TestC"}; !slices.Equal(got, want) {
		t.Errorf("HookedTests = %q, want %q", got, want)
	}
}
