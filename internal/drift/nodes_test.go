package drift_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodecheck"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// fixtureNow is when testdata/nodes.json was "recorded".
var fixtureNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func readFixtureNodes(t *testing.T) []corev1.Node {
	t.Helper()
	data, err := os.ReadFile("testdata/nodes.json")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := drift.ReadNodes("testdata/nodes.json", data)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// findingKeys renders findings as kind[:key] for comparison.
func findingKeys(fs []nodecheck.Finding) []string {
	out := []string{}
	for _, f := range fs {
		s := f.Kind
		if f.Key != "" {
			s += ":" + f.Key
		}
		out = append(out, s)
	}
	return out
}

// expectedFixture is what the recorded nodes show against the example.
var expectedFixture = map[string]struct {
	group, matchedBy string
	findings         []string
}{
	// Matches the source; its NFD label is not "extra".
	"hybrid-ai-cpu-burst-x7k2": {"cpu-burst", "providerID", []string{}},
	// Joined without the GPU label.
	"hybrid-ai-gpu-t4-m2pq": {"gpu-t4", "providerID", []string{"label-missing:cloud.google.com/gke-accelerator"}},
	// Two hours old and still carrying its startup taint, without GPUs.
	"hybrid-ai-gpu-t4-r8zn": {"gpu-t4", "providerID", []string{"startup-taint-stuck:startup-taint.cluster-autoscaler.kubernetes.io/gpu-not-ready", "gpu-allocatable:nvidia.com/gpu"}},
	// Five minutes old: startup taint, not-ready taint and no GPUs are normal.
	"hybrid-ai-gpu-t4-w4ds": {"gpu-t4", "providerID", []string{}},
	// Its group was removed from the source.
	"hybrid-ai-l4-old-9qzt": {"", "", []string{"group-removed:nodegen.dev/node-group"}},
	// On-prem node matched by its identity label; GPU Operator labels
	// ignored. Without a providerID the autoscaler fails on it.
	"onprem-a100-01": {"onprem-gpu", "label", []string{"provider-id:spec.providerID"}},
	// The control plane, of no group, without a providerID either.
	"cp-1": {"", "", []string{"provider-id:spec.providerID"}},
	// A cloud VM of no group.
	"rogue-vm-1": {"", "", []string{"unknown-cloud-node"}},
}

func TestCheckNodesFixture(t *testing.T) {
	src, _ := testsrc.Example(t)
	results, unmanaged := nodecheck.Check(src, readFixtureNodes(t), nodecheck.Options{Now: fixtureNow, StuckAfter: 30 * time.Minute})
	if len(unmanaged) != 0 {
		t.Errorf("unmanaged %v, want none (cp-1 lacks its providerID)", unmanaged)
	}
	if len(results) != len(expectedFixture) {
		t.Errorf("%d results, want %d", len(results), len(expectedFixture))
	}
	for _, r := range results {
		if r.Findings == nil {
			t.Errorf("%s: findings nil, want a list (JSON [])", r.Name)
		}
		want, ok := expectedFixture[r.Name]
		if !ok {
			t.Errorf("unexpected node %s", r.Name)
			continue
		}
		if r.Group != want.group || r.MatchedBy != want.matchedBy || !slices.Equal(findingKeys(r.Findings), want.findings) {
			t.Errorf("%s: group %q by %q, findings %v; want %q by %q, %v\n%+v", r.Name, r.Group, r.MatchedBy, findingKeys(r.Findings), want.group, want.matchedBy, want.findings, r.Findings)
		}
	}
}

// The stuck threshold decides: under it, the startup taint and missing
// GPUs are initialisation; over it, both are reported.
func TestStuckThreshold(t *testing.T) {
	src, _ := testsrc.Example(t)
	nodes := readFixtureNodes(t)
	for _, c := range []struct {
		after time.Duration
		want  []string
	}{
		{3 * time.Hour, []string{}},
		{119 * time.Minute, []string{"startup-taint-stuck:startup-taint.cluster-autoscaler.kubernetes.io/gpu-not-ready", "gpu-allocatable:nvidia.com/gpu"}},
	} {
		results, _ := nodecheck.Check(src, nodes, nodecheck.Options{Now: fixtureNow, StuckAfter: c.after})
		for _, r := range results {
			if r.Name == "hybrid-ai-gpu-t4-r8zn" && !slices.Equal(findingKeys(r.Findings), c.want) {
				t.Errorf("stuck after %v: %v, want %v", c.after, findingKeys(r.Findings), c.want)
			}
		}
	}
}

// One finding per kind of difference, each made on a copy of the matching node.
func TestNodeDifferences(t *testing.T) {
	src, _ := testsrc.Example(t)
	var base corev1.Node
	for _, n := range readFixtureNodes(t) {
		if n.Name == "hybrid-ai-cpu-burst-x7k2" {
			base = n
		}
	}
	cases := []struct {
		name   string
		mutate func(n *corev1.Node)
		want   []string
		msg    string
	}{
		{"a label set by hand", func(n *corev1.Node) { n.Labels["team"] = "ml" }, []string{"label-extra:team"}, "label team=ml is not in the source"},
		{"a label changed", func(n *corev1.Node) { n.Labels["example.com/pool"] = "cpu" }, []string{"label-different:example.com/pool"}, "label example.com/pool is cpu, the source says cpu-burst"},
		{"the verified group label, as the approver sets it", func(n *corev1.Node) { n.Labels[model.VerifiedGroupLabel] = "cpu-burst" }, []string{}, ""},
		{"the verified group label of another group", func(n *corev1.Node) { n.Labels[model.VerifiedGroupLabel] = "gpu-t4" },
			[]string{"label-different:" + model.VerifiedGroupLabel}, "label " + model.VerifiedGroupLabel + " is gpu-t4, the source says cpu-burst"},
		{"wrong arch", func(n *corev1.Node) { n.Labels["kubernetes.io/arch"] = "arm64" }, []string{"label-different:kubernetes.io/arch"}, ""},
		{"wrong instance type", func(n *corev1.Node) { n.Labels["node.kubernetes.io/instance-type"] = "n2-standard-4" }, []string{"label-different:node.kubernetes.io/instance-type"}, ""},
		{"zone label disagrees with the providerID", func(n *corev1.Node) { n.Labels["topology.kubernetes.io/zone"] = "us-central1-b" }, []string{"label-different:topology.kubernetes.io/zone"}, ""},
		{"a taint added by hand", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "team", Value: "ml", Effect: corev1.TaintEffectNoSchedule})
		}, []string{"taint-extra:team"}, "taint team=ml:NoSchedule is not in the source"},
		{"uninitialized taint (no cloud-controller-manager removes it)", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule})
		}, []string{"taint-extra:node.cloudprovider.kubernetes.io/uninitialized"}, ""},
		{"condition and scale-down taints are transient", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints,
				corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute},
				corev1.Taint{Key: "ToBeDeletedByClusterAutoscaler", Value: "1717243200", Effect: corev1.TaintEffectNoSchedule})
		}, []string{}, ""},
		{"GPUs on a CPU node", func(n *corev1.Node) { n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("2") }, []string{"gpu-allocatable:nvidia.com/gpu"}, "nvidia.com/gpu allocatable is 2, the group has 0 per node"},
		{"no providerID, matched by label", func(n *corev1.Node) { n.Spec.ProviderID = "" }, []string{"not-in-mig"}, ""},
		{"an instance of another MIG's name", func(n *corev1.Node) {
			n.Spec.ProviderID = "gce://acme-hybrid-ai/us-central1-a/hybrid-ai-cpu-burst-manual-1"
		}, []string{"not-in-mig"}, ""},
		{"the providerID's MIG wins over the label", func(n *corev1.Node) {
			n.Spec.ProviderID = "gce://acme-hybrid-ai/us-central1-a/hybrid-ai-gpu-t4-k2k2"
		}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := *base.DeepCopy()
			c.mutate(&n)
			results, _ := nodecheck.Check(src, []corev1.Node{n}, nodecheck.Options{Now: fixtureNow, StuckAfter: 30 * time.Minute})
			if len(results) != 1 {
				t.Fatalf("results %+v", results)
			}
			r := results[0]
			if c.want == nil {
				// Compared with gpu-t4: its labels and GPUs are missing and its pool differs.
				if r.Group != "gpu-t4" || r.MatchedBy != "providerID" || !slices.Contains(findingKeys(r.Findings), "label-different:nodegen.dev/node-group") {
					t.Errorf("got %s by %s: %v", r.Group, r.MatchedBy, findingKeys(r.Findings))
				}
				return
			}
			if !slices.Equal(findingKeys(r.Findings), c.want) {
				t.Errorf("findings %v, want %v\n%+v", findingKeys(r.Findings), c.want, r.Findings)
			}
			if c.msg != "" && (len(r.Findings) == 0 || r.Findings[0].Message != c.msg) {
				t.Errorf("message %+v, want %q", r.Findings, c.msg)
			}
		})
	}
}

