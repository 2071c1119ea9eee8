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

// Exit codes of explain and drift: 0 fit / no drift, 1 no fit / drift /
// explain's bad input, 2 usage, 3 drift could not read what it compares.
func TestExplainDriftExitCodes(t *testing.T) {
	t.Setenv("KUBECONFIG", "") // drift without input is then a usage mistake
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fits := write("fits.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: c}]}\n")
	noFit := write("nofit.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector: {example.com/location: onprem}\n  containers: [{name: c, image: c}]\n")
	bad := write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containerz: []}\n")
	noPods := write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
	emptyNodes := write("nodes.json", `{"apiVersion": "v1", "kind": "List", "items": []}`)
	orphan := write("orphan.json", `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"nodegen.dev/node-group": "gone"}}}]}`)
	src := []string{"--source", testsrc.Dir()}
	cases := []struct {
		args []string
		want int
	}{
		{append([]string{"explain", "-f", fits}, src...), cli.ExitOK},
		{append([]string{"explain", "-f", fits, "-o", "json"}, src...), cli.ExitOK},
		{append([]string{"explain", "-f", fits, "-f", noFit}, src...), cli.ExitFindings},
		{append([]string{"explain", "-f", bad}, src...), cli.ExitFindings},
		{append([]string{"explain", "-f", noPods}, src...), cli.ExitFindings},
		{append([]string{"explain", "-f", filepath.Join(dir, "missing.yaml")}, src...), cli.ExitFindings},
		{append([]string{"explain"}, src...), cli.ExitUsage},
		{append([]string{"explain", "-f", fits, "-o", "yaml"}, src...), cli.ExitUsage},
		{append([]string{"explain", "-f", fits, "extra"}, src...), cli.ExitUsage},
		{append([]string{"drift", "--nodes", emptyNodes}, src...), cli.ExitOK},
		{append([]string{"drift", "--nodes", orphan}, src...), cli.ExitFindings},
		{append([]string{"drift", "--nodes", bad}, src...), cli.ExitError},
		{append([]string{"drift"}, src...), cli.ExitUsage},
		{append([]string{"drift", "--nodes", emptyNodes, "--kubeconfig", emptyNodes}, src...), cli.ExitUsage},
		{append([]string{"drift", "--nodes", emptyNodes, "--now", "yesterday"}, src...), cli.ExitUsage},
		{append([]string{"drift", "--nodes", emptyNodes, "--stuck-after", "soon"}, src...), cli.ExitUsage},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if got := cli.Main(c.args, strings.NewReader(""), &out, &errb); got != c.want {
			t.Errorf("nodegen %s: exit %d, want %d\nstderr: %s", strings.Join(c.args, " "), got, c.want, errb.String())
		}
	}
}
