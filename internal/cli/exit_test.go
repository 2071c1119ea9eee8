package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/testsrc"
)

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"vet", "--source", testsrc.Dir()}, cli.ExitOK},
		{[]string{"check", "--source", testsrc.Dir(), "--out", t.TempDir()}, cli.ExitFindings},
		{[]string{"vet", "--source", "does-not-exist"}, cli.ExitFindings},
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
