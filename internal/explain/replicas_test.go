package explain_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
)

// gpuDeployment is a Deployment of %d replicas of a pod that asks for one
// GPU.
const gpuDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: infer}
spec:
  replicas: %d
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      containers:
      - name: infer
        image: infer
        resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: 500m, memory: 1Gi}}
`

// explainWorkload explains yaml against capacitySource with autoscaler
// (raw CUE in cluster.autoscaler).
func explainWorkload(t *testing.T, autoscaler, yaml string) explain.WorkloadResult {
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
	ws, _, err := explain.Decode("w.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	e, err := explain.New(l.Fleet.Clusters[0], files, ws)
	if err != nil {
		t.Fatal(err)
	}
	return e.Workload(ws[0])
}

// TestReplicasAgainstReach: a workload's replicas are counted against the
// nodes a group can reach. Group gpu has two T4 per node and at most 2
// nodes (4 GPUs): 4 replicas of a 1-GPU pod fit, 6 do not, and with a cap
// of 2 T4 it reaches 1 node (2 GPUs), which 3 replicas exceed.
func TestReplicasAgainstReach(t *testing.T) {
	for _, tc := range []struct {
		name       string
		autoscaler string
		replicas   int
		fits       bool
		msg        string
	}{
		{"within max", "", 4, true, ""},
		{"beyond max", "", 6, false, "6 replicas need 3 nodes of this group (2 per node, by nvidia.com/gpu), and it reaches at most 2 (max 2 per zone × 1 zone): the autoscaler grows it for 4 of them; 2 stay pending"},
		{"beyond a GPU cap", `caps: gpus: "nvidia-tesla-t4": max: 2`, 3, false, `3 replicas need 2 nodes of this group (2 per node, by nvidia.com/gpu), and it reaches at most 1 (cluster.autoscaler.caps.gpus."nvidia-tesla-t4".max 2, 2 per node of the group, with the other cloud groups at their minimum): the autoscaler grows it for 2 of them; 1 stays pending`},
		{"within a GPU cap", `caps: gpus: "nvidia-tesla-t4": max: 2`, 2, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wr := explainWorkload(t, tc.autoscaler, fmt.Sprintf(gpuDeployment, tc.replicas))
			gr := group(wr, "gpu")
			if got := gr.Verdict == explain.Fits; got != tc.fits {
				t.Fatalf("%d replicas on gpu: verdict %s, reasons %+v", tc.replicas, gr.Verdict, gr.Reasons)
			}
			if tc.fits {
				return
			}
			if len(gr.Reasons) != 1 || gr.Reasons[0].Kind != explain.ReasonReplicas || gr.Reasons[0].Message != tc.msg {
				t.Errorf("reasons %+v\nwant one %s reason %q", gr.Reasons, explain.ReasonReplicas, tc.msg)
			}
			if wr.Fits {
				t.Errorf("the workload fits %v", wr.Groups)
			}
		})
	}
	// A DaemonSet (one pod per node) and a single pod are not counted.
	wr := explainWorkload(t, "", strings.NewReplacer("kind: Deployment", "kind: DaemonSet", "  replicas: 1\n", "").Replace(fmt.Sprintf(gpuDeployment, 1)))
	if gr := group(wr, "gpu"); gr.Verdict != explain.Fits {
		t.Errorf("DaemonSet on gpu: %s %+v", gr.Verdict, gr.Reasons)
	}
}
