package cli_test

import (
	"bytes"
	"runtime/debug"
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
