package render_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// A group's machine shape is decided once, when the source is loaded
// (model.Shape), and every artifact reads it there: with cpu-burst's
// stored shape changed to one the machine-type table does not give its
// n2-standard-8 (6 vCPUs, 12 GiB, one built-in GPU), the autoscaler's
// template node built from its kube-env, its instance template's
// scheduling and the day-0 quota all follow the stored shape. A package
// that looked the machine type up again would still see 8 vCPUs, 32 GiB
// and no GPU.
func TestArtifactsReadTheStoredShape(t *testing.T) {
	src, before := testsrc.Example(t)
	g := src.NodeGroups["cpu-burst"]
	if g.Shape.Machine == nil || g.Shape.CPU != 8 || g.Shape.MemoryBytes != 32<<30 || g.HasGPUs() {
		t.Fatalf("cpu-burst's shape as loaded: %+v (machine %+v), want n2-standard-8's", g.Shape, g.Shape.Machine)
	}
	m := *g.Shape.Machine
	m.VCPUs, m.MemoryMiB = 6, 12<<10
	m.GPUType, m.GPUCount = "nvidia-l4", 1
	g.Shape = model.Shape{Machine: &m, CPU: 6, MemoryBytes: 12 << 30}
	after, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}

	node, err := nodetemplate.TemplateNode(&src.Cluster, g, g.Zones[0], after[layout.KubeEnvPath(g.Name)], nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := node.Status.Capacity[corev1.ResourceCPU]; c.Value() != 6 {
		t.Errorf("template node cpu capacity %s, want the stored shape's 6", c.String())
	}
	mem := int64(12 << 30)
	if want, c := mem-nodetemplate.KernelReserved(mem, "linux", g.OSDistribution, g.Arch), node.Status.Capacity[corev1.ResourceMemory]; c.Value() != want {
		t.Errorf("template node memory capacity %d, want %d (the stored shape's 12Gi less the kernel's share)", c.Value(), want)
	}

	const terminate = `on_host_maintenance = "TERMINATE"`
	tf := layout.TerraformGroupPath(g.Name)
	if strings.Contains(string(before[tf]), terminate) {
		t.Fatalf("%s stops on host maintenance before the change: the test needs a group without GPUs", tf)
	}
	if !strings.Contains(string(after[tf]), terminate) {
		t.Errorf("%s lets VMs with the stored shape's built-in GPU live-migrate:\n%s", tf, after[tf])
	}

	drop := 2 * g.MaxNodes() // 8 vCPUs become 6 on each of its nodes
	if !strings.Contains(string(after[layout.Day0DocsPath]), fmt.Sprintf("vCPUs: %d on demand", onDemandVCPUs(t, before[layout.Day0DocsPath])-drop)) {
		t.Errorf("the day-0 quota does not count %d fewer vCPUs for cpu-burst's %d nodes of 6", drop, g.MaxNodes())
	}
}

// onDemandVCPUs reads the on-demand vCPUs of the day-0 page's quota.
func onDemandVCPUs(t *testing.T, doc []byte) int {
	t.Helper()
	_, rest, ok := strings.Cut(string(doc), "vCPUs: ")
	var n int
	if _, err := fmt.Sscanf(rest, "%d on demand", &n); !ok || err != nil {
		t.Fatalf("the day-0 page has no vCPU quota (%v)", err)
	}
	return n
}