func TestReadNodes(t *testing.T) {
	one := `apiVersion: v1
kind: Node
metadata: {name: a, labels: {nodegen.dev/node-group: cpu-burst}}
spec: {providerID: "gce://acme-hybrid-ai/us-central1-a/hybrid-ai-cpu-burst-abcd", someFutureField: 1}
`
	nodes, err := drift.ReadNodes("one.yaml", []byte(one))
	if err != nil || len(nodes) != 1 || nodes[0].Name != "a" || nodes[0].Spec.ProviderID == "" {
		t.Errorf("single node: %v %v", nodes, err)
	}
	list := `{"apiVersion": "v1", "kind": "NodeList", "items": [{"metadata": {"name": "b"}}]}`
	if nodes, err := drift.ReadNodes("list.json", []byte(list)); err != nil || len(nodes) != 1 || nodes[0].Name != "b" {
		t.Errorf("NodeList: %v %v", nodes, err)
	}
	for _, c := range []struct{ in, want string }{
		{`{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}]}`, "bad.json: items[0] is a v1 Pod, not a v1 Node"},
		{`{"apiVersion": "v1", "kind": "PodList", "items": []}`, `got apiVersion "v1" kind "PodList"`},
		{`{"apiVersion": "v1", "kind": "List", "items": [{"metadata": {"name": 3}}]}`, "bad.json: items[0]:"},
		{"{\"apiVersion\": \"v1\",\n \"kind\": List\", }", "bad.json: "},
	} {
		if _, err := drift.ReadNodes("bad.json", []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
}

// The providerID of the nodes outside the MIGs, as the autoscaler's GCE
// provider maps it: none, or one it cannot parse, is reported at the
// node's group (or of a node of no group); the one set-provider-id.sh
// gives is not; one the provider takes for an instance of a MIG the node
// is not in is reported.
func TestProviderIDOutsideMIGs(t *testing.T) {
	src, _ := testsrc.Example(t)
	onprem := func(name, pid string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"nodegen.dev/node-group": "onprem-gpu", "example.com/pool": "gpu-onprem", "example.com/location": "onprem"}},
			Spec:   corev1.NodeSpec{ProviderID: pid, Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	}
	cp := func(pid string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp-1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
			Spec: corev1.NodeSpec{ProviderID: pid}}
	}
	cases := []struct {
		name      string
		node      corev1.Node
		group     string
		findings  []string
		unmanaged bool
	}{
		{"OnPremWithout", onprem("a100-1", ""), "onprem-gpu", []string{"provider-id:spec.providerID"}, false},
		{"OnPremUnmanaged", onprem("a100-1", model.UnmanagedProviderID("a100-1")), "onprem-gpu", []string{}, false},
		{"OnPremUnparsable", onprem("a100-1", "kind://docker/kind/a100-1"), "onprem-gpu", []string{"provider-id:spec.providerID"}, false},
		{"OnPremForeignParsable", onprem("a100-1", "vsphere://4231-a100-1"), "onprem-gpu", []string{}, false},
		{"OnPremLikeACloudVM", onprem("a100-1", "gce://acme-hybrid-ai/us-central1-b/hybrid-ai-gpu-t4-a100-01"), "onprem-gpu", []string{"provider-id-other-mig:spec.providerID"}, false},
		{"ControlPlaneWithout", cp(""), "", []string{"provider-id:spec.providerID"}, false},
		{"ControlPlaneUnmanaged", cp(model.UnmanagedProviderID("cp-1")), "", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			results, unmanaged := nodecheck.Check(src, []corev1.Node{c.node}, nodecheck.Options{Now: fixtureNow, StuckAfter: 30 * time.Minute})
			if c.unmanaged {
				if len(results) != 0 || !slices.Equal(unmanaged, []string{c.node.Name}) {
					t.Errorf("results %+v, unmanaged %v; want it unmanaged", results, unmanaged)
				}
				return
			}
			if len(results) != 1 || len(unmanaged) != 0 {
				t.Fatalf("results %+v, unmanaged %v", results, unmanaged)
			}
			if r := results[0]; r.Group != c.group || !slices.Equal(findingKeys(r.Findings), c.findings) {
				t.Errorf("group %q findings %v, want %q %v\n%+v", r.Group, findingKeys(r.Findings), c.group, c.findings, r.Findings)
			}
		})
	}
	t.Run("NoneWithoutProviderID", func(t *testing.T) {
		none := *src
		none.Cluster.OnpremProviderID = model.OnpremProviderIDNone
		results, unmanaged := nodecheck.Check(&none, []corev1.Node{onprem("a100-1", ""), cp("")}, nodecheck.Options{Now: fixtureNow, StuckAfter: 30 * time.Minute})
		if len(results) != 1 || len(results[0].Findings) != 0 || !slices.Equal(unmanaged, []string{"cp-1"}) {
			t.Errorf("results %+v unmanaged %v; want the on-prem node fine and cp-1 unmanaged", results, unmanaged)
		}
	})
}

