package explain_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
)

// planOf plans the workloads of testdata/plan/workloads.yaml (24 pods of
// one GPU for the gpu-burst pool, 20 pods of 7 CPU for cpu-burst) against
// the source in testdata/plan/nodegroups, with edit applied to each
// file's text.
func planOf(t *testing.T, edit func(file, text string) string) *explain.Report {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"autoscaler.cue", "cluster.cue", "cpu-burst.cue", "gpu-t4.cue", "onprem-gpu.cue", "spot-gpu-t4.cue"} {
		b, err := os.ReadFile("testdata/plan/nodegroups/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			b = []byte(edit(f, string(b)))
		}
		if err := os.WriteFile(dir+"/"+f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile("testdata/plan/workloads.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := explain.Decode("workloads.yaml", y)
	if err != nil {
		t.Fatal(err)
	}
	e, err := explain.New(l.Fleet.Clusters[0], files, ws)
	if err != nil {
		t.Fatal(err)
	}
	return e.Explain(ws)
}

type step struct {
	workload, group string
	nodes, pods     int
}

func steps(p *explain.Plan) []step {
	var out []step
	for _, s := range p.Steps {
		out = append(out, step{s.Workload, s.Group, s.Nodes, s.Pods})
	}
	return out
}

// TestPlanTogether: the CPU pods go first (cpu-burst has the highest
// priority) and fill cpu-burst to its max (10 per zone × 2 zones); the GPU
// pods go to spot-gpu-t4 (15) before gpu-t4 (10); the nvidia-tesla-t4 cap
// of 16 advertised GPUs admits 4 spot nodes (one T4 time-sliced 4 ways),
// 4 pods each, and leaves nothing for gpu-t4: 8 GPU pods stay pending.
// The caps are the cloud's budget: the declared control plane and on-prem
// servers (272 cores between them) take none of cores.max 256.
func TestPlanTogether(t *testing.T) {
	r := planOf(t, nil)
	if r.Plan == nil {
		t.Fatal("no plan")
	}
	want := []step{
		{"Deployment cpu", "cpu-burst", 20, 20},
		{"Deployment gpu", "spot-gpu-t4", 4, 16},
		{"Deployment gpu", "gpu-t4", 0, 0},
	}
	if got := steps(r.Plan); !reflect.DeepEqual(got, want) {
		t.Errorf("steps = %+v, want %+v", got, want)
	}
	if s := r.Plan.Steps[0]; !s.AtMax || s.Stop != "" || s.PodsPerNode != 1 || s.PerNodeBy != "cpu" {
		t.Errorf("cpu-burst step = %+v, want at its max, 1 pod per node by cpu, no stop", s)
	}
	gpuCap := `cluster.autoscaler.caps.gpus."nvidia-tesla-t4".max 16 is reached`
	for _, s := range r.Plan.Steps[1:] {
		if !strings.HasPrefix(s.Stop, gpuCap) {
			t.Errorf("%s stop = %q, want the GPU cap", s.Group, s.Stop)
		}
	}
	if s := r.Plan.Steps[1]; s.PodsPerNode != 4 || s.PerNodeBy != "nvidia.com/gpu" || s.AtMax {
		t.Errorf("spot-gpu-t4 step = %+v, want 4 per node by nvidia.com/gpu, below its max", s)
	}
	if p := r.Plan.Pending; len(p) != 1 || p[0].Workload != "Deployment gpu" || p[0].Pods != 8 || !strings.Contains(p[0].Reason, gpuCap) {
		t.Errorf("pending = %+v, want 8 pods of Deployment gpu, for the GPU cap", p)
	}
	var out strings.Builder
	if err := explain.WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"plan, " + explain.PlanEstimate,
		"  Deployment cpu: cpu-burst adds 20 nodes for 20 pods (1 per node, by cpu): cpu-burst is at its max\n",
		"  Deployment gpu: spot-gpu-t4 adds 4 nodes for 16 pods (4 per node, by nvidia.com/gpu): " + gpuCap,
		"  Deployment gpu: gpu-t4 adds no node: " + gpuCap,
		"  Deployment gpu: 8 pods stay pending: " + gpuCap,
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, out.String())
		}
	}
}

// TestPlanCapsAcrossGroups: the caps are consumed in sequence, across
// workloads and groups, and a full group falls back to the next one.
func TestPlanCapsAcrossGroups(t *testing.T) {
	// 172 cores: the two autoscaler nodes take 4, 20 cpu-burst nodes 160,
	// which leaves one n1-standard-8 GPU node.
	r := planOf(t, func(_, s string) string { return strings.Replace(s, "cores: max: 256", "cores: max: 172", 1) })
	want := []step{
		{"Deployment cpu", "cpu-burst", 20, 20},
		{"Deployment gpu", "spot-gpu-t4", 1, 4},
		{"Deployment gpu", "gpu-t4", 0, 0},
	}
	if got := steps(r.Plan); !reflect.DeepEqual(got, want) {
		t.Errorf("cores 172: steps = %+v, want %+v", got, want)
	}
	if p := r.Plan.Pending; len(p) != 1 || p[0].Pods != 20 || !strings.Contains(p[0].Reason, "cluster.autoscaler.caps.cores.max 172 is reached") {
		t.Errorf("cores 172: pending = %+v, want 20 GPU pods, for the cores cap", p)
	}

	// No GPU cap, cores enough, spot-gpu-t4 at most 1 per zone: it grows to its max (3
	// nodes, 12 pods), then gpu-t4 to its max (8 nodes, 8 pods).
	r = planOf(t, func(f, s string) string {
		switch f {
		case "cluster.cue":
			s = strings.Replace(s, `gpus: "nvidia-tesla-t4": max: 16`, "", 1)
			s = strings.Replace(s, "cores: max: 256", "cores: max: 1000", 1)
		case "spot-gpu-t4.cue":
			s = strings.Replace(s, "max:            4", "max:            1", 1)
		}
		return s
	})
	want = []step{
		{"Deployment cpu", "cpu-burst", 20, 20},
		{"Deployment gpu", "spot-gpu-t4", 3, 12},
		{"Deployment gpu", "gpu-t4", 8, 8},
	}
	if got := steps(r.Plan); !reflect.DeepEqual(got, want) {
		t.Errorf("spot max 1: steps = %+v, want %+v", got, want)
	}
	if p := r.Plan.Pending; len(p) != 1 || p[0].Pods != 4 || p[0].Reason != "spot-gpu-t4 is at its max (1 per zone × 3 zones); gpu-t4 is at its max (4 per zone × 2 zones)" {
		t.Errorf("spot max 1: pending = %+v, want 4 GPU pods, for both maxes", p)
	}
}
