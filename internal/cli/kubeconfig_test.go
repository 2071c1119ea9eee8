package cli_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestKubeconfigFromEnv: without --nodes or --kubeconfig, drift and rollout
// read the live cluster of $KUBECONFIG as kubectl does: a list of files,
// merged, the first file's current-context naming a context, cluster and
// user that only the second defines. The nodes come from that cluster's
// API server; a server the merge must not pick (the first file's own
// cluster) is never called.
func TestKubeconfigFromEnv(t *testing.T) {
	var listed, decoy atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/nodes" {
			http.NotFound(w, r)
			return
		}
		listed.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": [
			{"metadata": {"name": "orphan-node", "labels": {"nodegen.dev/node-group": "gone"}}}]}`))
	}))
	defer api.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		decoy.Add(1)
		http.Error(w, "not this cluster", http.StatusForbidden)
	}))
	defer other.Close()

	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := write("first.yaml", `apiVersion: v1
kind: Config
current-context: live
contexts:
- name: other
  context: {cluster: other, user: other}
clusters:
- name: other
  cluster: {server: `+other.URL+`}
users:
- name: other
  user: {token: other-token}
`)
	second := write("second.yaml", `apiVersion: v1
kind: Config
current-context: other
contexts:
- name: live
  context: {cluster: live, user: live}
clusters:
- name: live
  cluster: {server: `+api.URL+`}
users:
- name: live
  user: {token: live-token}
`)
	t.Setenv("KUBECONFIG", first+string(os.PathListSeparator)+second)
	t.Setenv("NODEGEN_CACHE_DIR", t.TempDir())

	for _, args := range [][]string{
		{"drift", "--source", testsrc.Dir()},
		{"rollout", "--source", testsrc.Dir()},
	} {
		before := listed.Load()
		var out, errb bytes.Buffer
		code := cli.Main(args, strings.NewReader(""), &out, &errb)
		if code == cli.ExitUsage || listed.Load() == before {
			t.Errorf("nodegen %s with $KUBECONFIG: exit %d, %d node lists from its cluster\nstdout: %s\nstderr: %s", args[0], code, listed.Load()-before, out.String(), errb.String())
		}
		if args[0] == "drift" && (code != cli.ExitFindings || !strings.Contains(out.String(), "orphan-node")) {
			t.Errorf("nodegen drift with $KUBECONFIG: exit %d, want %d and the cluster's node orphan-node reported:\n%s%s", code, cli.ExitFindings, out.String(), errb.String())
		}
	}
	if decoy.Load() != 0 {
		t.Errorf("the first file's own cluster was called %d times: the files were not merged as kubectl merges them", decoy.Load())
	}

	// --kubeconfig wins over $KUBECONFIG, as in kubectl.
	only := write("only.yaml", strings.Replace(mustRead(t, first), "current-context: live", "current-context: other", 1))
	before := listed.Load()
	var out, errb bytes.Buffer
	cli.Main([]string{"drift", "--source", testsrc.Dir(), "--kubeconfig", only}, strings.NewReader(""), &out, &errb)
	if listed.Load() != before || decoy.Load() == 0 {
		t.Errorf("drift --kubeconfig %s did not read that file's cluster: %s", only, errb.String())
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKubeconfigFromHome: without $KUBECONFIG, drift and rollout read the
// live cluster of ~/.kube/config, as kubectl does; with neither, they say
// what they need.
func TestKubeconfigFromHome(t *testing.T) {
	var listed atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/nodes" {
			http.NotFound(w, r)
			return
		}
		listed.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": [
			{"metadata": {"name": "orphan-node", "labels": {"nodegen.dev/node-group": "gone"}}}]}`))
	}))
	defer api.Close()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("NODEGEN_CACHE_DIR", t.TempDir())
	for _, cmd := range []string{"drift", "rollout"} {
		var out, errb bytes.Buffer
		if code := cli.Main([]string{cmd, "--source", testsrc.Dir()}, strings.NewReader(""), &out, &errb); code != cli.ExitUsage || !strings.Contains(errb.String(), "$KUBECONFIG or ~/.kube/config") {
			t.Errorf("nodegen %s without a kubeconfig: exit %d, want %d naming ~/.kube/config\n%s", cmd, code, cli.ExitUsage, errb.String())
		}
	}
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(`apiVersion: v1
kind: Config
current-context: live
contexts:
- name: live
  context: {cluster: live, user: live}
clusters:
- name: live
  cluster: {server: `+api.URL+`}
users:
- name: live
  user: {token: live-token}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"drift", "rollout"} {
		before := listed.Load()
		var out, errb bytes.Buffer
		code := cli.Main([]string{cmd, "--source", testsrc.Dir()}, strings.NewReader(""), &out, &errb)
		if listed.Load() == before {
			t.Errorf("nodegen %s with ~/.kube/config: exit %d, no node list from its cluster\nstdout: %s\nstderr: %s", cmd, code, out.String(), errb.String())
		}
		if cmd == "drift" && (code != cli.ExitFindings || !strings.Contains(out.String(), "orphan-node")) {
			t.Errorf("nodegen drift with ~/.kube/config: exit %d, want %d and orphan-node reported\n%s%s", code, cli.ExitFindings, out.String(), errb.String())
		}
	}
}
