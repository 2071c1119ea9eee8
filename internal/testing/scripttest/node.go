package scripttest

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// JoinNode runs group g's generated startup script for a VM in zone and
// returns the Node the kubelet would register from the JoinConfiguration
// it wrote: the node-labels (parsed as the kubelet parses them) plus the
// kubelet's own well-known labels, the registration taints, the providerID.
//
// A test binary runs each script once for the same VM: the Node is
// remembered by the script's bytes and the VM, and each caller gets its
// own copy.
func JoinNode(t testing.TB, src *model.Source, files layout.Files, g *model.NodeGroup, zone string) *corev1.Node {
	t.Helper()
	vm := VM{
		Project:   src.Cluster.GCP.Project,
		NumericID: "123456789012",
		Zone:      zone,
		Instance:  src.Cluster.BaseInstanceName(g) + "-q4z8",
		JoinToken: "abcdef.0123456789abcdef",
	}
	if sm := src.Cluster.JoinToken.SecretManager; sm != nil {
		vm.Secret, vm.SecretVersion = sm.Secret, sm.Version
	} else {
		vm.MetadataKey = src.Cluster.JoinToken.MetadataKey
	}
	script := files[layout.StartupScriptPath(g.Name)]
	sum := sha256.Sum256(script)
	e, _ := joined.LoadOrStore(fmt.Sprintf("%x %+v %s", sum, vm, g.Arch), &joinedNode{})
	j := e.(*joinedNode)
	j.once.Do(func() {
		// Run may end the first caller's test (t.Skip, t.Fatal): the
		// others then fail with this, not with a nil Node.
		j.err = "the startup script of " + g.Name + " did not finish in the test that ran it first"
		j.node, j.err = joinNode(t, script, vm, g)
	})
	if j.err != "" {
		t.Fatal(j.err)
	}
	return j.node.DeepCopy()
}

// joined holds JoinNode's Nodes by script digest, VM and architecture.
var joined sync.Map

type joinedNode struct {
	once sync.Once
	node *corev1.Node
	err  string
}

func joinNode(t testing.TB, script []byte, vm VM, g *model.NodeGroup) (*corev1.Node, string) {
	t.Helper()
	res := Run(t, script, vm, Options{})
	if res.ExitCode != 0 || len(res.JoinConfigs) != 1 {
		return nil, fmt.Sprintf("startup script of %s: exit %d, %d joins\n%s", g.Name, res.ExitCode, len(res.JoinConfigs), res.Stderr)
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(res.JoinConfigs[0])
	if err != nil {
		return nil, fmt.Sprintf("JoinConfiguration of %s: %v", g.Name, err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: cfg.NodeRegistration.Name, Labels: map[string]string{
			corev1.LabelHostname:   cfg.NodeRegistration.Name,
			corev1.LabelOSStable:   "linux",
			corev1.LabelArchStable: g.Arch,
		}},
		Spec: corev1.NodeSpec{Taints: cfg.NodeRegistration.Taints},
	}
	if v, ok := cfg.ExtraArg("node-labels"); ok {
		for _, item := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(item, "=")
			node.Labels[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	}
	node.Spec.ProviderID, _ = cfg.ExtraArg("provider-id")
	return node, ""
}

// InServiceNode is JoinNode's Node once the node CSR approver has checked
// its VM and labelled it: the join's Node plus model.VerifiedLabels, the
// labels nodegen's placements and policies select on.
func InServiceNode(t testing.TB, src *model.Source, files layout.Files, g *model.NodeGroup, zone string) *corev1.Node {
	t.Helper()
	n := JoinNode(t, src, files, g, zone)
	for k, v := range model.VerifiedLabels(g) {
		n.Labels[k] = v
	}
	return n
}
