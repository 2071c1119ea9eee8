package systest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/gcefake"
	"github.com/nodegen/nodegen/internal/testing/testca"
)

// Nodes outside the MIGs that every scenario has (the fixture declares
// them, and hybrid registers every declared node as kubeadm leaves it: no
// providerID): the kubeadm control plane and an on-prem GPU server.
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

// edit is a change to the fixture: in file, old replaced by new (once).
type edit struct{ file, old, new string }

// fixture copies testdata/nodegroups (the package's own hybrid source: an
// autoscaler group, cpu-burst, gpu-t4 and spot-gpu-t4 under the priority
// expander, on-prem GPU servers, caps) with edits into a new directory.
func fixture(t *testing.T, edits ...edit) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join("testdata", "nodegroups"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", "nodegroups", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	for _, e := range edits {
		if !strings.Contains(files[e.file], e.old) {
			t.Fatalf("fixture: %s has no %q", e.file, e.old)
		}
		files[e.file] = strings.Replace(files[e.file], e.old, e.new, 1)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dst, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// hybrid starts the fixture with the nodes outside the MIGs it declares
// (cluster.controlPlaneNodes, the onprem groups' nodes) registered, with
// their declared capacity, and waits for the autoscaler group's own nodes.
func hybrid(t *testing.T, opts Options, edits ...edit) *Cluster {
	t.Helper()
	c := newCluster(t, fixture(t, edits...), opts)
	for _, n := range c.Source.DeclaredNodes() {
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(n.CPU, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(n.MemoryGiB<<30, resource.BinarySI),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		if n.GPUs > 0 {
			capacity[corev1.ResourceName(model.GPUResource)] = *resource.NewQuantity(n.GPUs, resource.DecimalSI)
		}
		if n.Group == "" {
			c.RegisterNode(n.Name, map[string]string{"node-role.kubernetes.io/control-plane": ""},
				[]corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}, capacity)
			continue
		}
		g := group(t, c, n.Group)
		var taints []corev1.Taint
		for _, tt := range g.Taints {
			taints = append(taints, corev1.Taint{Key: tt.Key, Value: tt.Value, Effect: corev1.TaintEffect(tt.Effect)})
		}
		c.RegisterNode(n.Name, g.NodeLabels, taints, capacity)
	}
	ca := c.Source.Cluster.BaseInstanceName(group(t, c, c.Source.Cluster.Autoscaler.NodeGroup))
	if !eventually(30*time.Second, func() bool { return len(c.Nodes(ca)) == 2 }) {
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
	for _, n := range c.Source.DeclaredNodeNames() {
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
	return pendingPod(name, resources("1", 1), map[string]string{"example.com/pool": "gpu-burst"}, "nvidia.com/gpu")
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
	if !eventually(2*time.Minute, func() bool { return len(created(c, spot)) > 0 }) {
		t.Fatalf("no spot-gpu-t4 VM in 2m; calls:\n%s", mutated(c))
	}
	t.Logf("spot-gpu-t4 scaled up %v after the pod", time.Since(start).Round(time.Second))
	vm := created(c, spot)[0]
	if !eventually(30*time.Second, func() bool { return c.Node(vm.Name) != nil }) {
		t.Fatalf("the VM %s registered no node", vm.Name)
	}
	n := c.Node(vm.Name)
	if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return strings.HasPrefix(t.Key, model.StartupTaintPrefix) }) {
		t.Errorf("node %s registered without the startup taint: %v", n.Name, n.Spec.Taints)
	}
	if !eventually(2*time.Minute, func() bool { return c.NodeOf("default", "train") == vm.Name }) {
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
	if !eventually(90*time.Second, func() bool { return ca.Count(trackerError) >= 3 }) {
		t.Fatalf("the autoscaler did not log %q three times in 90s", trackerError)
	}
	if m := c.Compute.Mutations(); len(m) > 0 {
		t.Errorf("the autoscaler changed MIGs although a node has no providerID:\n%s", mutated(c))
	}
}

// cpuPod is a pod only cpu-burst takes: 7 of an n2-standard-8's CPUs.
func cpuPod(name string) *corev1.Pod {
	return pendingPod(name, resources("7", 0), map[string]string{"example.com/pool": "cpu-burst"})
}

// freeze creates a GPU pod, waits for its node to register (its GPUs
// initialise for minutes), then creates a CPU pod, and reports how long
// the CPU pod waited for a cpu-burst VM (or 0 when none came in 45 s),
// with the GPU node still initialising.
func freeze(t *testing.T, c *Cluster, ca *Autoscaler) time.Duration {
	t.Helper()
	c.Create(gpuPod("train"))
	spot := group(t, c, "spot-gpu-t4")
	if !eventually(2*time.Minute, func() bool { v := created(c, spot); return len(v) > 0 && c.Node(v[0].Name) != nil }) {
		t.Fatalf("no spot-gpu-t4 node registered in 2m; calls:\n%s", mutated(c))
	}
	gpuNode := created(c, spot)[0].Name
	c.Create(cpuPod("batch"))
	start := time.Now()
	burst := group(t, c, "cpu-burst")
	got := eventually(45*time.Second, func() bool { return len(created(c, burst)) > 0 })
	if n := c.Node(gpuNode); n == nil || !n.Status.Allocatable.Name(corev1.ResourceName(model.GPUResource), resource.DecimalSI).IsZero() {
		t.Fatalf("the GPU node %s finished initialising during the test: it must last longer", gpuNode)
	}
	if !got {
		return 0
	}
	return time.Since(start)
}

// TestUpcomingNodeFreeze: with the stock build, while a GPU node
// initialises (registered, startup taint, GPUs not reported), a CPU pod
// gets no node: every scale-up fails on the upcoming node's stand-in,
// which has no providerID. The patched build (TestPatchedBuild) lifts it.
func TestUpcomingNodeFreeze(t *testing.T) {
	t.Parallel()
	bin := testca.Binary(t, nil)
	c := hybrid(t, Options{Register: 2 * time.Second, GPUInit: 10 * time.Minute})
	setProviderID(t, c)
	ca := c.StartAutoscaler(bin)
	if d := freeze(t, c, ca); d != 0 {
		t.Fatalf("the stock autoscaler scaled cpu-burst up %v after the CPU pod while a GPU node initialised: the freeze is gone, update the release table and the docs; calls:\n%s", d, mutated(c))
	}
	if n := ca.Count(trackerError); n == 0 || !strings.Contains(ca.Output(), "upcoming") {
		t.Errorf("the autoscaler did not log %q for the upcoming node (%d lines)", trackerError, n)
	}
}

// patchedSource is the fixture choosing nodegen's patched build.
var patchedSource = edit{"cluster.cue", `		nodeGroup:                        "autoscaler"`, `		nodeGroup:                        "autoscaler"
		patchedImage: repository: "registry.example.com/infra/cluster-autoscaler"`}

// patchedBinary builds the patch and Dockerfile that out/ carries for a
// source with patchedImage, checking that the Dockerfile builds the
// release the tests build.
func patchedBinary(t *testing.T, c *Cluster) string {
	t.Helper()
	patch, err := os.ReadFile(filepath.Join(c.Out, "cluster-autoscaler", "image", "gce-nodegroupfornode.patch"))
	if err != nil {
		t.Fatalf("the source chooses the patched build, out/ has no patch: %v", err)
	}
	docker, err := os.ReadFile(filepath.Join(c.Out, "cluster-autoscaler", "image", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	commit := model.AutoscalerSourceCommit["v"+testca.Version]
	if !strings.Contains(string(docker), "ARG COMMIT="+commit+"\n") {
		t.Fatalf("the Dockerfile does not build v%s at %s:\n%s", testca.Version, commit, docker)
	}
	return testca.Binary(t, patch)
}

// TestPatchedBuild: nodegen's build of the same release with its patch,
// as out/cluster-autoscaler/image/ carries it, scales a CPU pod up while
// a GPU node initialises, and scales from zero with the nodes outside the
// MIGs left without a providerID (no set-provider-id.sh), no duplicate
// GPU node.
func TestPatchedBuild(t *testing.T) {
	t.Parallel()
	c := hybrid(t, Options{Register: 2 * time.Second, GPUInit: 10 * time.Minute}, patchedSource)
	bin := patchedBinary(t, c)
	ca := c.StartAutoscaler(bin)
	d := freeze(t, c, ca)
	if d == 0 {
		t.Fatalf("the patched autoscaler added no cpu-burst node in 45s while a GPU node initialised; calls:\n%s", mutated(c))
	}
	t.Logf("cpu-burst scaled up %v after the CPU pod, while the GPU node initialised", d.Round(time.Second))
	if n := ca.Count(trackerError); n > 0 {
		t.Errorf("the patched autoscaler logged %q %d times", trackerError, n)
	}
	for _, name := range []string{controlPlaneNode, onpremNode} {
		if pid := c.Node(name).Spec.ProviderID; pid != "" {
			t.Errorf("%s has providerID %q: the test must run without set-provider-id.sh", name, pid)
		}
	}
	time.Sleep(10 * time.Second)
	if n := len(created(c, group(t, c, "spot-gpu-t4"))) + len(created(c, group(t, c, "gpu-t4"))); n != 1 {
		t.Errorf("%d GPU VMs for one GPU pod, want 1; calls:\n%s", n, mutated(c))
	}
}

// TestScaleDownEmptyNode: an empty cpu-burst node is removed after the
// unneeded time; the nodes outside the MIGs and the autoscaler's own
// (gce-static, not given to it) stay.
func TestScaleDownEmptyNode(t *testing.T) {
	t.Parallel()
	bin := testca.Binary(t, nil)
	c := hybrid(t, Options{Register: time.Second})
	setProviderID(t, c)
	burst := group(t, c, "cpu-burst")
	zone := burst.Zones[0]
	c.Compute.Resize(zone, c.Source.Cluster.MIGName(burst, zone), 1)
	if !eventually(30*time.Second, func() bool { v := created(c, burst); return len(v) == 1 && c.Node(v[0].Name) != nil }) {
		t.Fatal("the cpu-burst node did not register")
	}
	empty := created(c, burst)[0].Name
	before := c.Nodes("")
	c.StartAutoscaler(bin, "--scale-down-unneeded-time=1m")
	start := time.Now()
	if !eventually(4*time.Minute, func() bool { return c.Node(empty) == nil }) {
		t.Fatalf("the empty node %s was not removed in 4m; calls:\n%s", empty, mutated(c))
	}
	t.Logf("the empty node was removed %v after the autoscaler started", time.Since(start).Round(time.Second))
	for _, m := range c.Compute.Mutations() {
		if m.Op == "deleteInstances" && (len(m.Names) != 1 || m.Names[0] != empty) {
			t.Errorf("the autoscaler deleted %v", m.Names)
		}
	}
	after := c.Nodes("")
	for _, n := range before {
		if n != empty && !slices.Contains(after, n) {
			t.Errorf("node %s is gone", n)
		}
	}
}

// expanderChose is what the priority expander logs for each MIG it keeps
// as the highest priority among the options (kubernetes/autoscaler
// cluster-autoscaler-1.35.2, expander/priority/priority.go BestOptions, at
// --v=2): "priority expander: <MIG URL> chosen as the highest available".
// When its ConfigMap matches none of the options, or only with priorities
// below 0, it logs no choice and leaves the pick to the next expander.
const expanderChose = " chosen as the highest available"

// firstChoice is the MIG URL of the priority expander's first choice in the
// autoscaler's log, "" when it made none.
func firstChoice(log string) string {
	const prefix = "priority expander: "
	for _, l := range strings.Split(log, "\n") {
		if i := strings.Index(l, prefix); i >= 0 && strings.HasSuffix(l, expanderChose) {
			return strings.TrimSuffix(l[i+len(prefix):], expanderChose)
		}
	}
	return ""
}

// TestSpotStockoutFallsBack: when every spot zone reports a stockout, the
// GPU pod lands on the on-demand group, the next priority; the priority
// expander, not the next expander's pick, chose the spot group first.
func TestSpotStockoutFallsBack(t *testing.T) {
	t.Parallel()
	bin := testca.Binary(t, nil)
	var spotMIGs []string
	c := hybrid(t, Options{Register: 2 * time.Second, GPUInit: 3 * time.Second, GPUValidated: time.Second})
	spot, onDemand := group(t, c, "spot-gpu-t4"), group(t, c, "gpu-t4")
	for _, z := range spot.Zones {
		spotMIGs = append(spotMIGs, c.Source.Cluster.MIGName(spot, z))
		c.Compute.SetFault("stockout", c.Source.Cluster.MIGName(spot, z), true)
	}
	setProviderID(t, c)
	ca := c.StartAutoscaler(bin)
	c.Create(gpuPod("train"))
	if !eventually(4*time.Minute, func() bool { v := created(c, onDemand); return len(v) > 0 && c.NodeOf("default", "train") == v[0].Name }) {
		t.Fatalf("the pod did not land on gpu-t4 in 4m; calls:\n%s", mutated(c))
	}
	tried := map[string]bool{}
	for _, m := range c.Compute.Mutations() {
		if slices.Contains(spotMIGs, m.MIG) && m.Op != "deleteInstances" {
			tried[m.MIG] = true
		}
	}
	if len(tried) == 0 {
		t.Errorf("the autoscaler never tried the preferred spot group; calls:\n%s", mutated(c))
	}
	t.Logf("spot MIGs tried before the fallback: %d of %d", len(tried), len(spotMIGs))
	// Without the priorities, the next expander may pick a spot MIG first
	// too, by chance.
	var spotURLs []string
	for _, m := range c.Source.AutoscaledMIGs() {
		if m.Group.Name == spot.Name {
			spotURLs = append(spotURLs, m.URL)
		}
	}
	if first := firstChoice(ca.Output()); !slices.Contains(spotURLs, first) {
		t.Errorf("the priority expander's first choice was %q, not a spot-gpu-t4 MIG %v", first, spotURLs)
	}
}

// capCase is a scenario of TestCapsBind: the fixture with one cap lowered
// so that it, and no group's max, stops the autoscaler short of the pods'
// need.
type capCase struct {
	name  string
	edits []edit
	// capName is the cap's path as explain's plan names it.
	capName string
	// group is the group the cap stops; pod and replicas the pending pods.
	group    string
	pod      func(name string) *corev1.Pod
	replicas int
	// budget is the declared cap in the autoscaler's unit (bytes for
	// memory), fixed what the declared nodes outside the MIGs carry of
	// it: what the rendered flag adds (none for GPUs, which the
	// autoscaler does not count on them).
	budget func(src *model.Source) int64
	fixed  func(src *model.Source) int64
	// spend is what a Node counts towards the cap, as the autoscaler
	// counts it (resourcequotas/cache.go totalNodeResources).
	spend func(n *corev1.Node) int64
	// exact: the fixture's budget is a whole number of nodes, so the
	// cloud's Nodes sum to it exactly.
	exact bool
	// logged is what the autoscaler logs once the cap stops it, given the
	// rendered flag's value.
	logged func(flag string) string
	flag   string
}

// gpuType is the fixture's capped GPU type.
const gpuType = "nvidia-tesla-t4"

var capCases = []capCase{{
	// 2 autoscaler nodes (e2-standard-2) and 2 cpu-burst nodes
	// (n2-standard-8): 2×2 + 2×8 = 20 vCPUs.
	name:    "cores",
	edits:   []edit{{"cluster.cue", "cores: max: 256", "cores: max: 20"}},
	capName: "cluster.autoscaler.caps.cores.max",
	group:   "cpu-burst", pod: cpuPod, replicas: 3,
	budget: func(s *model.Source) int64 { return s.Cluster.Autoscaler.Caps.Cores.Max },
	fixed:  func(s *model.Source) int64 { return s.Fixed().CPU },
	spend:  func(n *corev1.Node) int64 { return n.Status.Capacity.Cpu().Value() },
	exact:  true,
	flag:   "cores-total",
	logged: func(string) string { return `"cluster-wide" quota exceeded, resources: [cpu]` },
}, {
	// 2×8 GiB + 2×32 GiB of machine memory; the autoscaler counts the
	// Nodes' capacity, less the kernel's reservation, and a third
	// cpu-burst node does not fit.
	name:    "memory",
	edits:   []edit{{"cluster.cue", "cores: max: 256", "cores: max: 256\n\t\t\tmemoryGiB: max: 80"}},
	capName: "cluster.autoscaler.caps.memoryGiB.max",
	group:   "cpu-burst", pod: cpuPod, replicas: 3,
	budget: func(s *model.Source) int64 { return s.Cluster.Autoscaler.Caps.MemoryGiB.Max << 30 },
	fixed:  func(s *model.Source) int64 { return s.Fixed().MemoryGiB << 30 },
	spend:  func(n *corev1.Node) int64 { return n.Status.Capacity.Memory().Value() },
	flag:   "memory-total",
	logged: func(string) string { return `"cluster-wide" quota exceeded, resources: [memory]` },
}, {
	// 2 autoscaler nodes and 2 cpu-burst nodes.
	name:    "nodes",
	edits:   []edit{{"cluster.cue", "maxNodesTotal: 40", "maxNodesTotal: 4"}},
	capName: "cluster.autoscaler.caps.maxNodesTotal",
	group:   "cpu-burst", pod: cpuPod, replicas: 3,
	budget: func(s *model.Source) int64 { return int64(s.Cluster.Autoscaler.Caps.MaxNodesTotal) },
	fixed:  func(s *model.Source) int64 { return s.Fixed().Nodes },
	spend:  func(*corev1.Node) int64 { return 1 },
	exact:  true,
	flag:   "max-nodes-total",
	// kubernetes/autoscaler cluster-autoscaler-1.35.2,
	// core/static_autoscaler.go: logged while pods are unschedulable and
	// the ready Nodes reach --max-nodes-total.
	logged: func(flag string) string { return "Max total nodes in cluster reached: " + flag + "." },
}, {
	// One spot-gpu-t4 node advertises 4 (one T4 time-sliced 4 ways). The
	// on-prem servers carry 16 T4s, which the autoscaler does not count
	// (they lack the label cloud.google.com/gke-accelerator): a flag that
	// added them would let the cloud grow by them.
	name: "gpus",
	edits: []edit{
		{"cluster.cue", `gpus: "nvidia-tesla-t4": max: 16`, `gpus: "nvidia-tesla-t4": max: 4`},
		{"onprem-gpu.cue", `type: "nvidia-tesla-a100"`, `type: "nvidia-tesla-t4"`},
	},
	capName: `cluster.autoscaler.caps.gpus."nvidia-tesla-t4".max`,
	group:   "spot-gpu-t4", pod: gpuPod, replicas: 5,
	budget: func(s *model.Source) int64 { return s.Cluster.Autoscaler.Caps.GPUs[gpuType].Max },
	fixed: func(s *model.Source) int64 {
		var n int64
		for _, d := range s.DeclaredNodes() {
			if d.GPUType == gpuType {
				n += d.GPUs
			}
		}
		return n
	},
	spend: func(n *corev1.Node) int64 {
		if n.Labels[model.GPULabel] != gpuType {
			return 0
		}
		q := n.Status.Capacity[corev1.ResourceName(model.GPUResource)]
		return q.Value()
	},
	exact:  true,
	flag:   "gpu-total",
	logged: func(string) string { return `"cluster-wide" quota exceeded, resources: [` + gpuType + `]` },
}}

// TestCapsBind: each cap of the source (cluster.autoscaler.caps: vCPUs,
// GiB of memory, nodes, advertised GPUs of a type) is the cloud's budget,
// in both directions. In a run of its own, each cap is lowered so that it
// stops the real autoscaler before the pods' need and before the group's
// max, with the control plane and the on-prem servers registered (the
// autoscaler counts every Node; the rendered flags add what they count):
// the autoscaler logs that cap as the limit, the cloud's Nodes sum to the
// budget (exactly, where it is a whole number of nodes) with no room for
// one more node of the group, the VMs per group and the pods left pending
// are explain's plan. A flag that counted the nodes outside the MIGs twice
// would let the cloud grow past the budget; one that did not count them
// would stop it short.
func TestCapsBind(t *testing.T) {
	t.Parallel()
	for _, tc := range capCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			capsBind(t, tc)
		})
	}
}

func capsBind(t *testing.T, tc capCase) {
	bin := testca.Binary(t, nil)
	c := hybrid(t, Options{Register: time.Second, GPUInit: 2 * time.Second, GPUValidated: time.Second}, tc.edits...)
	setProviderID(t, c)
	group(t, c, tc.group)
	budget, fixed := tc.budget(c.Source), tc.fixed(c.Source)

	// What explain says the autoscaler does with the same pods.
	workloads, _, err := explain.Decode("workloads.yaml", []byte(deployment(t, tc.pod("load"), int32(tc.replicas))))
	if err != nil {
		t.Fatal(err)
	}
	e, err := explain.New(c.Source, c.Files, workloads)
	if err != nil {
		t.Fatal(err)
	}
	plan := e.Plan(workloads)
	want, pending, binding := map[string]int{}, 0, false
	for _, s := range plan.Steps {
		want[s.Group] += s.Nodes
		if s.Group == tc.group {
			binding = strings.Contains(s.Stop, tc.capName) && !s.AtMax && !strings.Contains(s.Stop, "at its max")
		}
		t.Logf("explain's plan: %s", s)
	}
	for _, p := range plan.Pending {
		pending += p.Pods
	}
	if !binding || want[tc.group] == 0 || pending == 0 {
		t.Fatalf("in explain's plan %s stops at %d nodes with %d pods pending, not by %s: the fixture no longer binds the cap", tc.group, want[tc.group], pending, tc.capName)
	}
	flags := flagValue(t, c, tc.flag)
	t.Logf("%s %d, the nodes outside the MIGs carry %d; rendered --%s=%s", tc.capName, budget, fixed, tc.flag, flags)

	ca := c.StartAutoscaler(bin)
	for i := range tc.replicas {
		c.Create(tc.pod(fmt.Sprintf("load-%02d", i)))
	}
	got := func() map[string]int {
		m := map[string]int{}
		for _, g := range c.Source.Groups() {
			if g.Autoscaled() {
				m[g.Name] = len(created(c, g))
			}
		}
		return m
	}
	same := func() bool {
		for g, n := range got() {
			if n != want[g] {
				return false
			}
		}
		return true
	}
	logged := tc.logged(flags)
	if !eventually(3*time.Minute, func() bool { return same() && ca.Count(logged) > 0 }) {
		t.Fatalf("after 3m: VMs %v, explain's plan %v; the autoscaler logged %q %d times; calls:\n%s", got(), want, logged, ca.Count(logged), mutated(c))
	}
	// Three more loops: nothing more is added.
	time.Sleep(15 * time.Second)
	if !same() {
		t.Errorf("VMs %v, explain's plan %v; calls:\n%s", got(), want, mutated(c))
	}

	// What the cloud's Nodes count towards the cap, as the autoscaler
	// counts them, once every VM's Node is registered (and a GPU node
	// reports its GPUs).
	var spent, per int64
	counted := func() bool {
		spent, per = 0, 0
		for _, g := range c.Source.CloudGroups() {
			for _, vm := range created(c, g) {
				n := c.Node(vm.Name)
				if n == nil {
					return false
				}
				if gpus := n.Status.Capacity[corev1.ResourceName(model.GPUResource)]; g.GPU != nil && gpus.IsZero() {
					return false
				}
				spent += tc.spend(n)
				if g.Name == tc.group {
					per = tc.spend(n)
				}
			}
		}
		return true
	}
	if !eventually(time.Minute, counted) {
		t.Fatalf("the cloud's VMs did not all register their Nodes: %v", c.Nodes(""))
	}
	t.Logf("the cloud's Nodes count %d of the budget %d, %d per %s node", spent, budget, per, tc.group)
	if spent > budget {
		t.Errorf("the cloud's Nodes count %d, over the budget %d", spent, budget)
	}
	if spent+per <= budget {
		t.Errorf("the cloud's Nodes count %d: one more %s node (%d) fits the budget %d", spent, tc.group, per, budget)
	}
	if tc.exact && spent != budget {
		t.Errorf("the cloud's Nodes count %d, the budget is %d", spent, budget)
	}
	if fixed < per {
		t.Errorf("the nodes outside the MIGs carry %d, less than one %s node (%d): the fixture no longer tells a flag that counts them twice, or not at all", fixed, tc.group, per)
	}
	if !eventually(time.Minute, func() bool { return unbound(c) == pending }) {
		t.Errorf("%d pods pending, explain's plan says %d", unbound(c), pending)
	}
}

// flagValue is the value of a flag in the rendered flags.txt (for
// --gpu-total, the fixture's GPU type's).
func flagValue(t *testing.T, c *Cluster, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Out, "cluster-autoscaler", "flags.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "--"+name+"="); ok && (name != "gpu-total" || strings.HasPrefix(v, gpuType+":")) {
			return v
		}
	}
	t.Fatalf("flags.txt has no --%s:\n%s", name, b)
	return ""
}

