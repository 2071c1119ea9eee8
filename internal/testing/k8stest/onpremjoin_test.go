package k8stest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testcp"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestOnpremJoinRegisters joins a new on-prem server with its group's
// rendered join script (under bash, a kubeadm stand-in keeping the
// configuration it is given) and registers its Node on a real API server
// as its kubelet would from that JoinConfiguration (--node-labels, the
// registration taints, --provider-id), with the kubelet's own identity
// under the Node authorizer and NodeRestriction, as kubeadm configures
// them: the server admits it, the rendered label-onprem-nodes.sh then
// finds it as its group says and set-provider-id.sh finds its providerID.
// Beside it, NodeRestriction admits a kubelet's Node with a label exactly
// when model.KubeletMaySetLabel says, the rule the join's labels are
// filtered by.
func TestOnpremJoinRegisters(t *testing.T) {
	src, files := testsrc.Render(t, testsrc.Copy(t, map[string]string{"nodes.cue": `nodeGroups: "onprem-gpu": {
	nodes: {
		"a100-01": {cpu: 128, memoryGiB: 1024}
		"a100-02": {cpu: 128, memoryGiB: 1024}
	}
	labels: "node.kubernetes.io/gpu-pool": "a100"
}
cluster: controlPlaneNodes: "cp-1": {cpu: 16, memoryGiB: 64}
`}))
	g := src.NodeGroups["onprem-gpu"]
	cfg := joinWithStub(t, files[layout.OnpremJoinPath(g.Name)], "a100-01")
	node, err := agree.FromJoinConfiguration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["node.kubernetes.io/gpu-pool"] != "a100" {
		t.Fatalf("the join's labels %v lack the kubelet-namespace label the group sets", node.Labels)
	}

	cp := testcp.StartWith(t, testcp.Options{Production: true})
	// The Node the kubelet creates at registration (kubernetes/kubernetes
	// v1.37.2 pkg/kubelet/kubelet_node_status.go initialNode): its own
	// labels, --node-labels, --register-with-taints (kubeadm's
	// nodeRegistration.taints), --provider-id.
	registered := kubeletNode(node.Name, node.Labels, cfg.NodeRegistration.Taints, node.ProviderID)
	if err := createAsKubelet(t, cp, registered); err != nil {
		t.Fatalf("the API server refuses the Node the join registers: %v", err)
	}

	run := func(name string, args ...string) (int, string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), filepath.Base(name))
		if err := os.WriteFile(path, files[name], 0o755); err != nil {
			t.Fatal(err)
		}
		kubectlPath, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skipf("kubectl not on PATH: %v", err)
		}
		cmd := exec.Command("bash", append([]string{path}, args...)...)
		cmd.Env = []string{"PATH=" + filepath.Dir(kubectlPath) + ":/usr/bin:/bin", "KUBECONFIG=" + cp.Admin().Kubeconfig, "HOME=" + t.TempDir()}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s: exit %d\n%s", name, strings.Join(args, " "), code, out.String())
		return code, out.String()
	}
	if code, out := run(layout.OnpremLabelNodesPath, "--dry-run"); code != 0 ||
		!strings.Contains(out, "0 node(s) would be changed, 1 already as their group says, 1 not joined") {
		t.Errorf("label-onprem-nodes.sh --dry-run: exit %d; want 0 with the joined node as its group says and a100-02 not joined", code)
	}
	if code, out := run(layout.OnpremProviderIDPath, "--dry-run"); code != 0 ||
		!strings.Contains(out, "0 node(s) would be given a providerID, 1 already have one") {
		t.Errorf("set-provider-id.sh --dry-run: exit %d; want 0 with the joined node's providerID kept", code)
	}

	// NodeRestriction and the kubelet's rule, key by key, each on a Node
	// of its own.
	for i, key := range []string{
		"example.com/pool", "nodegen.dev/node-group", "node.kubernetes.io/pool", "a.node.kubernetes.io/x",
		"kubelet.kubernetes.io/x", "topology.kubernetes.io/zone", "node.kubernetes.io/instance-type",
		"node-restriction.kubernetes.io/nodegen-node-group", "kubernetes.io/role", "node-role.kubernetes.io/worker",
		"example.k8s.io/x", "k8s.io/x", "cloud.google.com/gke-accelerator",
	} {
		name := "label-" + string(rune('a'+i))
		err := createAsKubelet(t, cp, kubeletNode(name, map[string]string{key: "v"}, nil, model.UnmanagedProviderID(name)))
		if admitted, want := err == nil, model.KubeletMaySetLabel(key); admitted != want {
			t.Errorf("label %s: the API server admits a kubelet's Node with it: %v (%v); model.KubeletMaySetLabel says %v", key, admitted, err, want)
		}
	}
}

// joinWithStub runs a rendered on-prem join script for node under bash,
// the token on stdin, with a kubeadm stand-in first on PATH that keeps
// the file kubeadm join --config is given, and decodes that file.
func joinWithStub(t *testing.T, script []byte, node string) *kubeadm.JoinConfiguration {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the join script runs as root")
	}
	dir := t.TempDir()
	kept := filepath.Join(dir, "config")
	stub := "#!/bin/bash\n[[ \"$1 $2\" == 'join --config' ]] || exit 1\ncp -- \"$3\" '" + kept + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "kubeadm"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "join.sh")
	if err := os.WriteFile(path, script, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", path, node)
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "TMPDIR=" + t.TempDir()}
	cmd.Stdin = strings.NewReader("k7x2p9.0123456789abcdef\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the join script: %v\n%s", err, out)
	}
	b, err := os.ReadFile(kept)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(b)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// kubeletNode is the Node a kubelet registers as name with --node-labels
// labels, --register-with-taints taints and --provider-id providerID.
func kubeletNode(name string, labels map[string]string, taints []corev1.Taint, providerID string) *corev1.Node {
	all := map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
	for k, v := range labels {
		all[k] = v
	}
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all},
		Spec:       corev1.NodeSpec{Taints: taints, ProviderID: providerID},
	}
}

// createAsKubelet creates n with its kubelet's identity, system:node:<name>.
func createAsKubelet(t *testing.T, cp *testcp.ControlPlane, n *corev1.Node) error {
	t.Helper()
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = kubectl(t, cp.Node(t, n.Name), string(b), "create", "-f", "-")
	return err
}
