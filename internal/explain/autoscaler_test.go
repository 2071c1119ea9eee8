package explain_test

import (
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

func explainOne(t *testing.T, src *model.Source, yaml string) *explain.Report {
	t.Helper()
	_, files := testsrc.Example(t)
	ws, _, err := explain.Decode("w.yaml", []byte(yaml))
	if err != nil || len(ws) != 1 {
		t.Fatalf("decode: %d workloads, %v", len(ws), err)
	}
	e, err := explain.New(src, files, ws)
	if err != nil {
		t.Fatal(err)
	}
	return e.Explain(ws)
}

const cpuPodYAML = `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
`

// The autoscaler notes: with the example's release (v1.35.2, which has
// the bug) the verdicts hold only once the nodes outside the MIGs have
// their providerID; the upcoming-node limit is stated with how long it
// lasts; with onpremProviderID "none" nothing scales at all.
func TestAutoscalerNotes(t *testing.T) {
	src, _ := testsrc.Example(t)
	r := explainOne(t, src, cpuPodYAML)
	if len(r.Autoscaler) != 2 || r.Autoscaler[0].Kind != explain.NoteProviderID || r.Autoscaler[1].Kind != explain.NoteUpcomingNode {
		t.Fatalf("notes %+v, want provider-id and upcoming-node", r.Autoscaler)
	}
	if n := r.Autoscaler[0]; n.Blocks || !strings.Contains(n.Message, "v1.35.2 scales nothing, up or down, while any node has no providerID") ||
		!strings.Contains(n.Message, "run out/onprem/set-provider-id.sh") {
		t.Errorf("provider-id note %+v", n)
	}
	if n := r.Autoscaler[1]; n.Blocks || !strings.Contains(n.Message, "at most its group's maxNodeProvisionTime: cpu-burst 15m, gpu-t4 20m, spot-gpu-t4 20m") ||
		!strings.Contains(n.Message, "--max-node-startup-time, 15m") || !strings.Contains(n.Message, "a GPU node of gpu-t4, spot-gpu-t4 is not ready until the device plugin reports its GPUs") {
		t.Errorf("upcoming-node note %+v", n)
	}

	none := *src
	none.Cluster.OnpremProviderID = model.OnpremProviderIDNone
	r = explainOne(t, &none, cpuPodYAML)
	if n := r.Autoscaler[0]; !n.Blocks || !strings.HasPrefix(n.Message, "nothing scales, up or down: the Cluster Autoscaler v1.35.2 has the bug") ||
		!strings.Contains(n.Message, "kubernetes/autoscaler#10140") {
		t.Errorf("with onpremProviderID none: %+v", n)
	}
	if !r.AllFit {
		t.Error("the verdicts themselves do not change")
	}

	unknown := none
	unknown.Cluster.Autoscaler.Version = "v1.37.0"
	r = explainOne(t, &unknown, cpuPodYAML)
	if n := r.Autoscaler[0]; n.Blocks || !strings.Contains(n.Message, "v1.37.0 is not in nodegen's table, so it may have the bug") {
		t.Errorf("unknown release: %+v", n)
	}
}

// A pod that selects the kubelet's own beta os and arch labels scales a
// group from zero: kube-env declares them, so the template node has them.
func TestBetaLabelsScaleFromZero(t *testing.T) {
	src, _ := testsrc.Example(t)
	r := explainOne(t, src, `
apiVersion: v1
kind: Pod
metadata: {name: legacy}
spec:
  nodeSelector: {beta.kubernetes.io/os: linux, beta.kubernetes.io/arch: amd64}
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
`)
	for _, gr := range r.Workloads[0].Groups {
		if gr.Group == "cpu-burst" && gr.Verdict != explain.Fits {
			t.Errorf("cpu-burst: %s %+v, want fits", gr.Verdict, gr.Reasons)
		}
	}
	r = explainOne(t, src, `
apiVersion: v1
kind: Pod
metadata: {name: arm}
spec:
  nodeSelector: {beta.kubernetes.io/arch: arm64}
  containers: [{name: c, image: x}]
`)
	if r.Workloads[0].Fits {
		t.Error("a pod selecting beta.kubernetes.io/arch=arm64 fits an amd64 group")
	}
}

// The cap of a GPU type counts advertised GPUs: a time-sliced spot node
// counts its replicas, and explain says how many nodes the cap admits.
func TestGPUCapCountsAdvertised(t *testing.T) {
	src, _ := testsrc.Example(t)
	src.Cluster.Autoscaler.Caps = &model.Caps{GPUs: map[string]*model.Range{"nvidia-tesla-t4": {Max: 16}}}
	r := explainOne(t, src, `
apiVersion: v1
kind: Pod
metadata: {name: infer}
spec:
  nodeSelector: {example.com/pool: gpu-burst}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
`)
	want := map[string]string{
		"spot-gpu-t4": `cluster.autoscaler.caps.gpus."nvidia-tesla-t4".max 16 admits at most 4 of the group's 12 nodes: the cap counts advertised nvidia.com/gpu, 4 per node of this group`,
		"gpu-t4":      "",
	}
	for _, gr := range r.Workloads[0].Groups {
		w, ok := want[gr.Group]
		if !ok {
			continue
		}
		var capNote string
		for _, n := range gr.Notes {
			if strings.HasPrefix(n, "cluster.autoscaler.caps.") {
				capNote = n
			}
		}
		if gr.Verdict != explain.Fits || (w == "") != (capNote == "") || !strings.HasPrefix(capNote, w) {
			t.Errorf("%s: %s, cap note %q, want %q", gr.Group, gr.Verdict, capNote, w)
		}
	}
}
