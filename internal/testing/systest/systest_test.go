package systest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/gcefake"
	"github.com/nodegen/nodegen/internal/testing/testca"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The nodes outside the MIGs that every scenario has: a kubeadm control
// plane and an on-prem GPU server, registered as kubeadm leaves them (no
// providerID).
const (
	controlPlaneNode = "cp-1"
	onpremNode       = "onprem-gpu-01"
)

// trackerError is what the autoscaler v1.35 logs when its quotas tracker
// meets a node whose providerID its GCE provider cannot parse
// (kubernetes/autoscaler cluster-autoscaler-1.35.2, resourcequotas/usage.go).
const trackerError = "could not create quotas tracker"

func resources(cpu string, gpus int64) corev1.ResourceList {
	r := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}
	if gpus > 0 {
		r[corev1.ResourceName(model.GPUResource)] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return r
}

// hybrid starts the test example (its groups as shipped) with the nodes
// outside the MIGs, and waits for the autoscaler group's own nodes.
func hybrid(t *testing.T, opts Options) *Cluster {
	t.Helper()
	c := New(t, testsrc.Copy(t, nil), opts)
	c.RegisterNode(controlPlaneNode, map[string]string{"node-role.kubernetes.io/control-plane": ""},
		[]corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}},
		corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")})
	var onprem *model.NodeGroup
	for _, g := range c.Source.Groups() {
		if g.Kind == model.KindOnPrem {
			onprem = g
		}
	}
	var taints []corev1.Taint
	for _, tt := range onprem.Taints {
		taints = append(taints, corev1.Taint{Key: tt.Key, Value: tt.Value, Effect: corev1.TaintEffect(tt.Effect)})
	}
	c.RegisterNode(onpremNode, onprem.NodeLabels, taints, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("128"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceName(model.GPUResource): resource.MustParse("8")})
	ca := c.Source.Cluster.BaseInstanceName(group(t, c, c.Source.Cluster.Autoscaler.NodeGroup))
	if !Eventually(30*time.Second, func() bool { return len(c.Nodes(ca)) == 2 }) {
		t.Fatalf("the autoscaler group's nodes did not register: %v\n%s", c.Nodes(""), c.Events())
	}
	return c
}

func group(t *testing.T, c *Cluster, name string) *model.NodeGroup {
	t.Helper()
	for _, g := range c.Source.Groups() {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %s", name)
	return nil
}

// setProviderID runs the rendered out/onprem/set-provider-id.sh.
func setProviderID(t *testing.T, c *Cluster) {
	t.Helper()
	out, err := c.RunScript("onprem/set-provider-id.sh")
	if err != nil {
		t.Fatalf("set-provider-id.sh: %v\n%s", err, out)
	}
	for _, n := range []string{controlPlaneNode, onpremNode} {
		if pid := c.Node(n).Spec.ProviderID; pid == "" {
			t.Fatalf("set-provider-id.sh left %s without a providerID:\n%s", n, out)
		}
	}
}

// created returns the VMs created so far in the MIGs of a group.
func created(c *Cluster, g *model.NodeGroup) []gcefake.Instance {
	var out []gcefake.Instance
	for _, i := range c.Compute.Instances("") {
		if strings.HasPrefix(i.MIG, c.Source.Cluster.BaseInstanceName(g)+"-") {
			out = append(out, i)
		}
	}
	return out
}

// mutated lists the resize, createInstances and deleteInstances calls, for messages.
func mutated(c *Cluster) string {
	var b strings.Builder
	for _, m := range c.Compute.Mutations() {
		fmt.Fprintf(&b, "%s %s %s %v size=%d\n", m.At.Format("15:04:05"), m.Op, m.MIG, m.Names, m.Size)
	}
	return b.String()
}

// gpuPod is a pod for the example's GPU groups: one GPU, the GPU taint
// tolerated.
func gpuPod(name string) *corev1.Pod {
	return Pod(name, resources("1", 1), map[string]string{"example.com/pool": "gpu-burst"}, "nvidia.com/gpu")
}

// TestScaleUpFromZero: with the rendered set-provider-id.sh run, the stock
// autoscaler scales the preferred group (spot, priority 15 over the
// on-demand 10) from zero for a GPU pod; the node joins with the startup
// taint and no second node is added while its GPUs initialise; the pod
// lands on it once the taint is gone; the nodes outside the MIGs are not
// touched.
func TestScaleUpFromZero(t *testing.T) {
	t.Parallel()
	bin := testca.Binary(t, nil)
	c := hybrid(t, Options{Register: 2 * time.Second, GPUInit: 40 * time.Second, GPUValidated: 5 * time.Second})
	setProviderID(t, c)
	ca := c.StartAutoscaler(bin)
	start := time.Now()
	c.Create(gpuPod("train"))
	spot, onDemand := group(t, c, "spot-gpu-t4"), group(t, c, "gpu-t4")
	if !Eventually(2*time.Minute, func() bool { return len(created(c, spot)) > 0 }) {
		t.Fatalf("no spot-gpu-t4 VM in 2m; calls:\n%s", mutated(c))
	}
	t.Logf("spot-gpu-t4 scaled up %v after the pod", time.Since(start).Round(time.Second))
	vm := created(c, spot)[0]
	if !Eventually(30*time.Second, func() bool { return c.Node(vm.Name) != nil }) {
		t.Fatalf("the VM %s registered no node", vm.Name)
	}
	n := c.Node(vm.Name)
	if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return strings.HasPrefix(t.Key, model.StartupTaintPrefix) }) {
		t.Errorf("node %s registered without the startup taint: %v", n.Name, n.Spec.Taints)
	}
	if !Eventually(2*time.Minute, func() bool { return c.NodeOf("default", "train") == vm.Name }) {
		t.Fatalf("the pod was not bound to %s", vm.Name)
	}
	// The autoscaler had the whole GPU initialisation to add a duplicate;
	// give it two more loops after the pod landed.
	time.Sleep(12 * time.Second)
	if got := len(created(c, spot)) + len(created(c, onDemand)); got != 1 {
		t.Errorf("%d GPU VMs for one pod, want 1; calls:\n%s", got, mutated(c))
	}
	for _, name := range []string{controlPlaneNode, onpremNode} {
		if n := c.Node(name); n == nil || len(n.Spec.Taints) > 1 && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "ToBeDeletedByClusterAutoscaler" }) {
			t.Errorf("the autoscaler touched %s", name)
		}
	}
	if n := ca.Count(trackerError); n > 0 {
		t.Errorf("the autoscaler logged %q %d times", trackerError, n)
	}
}

// TestNoProviderIDNoScaling: without set-provider-id.sh, the stock
// autoscaler v1.35.2 adds no node: its quotas tracker fails on the nodes
// outside the MIGs. This is why the script exists (and what the patched
// build lifts, TestPatchedBuild).
func TestNoProviderIDNoScaling(t *testing.T) {
	t.Parallel()
	bin := testca.Binary(t, nil)
	c := hybrid(t, Options{Register: 2 * time.Second, GPUInit: 5 * time.Second, GPUValidated: time.Second})
	ca := c.StartAutoscaler(bin)
	c.Create(gpuPod("train"))
	if !Eventually(90*time.Second, func() bool { return ca.Count(trackerError) >= 3 }) {
		t.Fatalf("the autoscaler did not log %q three times in 90s", trackerError)
	}
	if m := c.Compute.Mutations(); len(m) > 0 {
		t.Errorf("the autoscaler changed MIGs although a node has no providerID:\n%s", mutated(c))
	}
}
