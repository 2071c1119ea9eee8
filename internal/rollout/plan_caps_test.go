package rollout_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/rollout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The plan's surge stays within the autoscaler's cluster-wide caps,
// counted as the autoscaler counts them: every Node (a virtual-kubelet one
// excepted), a GPU node's GPUs by type, its group's advertised count while
// it reports none. A cap that leaves room for fewer replacements than the
// surge limits the batch; one that leaves none skips the MIG. Without caps
// the surge is the policy's (bounded by max alone).
func TestPlanSurgeWithinCaps(t *testing.T) {
	for _, c := range []struct {
		name, caps string
		want       []string
	}{
		{"no caps", "", []string{
			"   us-central1-a (MIG hybrid-ai-cpu-burst-us-central1-a, 0 current):\n     surge 3, then drain",
			"   us-central1-a (MIG hybrid-ai-gpu-t4-us-central1-a, 0 current):\n     surge limited to 2: the group's max is 4 nodes per MIG\n     surge 2, then drain",
		}},
		{"capped", `cluster: autoscaler: caps: {maxNodesTotal: 8, gpus: "nvidia-tesla-t4": max: 2}` + "\n", []string{
			"     surge limited to 1 by the autoscaler's caps: cluster.autoscaler.caps.maxNodesTotal (7 in use of 8)",
			"     at the autoscaler's caps: cluster.autoscaler.caps.gpus.\"nvidia-tesla-t4\" (2 in use of 2) leaves no room for a surge, skipped",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			edits := map[string]string{"rollout.cue": "cluster: rollout: surge: 3\n"}
			if c.caps != "" {
				edits["caps.cue"] = c.caps
			}
			src, files := load(t, testsrc.Copy(t, edits))
			if f := src.Fixed(); f.Nodes != 0 {
				t.Fatalf("the tests' source declares nodes outside the MIGs: %+v", f)
			}
			revs := revisionsOf(t, src, files)
			p := src.Cluster.GCP.Project
			node := func(name, group string, gpus string) corev1.Node {
				n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{model.GroupLabel: group, model.RevisionLabel: "0123456789ab"}},
					Spec: corev1.NodeSpec{ProviderID: "gce://" + p + "/us-central1-a/" + name}}
				if group == "gpu-t4" {
					n.Labels[model.GPULabel] = "nvidia-tesla-t4"
				}
				if gpus != "" {
					n.Status.Allocatable = corev1.ResourceList{model.GPUResource: resource.MustParse(gpus)}
				}
				return n
			}
			nodes := []corev1.Node{
				node("hybrid-ai-cpu-burst-c001", "cpu-burst", ""),
				node("hybrid-ai-cpu-burst-c002", "cpu-burst", ""),
				node("hybrid-ai-cpu-burst-c003", "cpu-burst", ""),
				node("hybrid-ai-cpu-burst-c004", "cpu-burst", ""),
				node("hybrid-ai-gpu-t4-g001", "gpu-t4", "1"),
				node("hybrid-ai-gpu-t4-g002", "gpu-t4", ""), // GPUs not reported yet: counts its group's 1
				{ObjectMeta: metav1.ObjectMeta{Name: "onprem-1"}},
				{ObjectMeta: metav1.ObjectMeta{Name: "vk-1", Labels: map[string]string{"type": "virtual-kubelet"}}},
			}
			var out bytes.Buffer
			if err := rollout.MakePlan(src, revs, nodes).WriteText(&out, src.Cluster.Autoscaler.NodeGroup); err != nil {
				t.Fatal(err)
			}
			t.Logf("plan:\n%s", out.String())
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the plan lacks %q", w)
				}
			}
		})
	}
}
