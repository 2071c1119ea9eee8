package nodetemplate_test

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
	"github.com/nodegen/nodegen/internal/revision"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The expected values are worked out by hand from the autoscaler's
// formulas (cloudprovider/gce/gce_reserved.go, templates.go), not taken
// from a run of the code.
func TestKernelReserved(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	cases := []struct {
		mem                    int64
		os, distribution, arch string
		want                   int64
	}{
		// n1-standard-8, 30720 MiB = 32212254720 B: /64 = 503316480, +16Mi,
		// +64Mi (> 3Gi), correction int(0.00175 × mem) = 56371445, +4Mi.
		{30720 * mib, "linux", "ubuntu", "amd64", 503316480 + 16777216 + 67108864 + 56371445 + 4194304},
		// 4Gi on cos: 67108864 + 16Mi + 64Mi + 8Mi (≤ 8Gi) + int(7516192.768).
		{4 * gib, "linux", "cos", "amd64", 67108864 + 16777216 + 67108864 + 8388608 + 7516192},
		// The same on arm64: × 0.9971, rounded: 166899744 × 0.9971 = 166415734.84.
		{4 * gib, "linux", "cos", "arm64", 166415735},
		// 2Gi: no IO TLB, low-memory offset: 33554432 + 16Mi + 8Mi + int(3758096.384) + 4Mi.
		{2 * gib, "linux", "ubuntu", "amd64", 33554432 + 16777216 + 8388608 + 3758096 + 4194304},
		// 624Gi: the correction is capped at 248Mi.
		{624 * gib, "linux", "ubuntu", "amd64", 624*gib/64 + 16*mib + 64*mib + 248*mib + 4*mib},
		{16 * gib, "windows", "windows_ltsc", "amd64", 0},
	}
	for _, c := range cases {
		if got := nodetemplate.KernelReserved(c.mem, c.os, c.distribution, c.arch); got != c.want {
			t.Errorf("KernelReserved(%d, %s, %s, %s) = %d, want %d", c.mem, c.os, c.distribution, c.arch, got, c.want)
		}
	}
}

func TestOSReservedEphemeralStorage(t *testing.T) {
	const gib = 1 << 30
	// 200Gi = 214748364800 B on ubuntu: ceil(0.03083 × disk) = 6620692087,
	// ceil(0.171Gi) = 183609852, buffer min(100Mi, ceil(0.001 × disk)) = 104857600.
	if got, want := nodetemplate.OSReservedEphemeralStorage(200*gib, "ubuntu", "amd64"), int64(6620692087+183609852+104857600); got != want {
		t.Errorf("ubuntu 200Gi: %d, want %d", got, want)
	}
	// 50Gi = 53687091200 B on cos: ceil(0.015635 × disk) = 839397671 (839397670.912),
	// ceil(4.148Gi) = 4453881086 (4453881085.952), buffer ceil(53687091.2) = 53687092.
	if got, want := nodetemplate.OSReservedEphemeralStorage(50*gib, "cos", "amd64"), int64(839397671+4453881086+53687092); got != want {
		t.Errorf("cos 50Gi: %d, want %d", got, want)
	}
}

