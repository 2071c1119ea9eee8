package cli_test

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"vet", "--source", testsrc.Dir()}, cli.ExitOK},
		{[]string{"check", "--source", testsrc.Dir(), "--out", t.TempDir()}, cli.ExitFindings},
		{[]string{"vet", "--source", "does-not-exist"}, cli.ExitUsage},
		{[]string{"vet", "surplus"}, cli.ExitUsage},
		{[]string{"gen", "--bogus"}, cli.ExitUsage},
		{[]string{"frobnicate"}, cli.ExitUsage},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if got := cli.Main(c.args, strings.NewReader(""), &out, &errb); got != c.want {
			t.Errorf("nodegen %s: exit %d, want %d\nstderr: %s", strings.Join(c.args, " "), got, c.want, errb.String())
		}
	}
}

// TestVersionOf: the version names the release or (devel), the VCS
// revision with +dirty for a modified tree, and the Go version.
func TestVersionOf(t *testing.T) {
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"}}, "v0.2.0 go1.26.8"},
		// The forms the README's Install section shows: a checkout of a
		// commit (Go's pseudo-version), of a tag, and with local changes.
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261130173632-25ef017a165f"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "25ef017a165fc1fa4dd1cc64e1f38a39dfccee64"}, {Key: "vcs.modified", Value: "false"}}},
			"v0.0.0-20261130173632-25ef017a165f (25ef017a165fc1fa4dd1cc64e1f38a39dfccee64) go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "25ef017a165fc1fa4dd1cc64e1f38a39dfccee64"}}},
			"v1.2.3 (25ef017a165fc1fa4dd1cc64e1f38a39dfccee64) go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261130173632-25ef017a165f+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "25ef017a165fc1fa4dd1cc64e1f38a39dfccee64"}, {Key: "vcs.modified", Value: "true"}}},
			"v0.0.0-20261130173632-25ef017a165f+dirty (25ef017a165fc1fa4dd1cc64e1f38a39dfccee64+dirty) go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "24f693b"}, {Key: "vcs.modified", Value: "true"}}}, "(devel) (24f693b+dirty) go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}, "(devel) (abc) go1.26.8"},
	} {
		if got := cli.VersionOf(&tc.bi); got != tc.want {
			t.Errorf("VersionOf(%+v) = %q, want %q", tc.bi, got, tc.want)
		}
	}
}

// TestVersionOneOutput: nodegen version, --version and -v print the same
// line, to stdout, and exit 0.
func TestVersionOneOutput(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		var out, errb bytes.Buffer
		if code := cli.Main(args, strings.NewReader(""), &out, &errb); code != cli.ExitOK || errb.Len() != 0 {
			t.Fatalf("nodegen %s: exit %d, stderr %q", args[0], code, errb.String())
		}
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] || outs[0] != outs[2] {
		t.Errorf("nodegen version, --version and -v differ:\n%q\n%q\n%q", outs[0], outs[1], outs[2])
	}
	if !strings.HasPrefix(outs[0], "nodegen ") || strings.Count(outs[0], "\n") != 1 {
		t.Errorf("nodegen version printed %q, want one line nodegen <version> ...", outs[0])
	}
}

// TestBareUsage: nodegen without a command is a usage mistake: exit 2,
// nothing on stdout, the usage with every command on stderr.
func TestBareUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := cli.Main(nil, strings.NewReader(""), &out, &errb); code != cli.ExitUsage {
		t.Errorf("nodegen: exit %d, want %d (usage)", code, cli.ExitUsage)
	}
	if out.Len() != 0 {
		t.Errorf("nodegen wrote to stdout: %q", out.String())
	}
	for _, want := range append([]string{"USAGE:"}, cli.CommandNames()...) {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("nodegen's stderr does not show %q:\n%s", want, errb.String())
		}
	}
	// --help is asked for: exit 0, on stdout.
	out.Reset()
	errb.Reset()
	if code := cli.Main([]string{"--help"}, strings.NewReader(""), &out, &errb); code != cli.ExitOK || !strings.Contains(out.String(), "USAGE:") {
		t.Errorf("nodegen --help: exit %d, stdout %q", code, out.String())
	}
}

// TestCommandsDocumented: cmd/nodegen's package doc and the README's
// Commands block show every command nodegen has, and no other.
func TestCommandsDocumented(t *testing.T) {
	root := testsrc.RepoRoot()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, "cmd", "nodegen", "main.go"), nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(readme), "## Commands\n\n```\n")
	block, _, _ = strings.Cut(block, "```\n")
	usage := regexp.MustCompile(`(?m)^\s*nodegen ([a-z]+)\b`)
	for what, text := range map[string]string{"cmd/nodegen's package doc": f.Doc.Text(), "README.md's Commands block": block} {
		var shown []string
		for _, m := range usage.FindAllStringSubmatch(text, -1) {
			shown = append(shown, m[1])
		}
		if want := cli.CommandNames(); !slices.Equal(shown, want) {
			t.Errorf("%s shows the commands %v, nodegen has %v (in this order)", what, shown, want)
		}
	}
}