// TestDeclaredNodes: once the source declares the nodes outside the MIGs,
// drift reports a declared node that is not there and a node outside the
// MIGs that is not declared; a source that declares none reports neither.
func TestDeclaredNodes(t *testing.T) {
	src, _ := testsrc.Example(t)
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "cp-1"}, Spec: corev1.NodeSpec{ProviderID: model.UnmanagedProviderID("cp-1")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cp-2"}, Spec: corev1.NodeSpec{ProviderID: model.UnmanagedProviderID("cp-2")}},
	}
	opts := nodecheck.Options{Now: fixtureNow, StuckAfter: 30 * time.Minute}
	if results, unmanaged := nodecheck.Check(src, nodes, opts); len(results) != 0 || !slices.Equal(unmanaged, []string{"cp-1", "cp-2"}) {
		t.Fatalf("nothing declared: results %+v unmanaged %v, want both unmanaged", results, unmanaged)
	}
	decl := *src
	decl.Cluster.ControlPlaneNodes = map[string]model.FixedNode{"cp-1": {CPU: 16, MemoryGiB: 64}}
	groups := map[string]*model.NodeGroup{}
	for k, g := range src.NodeGroups {
		groups[k] = g
	}
	onprem := *src.NodeGroups["onprem-gpu"]
	onprem.Nodes = map[string]model.FixedNode{"onprem-gpu-01": {CPU: 128, MemoryGiB: 1024}}
	groups["onprem-gpu"] = &onprem
	decl.NodeGroups = groups
	results, unmanaged := nodecheck.Check(&decl, nodes, opts)
	if !slices.Equal(unmanaged, []string{"cp-1"}) {
		t.Errorf("unmanaged %v, want the declared cp-1 alone", unmanaged)
	}
	got := map[string][]string{}
	for _, r := range results {
		for _, f := range r.Findings {
			got[r.Name] = append(got[r.Name], f.Kind)
		}
	}
	want := map[string][]string{"cp-2": {nodecheck.Undeclared}, "onprem-gpu-01": {nodecheck.DeclaredMissing}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("findings %v, want %v", got, want)
	}
}