// The GPU group's template node, zone us-central1-b.
func TestTemplateNodeGPU(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	n, err := nodetemplate.TemplateNode(&src.Cluster, g, "us-central1-b", files[layout.KubeEnvPath(g.Name)], src.ExtraStartupTaints())
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := maps.Clone(g.NodeLabels)
	rev, err := revision.Of(src, g, files[layout.KubeEnvPath(g.Name)], files[layout.StartupScriptPath(g.Name)])
	if err != nil {
		t.Fatal(err)
	}
	wantLabels[model.RevisionLabel] = rev
	// The node CSR approver's, once Compute shows the VM is the group's;
	// kube-env declares it so that the autoscaler's template node has it.
	wantLabels[model.VerifiedGroupLabel] = g.Name
	for k, v := range map[string]string{
		"kubernetes.io/arch":               "amd64",
		"kubernetes.io/os":                 "linux",
		"node.kubernetes.io/instance-type": "n1-standard-8",
		"topology.kubernetes.io/zone":      "us-central1-b",
		"topology.kubernetes.io/region":    "us-central1",
		"topology.gke.io/zone":             "us-central1-b",
		"kubernetes.io/hostname":           "hybrid-ai-gpu-t4-template",
		// The kubelet's own, declared in kube-env's node_labels.
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": "amd64",
	} {
		wantLabels[k] = v
	}
	if !maps.Equal(n.Labels, wantLabels) {
		t.Errorf("labels\n got %v\nwant %v", n.Labels, wantLabels)
	}
	// The startup taint is gone; the group's taint stays.
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != (corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}) {
		t.Errorf("taints %v", n.Spec.Taints)
	}
	// n1-standard-8: 8 vCPUs, 30720 MiB. kube-env: kube_reserved
	// cpu=200m,memory=1536Mi; evictionHard memory.available=100Mi,
	// nodefs.available=10%; os_distribution ubuntu; boot disk 200 GB.
	const (
		memCap   = 32212254720 - 647768309 // kernel reserve, see TestKernelReserved
		memAlloc = memCap - 1536<<20 - 100<<20
		ephCap   = 214748364800 - (6620692087 + 183609852 + 104857600)
		ephAlloc = ephCap - 20783920526 // int(0.1 × 207839205261)
	)
	for _, c := range []struct {
		list      corev1.ResourceList
		name      corev1.ResourceName
		wantMilli int64
	}{
		{n.Status.Capacity, corev1.ResourceCPU, 8000},
		{n.Status.Allocatable, corev1.ResourceCPU, 7800},
		{n.Status.Capacity, corev1.ResourceMemory, memCap * 1000},
		{n.Status.Allocatable, corev1.ResourceMemory, memAlloc * 1000},
		{n.Status.Capacity, "nvidia.com/gpu", 1000},
		{n.Status.Allocatable, "nvidia.com/gpu", 1000},
		{n.Status.Capacity, corev1.ResourceEphemeralStorage, ephCap * 1000},
		{n.Status.Allocatable, corev1.ResourceEphemeralStorage, ephAlloc * 1000},
		{n.Status.Allocatable, corev1.ResourcePods, 110000},
	} {
		q := c.list[c.name]
		if q.MilliValue() != c.wantMilli {
			t.Errorf("%s = %s (%dm), want %dm", c.name, q.String(), q.MilliValue(), c.wantMilli)
		}
	}
}

// Without kube_reserved in kube-env the autoscaler sets allocatable to
// capacity; evictionHard falls back to its defaults when absent.
func TestAllocatableDefaults(t *testing.T) {
	src, _ := testsrc.Example(t)
	g := src.NodeGroups["cpu-burst"]
	env := []byte("AUTOSCALER_ENV_VARS: os=linux;os_distribution=ubuntu;arch=amd64;node_labels=a=b\n")
	n, err := nodetemplate.TemplateNode(&src.Cluster, g, "us-central1-a", env, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		c, a := n.Status.Capacity[r], n.Status.Allocatable[r]
		if c.Cmp(a) != 0 {
			t.Errorf("%s: allocatable %s != capacity %s without kube_reserved", r, a.String(), c.String())
		}
	}
	env = []byte("AUTOSCALER_ENV_VARS: os=linux;os_distribution=ubuntu;arch=amd64;node_labels=a=b;kube_reserved=cpu=1\n")
	n, err = nodetemplate.TemplateNode(&src.Cluster, g, "us-central1-a", env, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, a := n.Status.Capacity[corev1.ResourceMemory], n.Status.Allocatable[corev1.ResourceMemory]
	if c.Value()-a.Value() != 100<<20 {
		t.Errorf("memory: capacity - allocatable = %d, want the default 100Mi eviction threshold", c.Value()-a.Value())
	}
}
