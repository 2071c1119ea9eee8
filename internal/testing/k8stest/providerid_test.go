package k8stest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render/docs"
)

// testOnpremProviderID registers the nodes of a hybrid cluster on the real
// server as they are after the rendered steps: the kubeadm control plane
// and an on-prem worker that exist (no providerID, as kubeadm leaves them)
// given theirs by out/onprem/set-provider-id.sh, an on-prem worker that
// joins later with the kubelet setting out/docs shows, and a Node of every
// cloud group as its startup script registers it. It then maps every Node
// on the server to a node group with the GCE provider's own rules
// (model.Source.AutoscalerNodeGroup, read from kubernetes/autoscaler tag
// cluster-autoscaler-1.35.0, cloudprovider/gce/gce_cloud_provider.go
// GceRefFromProviderId and mig_info_provider.go GetMigForInstance): each
// maps to its MIG or to none, and none to an error, which would stop the
// autoscaler's every scale-up and scale-down. It runs before any other test
// creates Nodes, and deletes its own.
func (e *env) testOnpremProviderID(t *testing.T) {
	script := e.files[layout.OnpremProviderIDPath]
	if script == nil {
		t.Fatalf("%s not rendered", layout.OnpremProviderIDPath)
	}
	path := filepath.Join(t.TempDir(), "set-provider-id.sh")
	if err := os.WriteFile(path, script, 0o755); err != nil {
		t.Fatal(err)
	}
	var created []string
	t.Cleanup(func() {
		for _, n := range created {
			_, _, _ = kubectl(t, e.cp.Admin(), "", "delete", "node", n, "--wait=false")
		}
	})
	create := func(n *corev1.Node) string {
		t.Helper()
		n.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
		b, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		e.admin(t, string(b), "create", "-f", "-")
		created = append(created, n.Name)
		return n.Name
	}

	// As kubeadm init registers the control plane (its kubelet has no
	// --provider-id) and as kubeadm join registers an on-prem worker.
	cpNode := create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp-1.dc1.example.com", Labels: map[string]string{
		corev1.LabelHostname: "cp-1.dc1.example.com", "node-role.kubernetes.io/control-plane": ""}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}}})
	onprem := e.group(t, "onprem-gpu")
	workerLabels := map[string]string{corev1.LabelHostname: "onprem-a100-01"}
	for k, v := range onprem.NodeLabels {
		workerLabels[k] = v
	}
	worker := create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "onprem-a100-01", Labels: workerLabels}})
	// A node of every cloud group, as its startup script registers it.
	cloud := map[string]*model.NodeGroup{}
	for _, g := range e.src.CloudGroups() {
		cloud[e.newNode(t, g.Name)] = g
	}
	for n := range cloud {
		created = append(created, n)
	}
	// Without the workaround the GCE provider fails on the two on-prem nodes.
	for _, n := range []string{cpNode, worker} {
		if _, _, err := e.src.AutoscalerNodeGroup(e.node(t, n).Spec.ProviderID); !errors.Is(err, model.ErrProviderIDEmpty) {
			t.Fatalf("node %s before the script: error %v, want %v", n, err, model.ErrProviderIDEmpty)
		}
	}

	run := func(args ...string) (int, string) {
		t.Helper()
		kubectlPath, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skipf("kubectl not on PATH: %v", err)
		}
		cmd := exec.Command("bash", append([]string{path}, args...)...)
		cmd.Env = []string{"PATH=" + filepath.Dir(kubectlPath) + ":/usr/bin:/bin", "KUBECONFIG=" + e.cp.Admin().Kubeconfig, "HOME=" + t.TempDir()}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		var exit *exec.ExitError
		code := 0
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("set-provider-id.sh %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
		return code, out.String()
	}

	// --dry-run names both and writes nothing.
	before := map[string]*corev1.Node{cpNode: e.node(t, cpNode), worker: e.node(t, worker)}
	if code, out := run("--dry-run"); code != 0 || !strings.Contains(out, "node "+cpNode+": would set providerID "+model.UnmanagedProviderID(cpNode)) ||
		!strings.Contains(out, "node "+worker+": would set providerID "+model.UnmanagedProviderID(worker)) {
		t.Fatalf("--dry-run: exit %d, want 0 and both on-prem nodes named", code)
	}
	for n, b := range before {
		sameNode(t, "after --dry-run", e.node(t, n), b, false)
	}
	if code, out := run(); code != 0 || !strings.Contains(out, "2 node(s) given a providerID, "+strconv.Itoa(len(cloud))+" already had one") {
		t.Fatalf("exit %d; want 0 and 2 nodes given a providerID, %d kept", code, len(cloud))
	}
	for _, n := range []string{cpNode, worker} {
		if got, want := e.node(t, n).Spec.ProviderID, model.UnmanagedProviderID(n); got != want {
			t.Errorf("node %s: providerID %q, want %q", n, got, want)
		}
	}

	// A worker that joins later: the kubelet writes its --provider-id
	// from the nodeRegistration out/docs shows into the Node it creates.
	later := "onprem-a100-02"
	reg := docsNodeRegistration(t, e.files[layout.DocsPath])
	var pid string
	for _, a := range reg.KubeletExtraArgs {
		if a.Name == "provider-id" {
			pid = strings.ReplaceAll(a.Value, docs.OnpremNodeNamePlaceholder, later)
		}
	}
	if pid == "" {
		t.Fatal("the docs' nodeRegistration has no provider-id")
	}
	laterLabels := map[string]string{corev1.LabelHostname: later}
	for k, v := range onprem.NodeLabels {
		laterLabels[k] = v
	}
	create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: later, Labels: laterLabels}, Spec: corev1.NodeSpec{ProviderID: pid}})

	// Every Node on the server, as the autoscaler's GCE provider maps it.
	var list corev1.NodeList
	if err := json.Unmarshal([]byte(e.admin(t, "", "get", "nodes", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(created) {
		t.Fatalf("%d nodes on the server, want the test's %d", len(list.Items), len(created))
	}
	for _, n := range list.Items {
		mig, ok, err := e.src.AutoscalerNodeGroup(n.Spec.ProviderID)
		if err != nil {
			t.Errorf("node %s: providerID %q: the GCE provider fails: %v", n.Name, n.Spec.ProviderID, err)
			continue
		}
		g := cloud[n.Name]
		switch {
		case g != nil && g.Autoscaled():
			zone := g.Zones[0]
			if !ok || mig.Group != g || mig.Zone != zone {
				t.Errorf("node %s of group %s: maps to %+v (found %v), want its MIG %s", n.Name, g.Name, mig, ok, e.src.Cluster.MIGName(g, zone))
			}
		case ok:
			t.Errorf("node %s (providerID %q) maps to MIG %s, want none", n.Name, n.Spec.ProviderID, e.src.Cluster.MIGName(mig.Group, mig.Zone))
		}
	}

	// Once set, a providerID stays: the API server refuses a change, and a
	// second run changes nothing.
	if _, stderr, err := kubectl(t, e.cp.Admin(), "", "patch", "node", worker, "--type=merge", "-p", `{"spec":{"providerID":"gce://other/zone/x"}}`); err == nil ||
		!strings.Contains(stderr, "field is immutable") && !strings.Contains(stderr, "cannot be modified") {
		t.Errorf("changing a providerID: err %v, stderr %q; want the server to refuse", err, stderr)
	}
	after := map[string]*corev1.Node{cpNode: e.node(t, cpNode), worker: e.node(t, worker)}
	if code, out := run(); code != 0 || !strings.Contains(out, "0 node(s) given a providerID") {
		t.Errorf("second run: exit %d, want 0 and nothing given", code)
	}
	for n, b := range after {
		sameNode(t, "after a second run", e.node(t, n), b, false)
	}

	// A cloud group's Node without a providerID is a join gone wrong: it
	// is reported and keeps none, so that it can still get its VM's.
	broken := e.newNode(t, "cpu-burst")
	created = append(created, broken)
	b := e.node(t, broken)
	b.Name, b.ResourceVersion, b.UID, b.CreationTimestamp = broken+"-x", "", "", metav1.Time{}
	b.Spec.ProviderID = ""
	create(b)
	if code, out := run(); code != 1 || !strings.Contains(out, "node "+b.Name+": in cloud group cpu-burst but without providerID; left alone") {
		t.Errorf("with a cloud node without providerID: exit %d, want 1 and the node reported", code)
	}
	if got := e.node(t, b.Name).Spec.ProviderID; got != "" {
		t.Errorf("the cloud node without providerID got %q", got)
	}
}

// docsNodeRegistration decodes, strictly, the nodeRegistration the docs
// show for on-prem nodes that join later.
func docsNodeRegistration(t *testing.T, docs []byte) kubeadm.NodeRegistrationOptions {
	t.Helper()
	_, rest, ok := strings.Cut(string(docs), "**Nodes that join later**")
	if !ok {
		t.Fatal("the docs have no section on nodes that join later")
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no yaml block after the docs' section on nodes that join later")
	}
	var doc struct {
		NodeRegistration kubeadm.NodeRegistrationOptions `json:"nodeRegistration"`
	}
	if err := yaml.UnmarshalStrict([]byte(block), &doc); err != nil {
		t.Fatalf("the docs' nodeRegistration: %v", err)
	}
	return doc.NodeRegistration
}
