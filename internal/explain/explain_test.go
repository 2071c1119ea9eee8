package explain_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// want is the expected verdict for one group: the verdict, the zones it
// fits, and the kinds and a distinctive part of the message of every reason
// (in order).
type want struct {
	verdict string
	zones   []string
	reasons []reasonWant
	// notes, when set, must each be contained in the matching note.
	notes []string
}

type reasonWant struct {
	kind, contains, zone string
}

var bothZones = []string{"us-central1-a", "us-central1-b"}

var spotZones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

// spotNote is the note every workload that fits spot-gpu-t4 gets.
const spotNote = "lands on Spot VMs: GCE may preempt them with 30s notice (the kubelet stops pods within shutdownGracePeriod 30s)"

// The shipped example: cpu-burst (n2-standard-8, untainted, 0..10) and
// gpu-t4 (n1-standard-8 + 1 T4, tainted nvidia.com/gpu=present:NoSchedule,
// 0..4) and spot-gpu-t4 (the same on Spot VMs in three zones, each T4
// time-sliced 4 ways, maxPods 64) are autoscaled; autoscaler (gce-static) and onprem-gpu (onprem) are not.
var workloadCases = []struct {
	name   string
	yaml   string
	fits   bool
	groups map[string]want
}{
	{
		name: "GPU pod fits only the GPU group",
		yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  template:
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: train
        image: trainer
        resources:
          requests: {cpu: "2", memory: 8Gi}
          limits: {nvidia.com/gpu: 1}   # request defaulted from the limit
`,
		fits: true,
		groups: map[string]want{
			"cpu-burst": {verdict: explain.NoFit, reasons: []reasonWant{{kind: "resource", contains: "insufficient nvidia.com/gpu: requests 1, the node has none"}}},
			"gpu-t4":    {verdict: explain.Fits, zones: bothZones},
			"spot-gpu-t4": {verdict: explain.Fits, zones: spotZones, notes: []string{spotNote,
				"nvidia.com/gpu is time-sliced 4 ways: a node advertises 4 for 1 physical GPU; the pod's 1 share GPUs with other pods"}},
		},
	},
	{
		name: "three GPUs fit only the time-sliced group",
		yaml: `
apiVersion: v1
kind: Pod
metadata: {name: small-infer}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers:
  - name: infer
    image: infer
    resources: {limits: {nvidia.com/gpu: 3}}
`,
		fits: true,
		groups: map[string]want{
			"cpu-burst":   {verdict: explain.NoFit, reasons: []reasonWant{{kind: "resource", contains: "insufficient nvidia.com/gpu: requests 3, the node has none"}}},
			"gpu-t4":      {verdict: explain.NoFit, reasons: []reasonWant{{kind: "resource", contains: "insufficient nvidia.com/gpu: requests 3"}}},
			"spot-gpu-t4": {verdict: explain.Fits, zones: spotZones, notes: []string{spotNote, "time-sliced 4 ways: a node advertises 4 for 1 physical GPU; the pod's 3 share"}},
		},
	},
	{
		name: "GPU pod without the GPU toleration",
		yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: infer}
spec:
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      containers:
      - name: infer
        image: infer
        resources:
          limits: {nvidia.com/gpu: 1}
`,
		fits: false,
		groups: map[string]want{
			"cpu-burst":   {verdict: explain.NoFit, reasons: []reasonWant{{kind: "resource", contains: "insufficient nvidia.com/gpu"}}},
			"gpu-t4":      {verdict: explain.NoFit, reasons: []reasonWant{{kind: "taint", contains: "taint nvidia.com/gpu=present:NoSchedule not tolerated"}}},
			"spot-gpu-t4": {verdict: explain.NoFit, reasons: []reasonWant{{kind: "taint", contains: "taint nvidia.com/gpu=present:NoSchedule not tolerated"}}},
		},
	},
	{
		name: "nodeSelector names an on-prem-only label",
		yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {example.com/pool: gpu-onprem}
      tolerations: [{key: nvidia.com/gpu, operator: Exists}]
      containers: [{name: db, image: db}]
`,
		fits: false,
		groups: map[string]want{
			"cpu-burst":   {verdict: explain.NoFit, reasons: []reasonWant{{kind: "nodeSelector", contains: "nodeSelector example.com/pool=gpu-onprem not met (node has example.com/pool=cpu-burst)"}}},
			"gpu-t4":      {verdict: explain.NoFit, reasons: []reasonWant{{kind: "nodeSelector", contains: "nodeSelector example.com/pool=gpu-onprem not met (node has example.com/pool=gpu-burst)"}}},
			"spot-gpu-t4": {verdict: explain.NoFit, reasons: []reasonWant{{kind: "nodeSelector", contains: "nodeSelector example.com/pool=gpu-onprem not met (node has example.com/pool=gpu-burst)"}}},
		},
	},
	{
		name: "more memory than the machine has",
		yaml: `
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers:
  - name: big
    image: big
    resources: {requests: {memory: 40Gi}}
`,
		fits: false,
		groups: map[string]want{
			"cpu-burst":   {verdict: explain.NoFit, reasons: []reasonWant{{kind: "resource", contains: "insufficient memory: requests 40Gi, a new node has "}}},
			"gpu-t4":      {verdict: explain.NoFit, reasons: []reasonWant{{kind: "resource", contains: "insufficient memory: requests 40Gi, a new node has "}}},
			"spot-gpu-t4": {verdict: explain.NoFit, reasons: []reasonWant{{kind: "resource", contains: "insufficient memory: requests 40Gi, a new node has "}}},
		},
	},
	{
		name: "tolerates everything",
		yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: any}
spec:
  selector: {matchLabels: {app: any}}
  template:
    metadata: {labels: {app: any}}
    spec:
      tolerations: [{operator: Exists}]
      containers:
      - name: any
        image: any
        resources: {requests: {cpu: "1", memory: 1Gi, ephemeral-storage: 10Gi}}
`,
		fits: true,
		groups: map[string]want{
			"cpu-burst": {verdict: explain.Fits, zones: bothZones},
			"gpu-t4":    {verdict: explain.Fits, zones: bothZones},
			// The Spot note, but no GPU note: the pod requests no GPU.
			"spot-gpu-t4": {verdict: explain.Fits, zones: spotZones, notes: []string{spotNote}},
		},
	},
	{
		name: "several reasons at once, one of them zonal",
		yaml: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {key: topology.kubernetes.io/zone, operator: In, values: [us-central1-b]}
                  - {key: example.com/location, operator: In, values: [cloud]}
          containers:
          - name: nightly
            image: nightly
            resources: {requests: {cpu: "16"}}
`,
		fits: false,
		groups: map[string]want{
			"cpu-burst": {verdict: explain.NoFit, reasons: []reasonWant{
				{kind: "nodeAffinity", zone: "us-central1-a", contains: "required node affinity not met: topology.kubernetes.io/zone In [us-central1-b] (node has topology.kubernetes.io/zone=us-central1-a)"},
				{kind: "resource", contains: "insufficient cpu: requests 16, a new node has 7800m free (allocatable 7900m)"},
			}},
			"gpu-t4": {verdict: explain.NoFit, reasons: []reasonWant{
				{kind: "taint", contains: "nvidia.com/gpu=present:NoSchedule"},
				{kind: "nodeAffinity", zone: "us-central1-a", contains: "topology.kubernetes.io/zone In [us-central1-b]"},
				{kind: "resource", contains: "insufficient cpu: requests 16"},
			}},
			"spot-gpu-t4": {verdict: explain.NoFit, reasons: []reasonWant{
				{kind: "taint", contains: "nvidia.com/gpu=present:NoSchedule"},
				{kind: "nodeAffinity", zone: "us-central1-a", contains: "topology.kubernetes.io/zone In [us-central1-b]"},
				{kind: "resource", contains: "insufficient cpu: requests 16"},
				{kind: "nodeAffinity", zone: "us-central1-c", contains: "topology.kubernetes.io/zone In [us-central1-b]"},
			}},
		},
	},
	{
		name: "zone affinity fits one zone only",
		yaml: `
apiVersion: v1
kind: Pod
metadata: {name: zonal}
spec:
  nodeSelector: {topology.kubernetes.io/zone: us-central1-b}
  containers: [{name: c, image: c}]
`,
		fits: true,
		groups: map[string]want{
			"cpu-burst":   {verdict: explain.Fits, zones: []string{"us-central1-b"}},
			"gpu-t4":      {verdict: explain.NoFit, reasons: []reasonWant{{kind: "taint"}, {kind: "nodeSelector", zone: "us-central1-a"}}},
			"spot-gpu-t4": {verdict: explain.NoFit, reasons: []reasonWant{{kind: "taint"}, {kind: "nodeSelector", zone: "us-central1-a"}, {kind: "nodeSelector", zone: "us-central1-c"}}},
		},
	},
}

// workloadCase is the YAML of the workload case called name.
func workloadCase(t *testing.T, name string) string {
	t.Helper()
	for _, c := range workloadCases {
		if c.name == name {
			return c.yaml
		}
	}
	t.Fatalf("no workload case %q", name)
	return ""
}

func TestExplainWorkloads(t *testing.T) {
	src, files := testsrc.Example(t)
	for _, c := range workloadCases {
		t.Run(c.name, func(t *testing.T) {
			ws, _, err := explain.Decode("w.yaml", []byte(c.yaml))
			if err != nil || len(ws) != 1 {
				t.Fatalf("decode: %d workloads, %v", len(ws), err)
			}
			e, err := explain.New(src, files, ws)
			if err != nil {
				t.Fatal(err)
			}
			r := e.Workload(ws[0])
			if r.Fits != c.fits {
				t.Errorf("fits = %v, want %v", r.Fits, c.fits)
			}
			var order []string
			for _, gr := range r.Groups {
				order = append(order, gr.Group)
				if !src.NodeGroups[gr.Group].Autoscaled() {
					if gr.Verdict != explain.NotAutoscaled || len(gr.Reasons) > 0 {
						t.Errorf("%s: %s %v, want not-autoscaled", gr.Group, gr.Verdict, gr.Reasons)
					}
					continue
				}
				w, ok := c.groups[gr.Group]
				if !ok {
					t.Errorf("no expectation for group %s", gr.Group)
					continue
				}
				checkGroup(t, gr, w)
			}
			if want := []string{"cpu-burst", "gpu-t4", "spot-gpu-t4", "autoscaler", "onprem-gpu"}; !slices.Equal(order, want) {
				t.Errorf("groups in order %v, want %v", order, want)
			}
		})
	}
}

func checkGroup(t *testing.T, gr explain.GroupResult, w want) {
	t.Helper()
	if gr.Verdict != w.verdict || !slices.Equal(gr.Zones, w.zones) {
		t.Errorf("%s: verdict %s zones %v, want %s %v (reasons %+v)", gr.Group, gr.Verdict, gr.Zones, w.verdict, w.zones, gr.Reasons)
	}
	if len(gr.Notes) != len(w.notes) {
		t.Errorf("%s: notes %q, want %d containing %q", gr.Group, gr.Notes, len(w.notes), w.notes)
	} else {
		for i, n := range w.notes {
			if !strings.Contains(gr.Notes[i], n) {
				t.Errorf("%s: note %d = %q, want it to contain %q", gr.Group, i, gr.Notes[i], n)
			}
		}
	}
	if len(gr.Reasons) != len(w.reasons) {
		t.Errorf("%s: %d reasons %+v, want %d", gr.Group, len(gr.Reasons), gr.Reasons, len(w.reasons))
		return
	}
	for i, rw := range w.reasons {
		r := gr.Reasons[i]
		if r.Kind != rw.kind || !strings.Contains(r.Message, rw.contains) || r.Zone != rw.zone {
			t.Errorf("%s: reason %d = %s %q (zone %q), want %s containing %q (zone %q)", gr.Group, i, r.Kind, r.Message, r.Zone, rw.kind, rw.contains, rw.zone)
		}
	}
}

// Resource reasons carry both numbers exactly; free is allocatable minus
// what every fresh node runs, allocatable is below the request.
func TestResourceReasonNumbers(t *testing.T) {
	src, files := testsrc.Example(t)
	ws, _, err := explain.Decode("w.yaml", []byte(workloadCase(t, "more memory than the machine has")))
	if err != nil {
		t.Fatal(err)
	}
	e, err := explain.New(src, files, ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, gr := range e.Workload(ws[0]).Groups[:2] {
		r := gr.Reasons[0]
		req, free, alloc := resource.MustParse(r.Requested), resource.MustParse(r.Free), resource.MustParse(r.Allocatable)
		if r.Resource != "memory" || req.String() != "40Gi" || free.Cmp(alloc) > 0 || alloc.Cmp(req) >= 0 || free.Sign() <= 0 {
			t.Errorf("%s: %+v", gr.Group, r)
		}
	}
}

// The pods every fresh node runs are subtracted: kube-proxy's 100m on every
// group, and the taint remover's requests on the GPU group only. A pod
// asking for exactly the rest fits; a millicore more does not.
func TestFreshNodePods(t *testing.T) {
	src, files := testsrc.Example(t)
	var removerCPU resource.Quantity
	objs, err := k8sdecode.Objects(files[layout.TaintRemoverPath])
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok && ds.Name == src.NodeGroups["gpu-t4"].TaintRemoverDaemonSet() {
			removerCPU = ds.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		}
	}
	if removerCPU.IsZero() {
		t.Fatal("taint remover DaemonSet of gpu-t4 not found or without a CPU request")
	}
	for _, tc := range []struct {
		group string
		extra []resource.Quantity // besides kube-proxy
		fresh []string
	}{
		{"cpu-burst", nil, []string{"kube-proxy"}},
		{"gpu-t4", []resource.Quantity{removerCPU}, []string{"kube-proxy", "DaemonSet kube-system/nodegen-taint-remover-gpu-t4"}},
	} {
		g := src.NodeGroups[tc.group]
		m, _ := gce.MachineType(g.MachineType)
		reserved, err := g.TotalReserved()
		if err != nil {
			t.Fatal(err)
		}
		free := resource.MustParse(reserved["cpu"])
		free.Neg()
		free.Add(*resource.NewQuantity(int64(m.VCPUs), resource.DecimalSI))
		free.Sub(resource.MustParse("100m"))
		for _, q := range tc.extra {
			free.Sub(q)
		}
		e, err := explain.New(src, files, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range e.Templates(tc.group)[0].Fresh {
			names = append(names, f.Name)
		}
		if !slices.Equal(names, tc.fresh) {
			t.Errorf("%s: fresh-node pods %v, want %v", tc.group, names, tc.fresh)
		}
		over := free.DeepCopy()
		over.Add(resource.MustParse("1m"))
		tmpl := e.Templates(tc.group)[0]
		// The pod tolerates the GPU taint: only CPU can stand in the way.
		if got := explain.Check(cpuPod(free), tmpl); len(got) != 0 {
			t.Errorf("%s: cpu %s: reasons %+v, want a fit", tc.group, free.String(), got)
		}
		got := explain.Check(cpuPod(over), tmpl)
		if len(got) != 1 || got[0].Resource != "cpu" || got[0].Free != free.String() {
			t.Errorf("%s: cpu %s: reasons %+v, want one cpu reason with %s free", tc.group, over.String(), got, free.String())
		}
	}
}

func cpuPod(q resource.Quantity) *explain.Workload {
	return &explain.Workload{Kind: "Pod", Name: "p", Pod: &corev1.Pod{Spec: corev1.PodSpec{
		Tolerations: []corev1.Toleration{{Key: model.GPUResource, Operator: corev1.TolerationOpExists}},
		Containers:  []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q}}}},
	}}}
}

// A group the autoscaler may not grow (max 0) says so, besides any other reason.
func TestMaxSizeZero(t *testing.T) {
	src, files := testsrc.Example(t)
	src.NodeGroups["cpu-burst"].Max = 0
	ws, _, err := explain.Decode("w.yaml", []byte(workloadCase(t, "tolerates everything")))
	if err != nil {
		t.Fatal(err)
	}
	e, err := explain.New(src, files, ws)
	if err != nil {
		t.Fatal(err)
	}
	r := e.Workload(ws[0])
	checkGroup(t, r.Groups[0], want{verdict: explain.NoFit, reasons: []reasonWant{{kind: "maxSize", contains: "max size is 0"}}})
	checkGroup(t, r.Groups[1], want{verdict: explain.Fits, zones: bothZones})
}

// A machine type nodegen does not know gives an unknown verdict with the
// fix; a capacity override in the source sizes the template instead.
func TestUnknownMachineTypeAndOverride(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["cpu-burst"]
	g.MachineType = "z9-future-8"
	src.Resolve()
	ws, _, err := explain.Decode("w.yaml", []byte(workloadCase(t, "tolerates everything")))
	if err != nil {
		t.Fatal(err)
	}
	e, err := explain.New(src, files, ws)
	if err != nil {
		t.Fatal(err)
	}
	gr := e.Workload(ws[0]).Groups[0]
	if gr.Verdict != explain.Unknown || len(gr.Reasons) != 1 || !strings.Contains(gr.Reasons[0].Message, "capacity: {cpu: N, memory:") {
		t.Errorf("unknown machine type: %+v", gr)
	}
	g.Capacity = &model.Capacity{CPU: 4, Memory: "16Gi"}
	src.Resolve()
	e, err = explain.New(src, files, ws)
	if err != nil {
		t.Fatal(err)
	}
	if gr := e.Workload(ws[0]).Groups[0]; gr.Verdict != explain.Fits {
		t.Errorf("with a capacity override: %+v", gr)
	}
	n := e.Templates("cpu-burst")[0].Node
	if c := n.Status.Capacity[corev1.ResourceCPU]; c.Value() != 4 {
		t.Errorf("cpu capacity %s, want 4", c.String())
	}
	mem := int64(16 << 30)
	if c := n.Status.Capacity[corev1.ResourceMemory]; c.Value() != mem-nodetemplate.KernelReserved(mem, "linux", "ubuntu", "amd64") {
		t.Errorf("memory capacity %s", c.String())
	}
}
