package explain_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
)

// capacitySource: two untainted autoscaled groups a plain pod fits, cpu
// (priority 20) and gpu (no priority: 0, two T4 per node); %s is raw CUE
// in cluster.autoscaler.
const capacitySource = `cluster: {
	name:                 "cap"
	kubernetesVersion:    "1.35.2"
	controlPlaneEndpoint: "10.0.0.1:6443"
	caCertHashes: ["sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d"]
	joinToken: metadataKey: "join"
	gcp: {project: "cap-project-1", region: "europe-west4"}
	autoscaler: {
		nodeGroup: "ca", singleZone: true
		%s
	}
}
nodeGroups: ca: {
	kind: "gce-static"
	zones: ["europe-west4-a"]
	machineType: "e2-standard-2"
	image: "projects/cap-project-1/global/images/family/node"
	min: 1
	max: 1
	taints: [{key: "example.com/ca", value: "only", effect: "NoSchedule"}]
}
nodeGroups: cpu: {
	kind: "gce"
	zones: ["europe-west4-a", "europe-west4-b"]
	machineType: "n2-standard-8"
	image: "projects/cap-project-1/global/images/family/node"
	min: 0
	max: 4
	priority: 20
}
nodeGroups: gpu: {
	kind: "gce"
	zones: ["europe-west4-b"]
	machineType: "n1-standard-8"
	image: "projects/cap-project-1/global/images/family/node"
	min: 0
	max: 2
	gpu: {type: "nvidia-tesla-t4", count: 2}
	startupTaint: {key: "startup-taint.cluster-autoscaler.kubernetes.io/gpu", value: "x", effect: "NoSchedule"}
}
`

const plainPod = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: web
    image: nginx
    resources: {requests: {cpu: 500m, memory: 1Gi}}
`

func explainCapacity(t *testing.T, autoscaler string) explain.WorkloadResult {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "all.cue"), []byte(fmt.Sprintf(capacitySource, autoscaler)), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := explain.Decode("w.yaml", []byte(plainPod))
	if err != nil {
		t.Fatal(err)
	}
	e, err := explain.New(l.Fleet.Clusters[0], files, ws)
	if err != nil {
		t.Fatal(err)
	}
	return e.Workload(ws[0])
}

func group(wr explain.WorkloadResult, name string) explain.GroupResult {
	for _, g := range wr.Groups {
		if g.Group == name {
			return g
		}
	}
	return explain.GroupResult{}
}

func TestExplainPriorityPreference(t *testing.T) {
	wr := explainCapacity(t, `expander: "priority,least-waste"`)
	if group(wr, "cpu").Verdict != explain.Fits || group(wr, "gpu").Verdict != explain.Fits {
		t.Fatalf("the pod should fit both groups: %+v", wr.Groups)
	}
	if !slices.Equal(wr.Preferred, []string{"cpu"}) || wr.PreferredPriority == nil || *wr.PreferredPriority != 20 {
		t.Errorf("preferred %v (%v), want cpu at 20", wr.Preferred, wr.PreferredPriority)
	}
	var b strings.Builder
	if err := explain.WriteTable(&b, &explain.Report{Workloads: []explain.WorkloadResult{wr}, AllFit: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Pod web: the priority expander prefers cpu (priority 20)") {
		t.Errorf("table:\n%s", b.String())
	}
	// After another expander, the priority expander sees what that one
	// kept: no prediction.
	if wr := explainCapacity(t, `expander: "least-waste,priority"`); wr.Preferred != nil {
		t.Errorf("least-waste first, yet preferred %v", wr.Preferred)
	}
	if wr := explainCapacity(t, `expander: "least-waste"`); wr.Preferred != nil {
		t.Errorf("no priority expander, yet preferred %v", wr.Preferred)
	}
}

func TestExplainCapBlocks(t *testing.T) {
	// One T4 left for the whole cluster, and a gpu node has two.
	wr := explainCapacity(t, `caps: gpus: "nvidia-tesla-t4": max: 1`)
	gr := group(wr, "gpu")
	if gr.Verdict != explain.NoFit || len(gr.Reasons) != 1 || gr.Reasons[0].Kind != explain.ReasonCap ||
		!strings.Contains(gr.Reasons[0].Message, `cluster.autoscaler.caps.gpus."nvidia-tesla-t4".max 1 leaves room for 1 nvidia-tesla-t4 GPUs`) {
		t.Errorf("gpu: %+v", gr)
	}
	if group(wr, "cpu").Verdict != explain.Fits {
		t.Errorf("cpu is not limited by a GPU cap: %+v", group(wr, "cpu"))
	}
	// Nodes: the ca node takes the only one.
	wr = explainCapacity(t, `caps: maxNodesTotal: 1`)
	for _, name := range []string{"cpu", "gpu"} {
		if gr := group(wr, name); gr.Verdict != explain.NoFit || gr.Reasons[len(gr.Reasons)-1].Kind != explain.ReasonCap {
			t.Errorf("%s with maxNodesTotal 1: %+v", name, gr)
		}
	}
	// Enough room: no cap reason.
	wr = explainCapacity(t, `caps: {maxNodesTotal: 10, cores: max: 100, memoryGiB: max: 400, gpus: "nvidia-tesla-t4": max: 4}`)
	for _, name := range []string{"cpu", "gpu"} {
		if gr := group(wr, name); gr.Verdict != explain.Fits {
			t.Errorf("%s with room: %+v", name, gr)
		}
	}
	// vCPUs: 2 (the ca node) + 8 for a cpu node > 9.
	wr = explainCapacity(t, `caps: cores: max: 9`)
	if gr := group(wr, "cpu"); gr.Verdict != explain.NoFit || !strings.Contains(gr.Reasons[0].Message, "leaves room for 7 vCPUs") {
		t.Errorf("cpu with 9 cores: %+v", gr)
	}
}
