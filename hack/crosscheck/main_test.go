package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// module writes a module whose packages type-check on some platforms only:
//   - the root package's g has a type error in its darwin file only;
//   - its dependency sub has a type error inside a function body in its
//     windows file only (so the dependencies' bodies must be checked);
//   - wide holds a constant that overflows int only where int is 32 bits
//     (so the platform's sizes must be used).
func module(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":           "module example.com/m\n\ngo 1.26\n",
		"m.go":             "package m\n\nimport \"example.com/m/sub\"\n\nfunc F() int { sub.H(); return g() }\n",
		"g_darwin.go":      "//go:build darwin\n\npackage m\n\nfunc g() int { return \"darwin\" }\n",
		"g_other.go":       "//go:build !darwin\n\npackage m\n\nfunc g() int { return 1 }\n",
		"sub/sub.go":       "package sub\n",
		"sub/h_windows.go": "package sub\n\nfunc H() { var n int = \"windows\"; _ = n }\n",
		"sub/h_other.go":   "//go:build !windows\n\npackage sub\n\nfunc H() {}\n",
		"wide/wide.go":     "package wide\n\nconst big = 1 << 40\n\nvar N int = big\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheck(t *testing.T) {
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "-mod=mod")
	dir := module(t)
	for _, tc := range []struct {
		platform string
		patterns []string
		want     string // "" for no error; else a part of the error
	}{
		{"linux/amd64", []string{"./..."}, ""},
		{"darwin/arm64", []string{"./..."}, `g_darwin.go:5:23: cannot use "darwin"`},
		{"windows/amd64", []string{"./..."}, `h_windows.go:3:24: cannot use "windows"`},
		{"windows/amd64", []string{"./wide"}, ""},
		{"windows/386", []string{"./wide"}, "wide.go:5:13: cannot use big"},
		{"linux/arm", []string{"./wide"}, "(overflows)"},
		{"linux/amd64", []string{"./nothing/..."}, "no such file or directory"},
		{"linux/amd64", []string{"example.com/m/nothing/..."}, "no package matches"},
		{"darwin", []string{"./..."}, "is not GOOS/GOARCH"},
	} {
		var out bytes.Buffer
		err := check(&out, dir, tc.platform, tc.patterns)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: %v", tc.platform, tc.patterns, err)
		case tc.want == "" && !strings.HasPrefix(out.String(), tc.platform+": "):
			t.Errorf("%s %v printed %q, want a line about the platform", tc.platform, tc.patterns, out.String())
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: error %v, want one containing %q", tc.platform, tc.patterns, err, tc.want)
		}
	}
}
