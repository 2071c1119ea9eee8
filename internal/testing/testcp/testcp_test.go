package testcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

func nodeTaints(t *testing.T, cp *ControlPlane, name string) []taint {
	t.Helper()
	out, _, err := cp.Kubectl(t, "get", "node", name, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var node struct {
		Spec struct {
			Taints []taint `json:"taints"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &node); err != nil {
		t.Fatalf("decoding node %s: %v\n%s", name, err, out)
	}
	return node.Spec.Taints
}

func TestNodeTaintRemoval(t *testing.T) {
	t.Parallel()
	cp := Start(t)

	const name = "gpu-node-1"
	const startup = "nodegen.io/startup"
	node := fmt.Sprintf(`{
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {"name": %q, "labels": {"nodegen.io/group": "gpu"}},
  "spec": {"taints": [{"key": %q, "value": "pending", "effect": "NoSchedule"}]}
}`, name, startup)
	create := cp.KubectlCmd(t, "create", "-f", "-")
	create.Stdin = strings.NewReader(node)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("kubectl create: %v\n%s", err, out)
	}

	// TaintNodesByCondition adds the not-ready taint to every new Node.
	notReady := taint{Key: "node.kubernetes.io/not-ready", Effect: "NoSchedule"}
	taints := nodeTaints(t, cp, name)
	idx := -1
	for i, tn := range taints {
		if tn.Key == startup {
			idx = i
		}
	}
	if idx < 0 || len(taints) != 2 || !containsTaint(taints, notReady) {
		t.Fatalf("taints of new node = %+v, want %s:NoSchedule and %+v", taints, startup, notReady)
	}

	// The "test" op makes the removal fail if the index no longer points at
	// the startup taint.
	patch := fmt.Sprintf(`[{"op":"test","path":"/spec/taints/%d/key","value":%q},{"op":"remove","path":"/spec/taints/%d"}]`,
		idx, startup, idx)
	if _, _, err := cp.Kubectl(t, "patch", "node", name, "--type=json", "-p", patch); err != nil {
		t.Fatal(err)
	}
	if got := nodeTaints(t, cp, name); len(got) != 1 || got[0] != notReady {
		t.Fatalf("taints after removal = %+v, want only %+v", got, notReady)
	}

	// The same patch again must be refused: the test op no longer holds.
	_, stderr, err := cp.Kubectl(t, "patch", "node", name, "--type=json", "-p", patch)
	if err == nil {
		t.Fatal("repeating the removal patch succeeded, want a failed test operation")
	}
	if !strings.Contains(stderr, "invalid") {
		t.Errorf("stderr of the refused patch = %q, want an invalid-request error", stderr)
	}
	if got := nodeTaints(t, cp, name); len(got) != 1 || got[0] != notReady {
		t.Fatalf("taints after the refused patch = %+v, want only %+v", got, notReady)
	}
}

func containsTaint(taints []taint, want taint) bool {
	for _, tn := range taints {
		if tn == want {
			return true
		}
	}
	return false
}

func TestIdentities(t *testing.T) {
	t.Parallel()
	cp := Start(t)

	const sa = "system:serviceaccount:kube-system:taint-remover"
	for _, args := range [][]string{
		{"create", "serviceaccount", "taint-remover", "-n", "kube-system"},
		{"create", "clusterrole", "node-reader", "--verb=get,list", "--resource=nodes"},
		{"create", "clusterrolebinding", "node-reader", "--clusterrole=node-reader",
			"--serviceaccount=kube-system:taint-remover"},
	} {
		if _, _, err := cp.Kubectl(t, args...); err != nil {
			t.Fatal(err)
		}
	}

	whoami := func(u *User) string {
		t.Helper()
		out, _, err := u.Kubectl(t, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := whoami(cp.Admin()); !strings.HasPrefix(got, AdminUser+" ") || !strings.Contains(got, "system:masters") {
		t.Errorf("admin whoami = %q, want user %s in system:masters", got, AdminUser)
	}

	for _, u := range []*User{cp.ServiceAccount(t, "kube-system", "taint-remover"), cp.Impersonate(t, sa)} {
		if u.Name != sa {
			t.Errorf("User.Name = %q, want %q", u.Name, sa)
		}
		if got := whoami(u); !strings.HasPrefix(got, sa+" ") || !strings.Contains(got, "system:serviceaccounts:kube-system") {
			t.Errorf("whoami with %s = %q, want user %s in system:serviceaccounts:kube-system", u.Kubeconfig, got, sa)
		}
		if _, _, err := u.Kubectl(t, "get", "nodes"); err != nil {
			t.Errorf("RBAC should let %s list nodes: %v", sa, err)
		}
		_, stderr, err := u.Kubectl(t, "delete", "node", "gpu-node-1")
		if err == nil || !strings.Contains(stderr, "Forbidden") {
			t.Errorf("RBAC should forbid %s to delete nodes; err=%v stderr=%q", sa, err, stderr)
		}
	}

	// The ServiceAccount token is a plain bearer token: no kubectl needed.
	saUser := cp.ServiceAccount(t, "kube-system", "taint-remover")
	for token, want := range map[string]int{saUser.Token: http.StatusOK, "not-a-token": http.StatusUnauthorized} {
		req, err := http.NewRequest(http.MethodGet, cp.URL+"/api/v1/nodes", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := cp.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /api/v1/nodes with token %.10s...: %s, want %d", token, resp.Status, want)
		}
	}
}

func TestDefaultVersionsMatchBuildScript(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "hack", "testcp", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"K8S_VERSION": KubernetesVersion, "ETCD_VERSION": EtcdVersion} {
		line := fmt.Sprintf(`%s="${%s:-%s}"`, name, name, want)
		if !strings.Contains(string(b), line) {
			t.Errorf("build.sh does not contain %s; keep its defaults and the constants in testcp.go in step", line)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	want := "k8s-" + KubernetesVersion + "-etcd-" + EtcdVersion
	for _, tc := range []struct{ cache, xdg, home, want string }{
		{"/c", "/x", "/h", "/c/" + want},
		{"", "/x", "/h", "/x/nodegen/testcp/" + want},
		{"", "", "/h", "/h/.cache/nodegen/testcp/" + want},
	} {
		t.Setenv(EnvCache, tc.cache)
		t.Setenv("XDG_CACHE_HOME", tc.xdg)
		t.Setenv("HOME", tc.home)
		got, err := DefaultDir()
		if err != nil || got != tc.want {
			t.Errorf("DefaultDir() with cache=%q xdg=%q home=%q = %q, %v; want %q",
				tc.cache, tc.xdg, tc.home, got, err, tc.want)
		}
	}
}

func TestFindBinariesMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	if err := os.WriteFile(filepath.Join(dir, "kube-apiserver"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := FindBinaries()
	if err == nil || !strings.Contains(err.Error(), "etcd") || !strings.Contains(err.Error(), "hack/testcp/build.sh") {
		t.Fatalf("FindBinaries() error = %v, want one naming etcd and hack/testcp/build.sh", err)
	}
}

func TestStartDetectsPortConflict(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\necho 'listen tcp 127.0.0.1:2379: bind: address already in use' >&2\nexit 1\n"
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := start(t, bin, Options{})
	if !errors.Is(err, errPortInUse) {
		t.Fatalf("start with an etcd that cannot bind: error %v, want one wrapping errPortInUse", err)
	}
}

// TestProduction: with Options{Production: true} the API server runs the
// Node authorizer and NodeRestriction, and kubeadm's bindings exist; a
// kubelet's certificate from Node authenticates as system:node:<name> in
// system:nodes and is held to its own Node. Without the option, RBAC alone
// gives the same certificate nothing.
func TestProduction(t *testing.T) {
	t.Parallel()
	cp := StartWith(t, Options{Production: true})
	plain := Start(t)

	for _, o := range KubeadmBindings() {
		md := o["metadata"].(map[string]any)
		kind := strings.ToLower(o["kind"].(string))
		if _, _, err := cp.Kubectl(t, "get", kind, md["name"].(string)); err != nil {
			t.Errorf("production: %v", err)
		}
		if _, stderr, err := plain.Kubectl(t, "get", kind, md["name"].(string)); err == nil || !strings.Contains(stderr, "NotFound") {
			t.Errorf("plain RBAC: %s %s exists (%v)", kind, md["name"], err)
		}
	}

	kubelet := cp.Node(t, "worker-1")
	out, _, err := kubelet.Kubectl(t, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "system:node:worker-1 ") || !strings.Contains(out, `"system:nodes"`) {
		t.Errorf("the kubelet's whoami = %q, want system:node:worker-1 in system:nodes", out)
	}
	create := func(u *User, name string, labels string) (string, error) {
		t.Helper()
		cmd := u.KubectlCmd(t, "create", "-f", "-")
		cmd.Stdin = strings.NewReader(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + name + `","labels":{` + labels + `}}}`)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	// Its own Node, as a kubelet registers it.
	if out, err := create(kubelet, "worker-1", `"example.com/pool":"a"`); err != nil {
		t.Fatalf("the kubelet creating its own Node: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name, labels, want string
	}{
		{"worker-2", "", `node "worker-1" is not allowed to modify node "worker-2"`},
		{"worker-3", `"node-restriction.kubernetes.io/trusted":"yes"`, `node "worker-1" is not allowed to modify node "worker-3"`},
	} {
		if out, err := create(kubelet, c.name, c.labels); err == nil || !strings.Contains(out, c.want) {
			t.Errorf("the kubelet creating Node %s: %v %s; want NodeRestriction's %q", c.name, err, out, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"label", "node", "worker-1", "node-restriction.kubernetes.io/trusted=yes"}, "is not allowed to modify labels: node-restriction.kubernetes.io/trusted"},
		{[]string{"label", "node", "worker-1", "kubernetes.io/role=control-plane"}, "is not allowed to modify labels: kubernetes.io/role"},
		{[]string{"delete", "node", "worker-1"}, `User "system:node:worker-1" cannot delete resource "nodes"`},
		{[]string{"get", "secrets", "-n", "kube-system"}, `User "system:node:worker-1" cannot list resource "secrets"`},
	} {
		if _, stderr, err := kubelet.Kubectl(t, c.args...); err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("kubectl %s as the kubelet: %v %q; want %q", strings.Join(c.args, " "), err, stderr, c.want)
		}
	}
	if _, _, err := kubelet.Kubectl(t, "label", "node", "worker-1", "example.com/pool=b", "--overwrite"); err != nil {
		t.Errorf("the kubelet relabelling its own Node with a key NodeRestriction leaves to it: %v", err)
	}

	// The same kind of certificate, RBAC alone: authenticated, allowed nothing.
	plainKubelet := plain.Node(t, "worker-1")
	if _, stderr, err := plainKubelet.Kubectl(t, "get", "node", "worker-1"); err == nil || !strings.Contains(stderr, `User "system:node:worker-1" cannot get resource "nodes"`) {
		t.Errorf("plain RBAC: the kubelet getting its Node: %v %q; want an RBAC denial", err, stderr)
	}
}
