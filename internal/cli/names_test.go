package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestUnsafeNames: a source directory or a source file whose name holds a
// line break, a control character, bytes that are not UTF-8 or a character
// that makes text read other than it is, is refused with a usage error
// before anything is rendered, by every command that reads the source; out/
// is not created. (A NUL cannot be in a file name at all.)
func TestUnsafeNames(t *testing.T) {
	names := map[string]string{
		"carriage return":    "ng\rKUBE_X: y",
		"line feed":          "ng\nKUBE_X: y",
		"escape":             "ng\x1b[31m",
		"not UTF-8":          "ng\xff",
		"line separator":     "ng\u2028x",
		"bidi override":      "ng\u202Ex",
		"DEL":                "ng\x7f",
		"C1 next line":       "ng\u0085x",
		"byte-order mark":    "\uFEFFng",
		"isolate (Trojan)":   "ng\u2066x",
		"paragraph sep":      "ng\u2029x",
		"right-to-left mark": "ng\u200Fx",
	}
	for what, name := range names {
		for _, where := range []string{"directory", "file"} {
			t.Run(what+"/"+where, func(t *testing.T) {
				root := t.TempDir()
				src := filepath.Join(root, "nodegroups")
				if where == "directory" {
					src = filepath.Join(root, name)
				}
				if err := testsrc.CopyTo(src); err != nil {
					t.Skipf("this file system refuses the name: %v", err)
				}
				if where == "file" {
					if err := os.Rename(filepath.Join(src, "gpu-t4.cue"), filepath.Join(src, name+".cue")); err != nil {
						t.Skipf("this file system refuses the name: %v", err)
					}
				}
				out := filepath.Join(root, "out")
				for _, cmd := range []string{"gen", "check", "vet", "export"} {
					var stdout, stderr bytes.Buffer
					args := []string{cmd, "--source", src}
					if cmd == "gen" || cmd == "check" {
						args = append(args, "--out", out)
					}
					code := cli.Main(args, strings.NewReader(""), &stdout, &stderr)
					if code != cli.ExitUsage {
						t.Errorf("%s: exit %d, want %d (usage)\nstderr: %s", cmd, code, cli.ExitUsage, stderr.String())
					}
					if !strings.Contains(stderr.String(), "source "+where+" name ") || !strings.Contains(stderr.String(), "rename it") {
						t.Errorf("%s: stderr %q does not say which name to change", cmd, stderr.String())
					}
					if strings.ContainsAny(stderr.String(), "\r\x1b\u2028\u202E") {
						t.Errorf("%s: stderr carries the raw name: %q", cmd, stderr.String())
					}
				}
				if _, err := os.Lstat(out); !os.IsNotExist(err) {
					t.Errorf("out/ exists after refused runs: %v", err)
				}
			})
		}
	}
}