// deployment is a Deployment of replicas copies of the pod, as YAML.
func deployment(t *testing.T, p *corev1.Pod, replicas int32) string {
	t.Helper()
	d := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: p.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels}, Spec: p.Spec},
		},
	}
	b, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unbound counts the pods bound to no node.
func unbound(c *Cluster) int {
	pods, err := c.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			n++
		}
	}
	return n
}

// TestHarness checks the stand-ins without the autoscaler: the fake serves
// a template and a zonal MIG per group and zone of the rendered Terraform,
// the gce-static group's VMs register Nodes with their join script's
// labels, taints and providerID, and set-provider-id.sh gives the declared
// nodes outside the MIGs theirs; a pod is bound where it fits.
func TestHarness(t *testing.T) {
	t.Parallel()
	c := hybrid(t, Options{Register: 100 * time.Millisecond})
	migs := 0
	for _, g := range c.Source.CloudGroups() {
		migs += len(g.Zones)
	}
	if got := len(c.Compute.MIGs()); got != migs {
		t.Errorf("%d MIGs served, the source has %d", got, migs)
	}
	g := group(t, c, c.Source.Cluster.Autoscaler.NodeGroup)
	for _, name := range c.Nodes(c.Source.Cluster.BaseInstanceName(g)) {
		n := c.Node(name)
		if n.Labels[model.GroupLabel] != g.Name || !strings.HasPrefix(n.Spec.ProviderID, "gce://"+c.Source.Cluster.GCP.Project+"/") {
			t.Errorf("node %s: labels %v providerID %q", name, n.Labels, n.Spec.ProviderID)
		}
		for _, want := range g.Taints {
			if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == want.Key && t.Value == want.Value }) {
				t.Errorf("node %s lacks the group's taint %s: %v", name, want.Key, n.Spec.Taints)
			}
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
			t.Errorf("node %s keeps the not-ready taint", name)
		}
	}
	setProviderID(t, c)
	tol := []string{}
	for _, tt := range g.Taints {
		tol = append(tol, tt.Key)
	}
	c.Create(pendingPod("fits", resources("100m", 0), map[string]string{model.VerifiedGroupLabel: g.Name}, tol...), pendingPod("nowhere", resources("500", 0), nil))
	if !eventually(20*time.Second, func() bool {
		return strings.HasPrefix(c.NodeOf("default", "fits"), c.Source.Cluster.BaseInstanceName(g))
	}) {
		t.Errorf("the pod that fits the autoscaler's node was not bound:\n%s", c.Events())
	}
	if n := c.NodeOf("default", "nowhere"); n != "" {
		t.Errorf("a pod of 500 CPUs was bound to %s", n)
	}
}
