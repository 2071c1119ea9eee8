package render_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/validate"
	"github.com/nodegen/nodegen/internal/verify"
)

// capacitySource is a source of its own for the capacity policy: groups
// whose names are prefixes of each other's (in different zones, so both
// are valid), a multi-zone group without a priority, the autoscaler's
// static group, an on-prem group, a namespace that is not the default.
// %s is raw CUE added to cluster.autoscaler.
const capacitySource = `cluster: {
	name:                 "cap"
	kubernetesVersion:    "1.35.2"
	controlPlaneEndpoint: "10.0.0.1:6443"
	caCertHashes: ["sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d"]
	joinToken: secretManager: secret: "join"
	gcp: {project: "cap-project-1", region: "europe-west4"}
	autoscaler: {
		nodeGroup: "ca", singleZone: true
		namespace: "autoscaling"
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
	zones: ["europe-west4-a"]
	machineType: "n2-standard-8"
	image: "projects/cap-project-1/global/images/family/node"
	min: 0
	max: 5
	%s
}
nodeGroups: "cpu-b": {
	kind: "gce"
	zones: ["europe-west4-b"]
	machineType: "n2-standard-8"
	image: "projects/cap-project-1/global/images/family/node"
	min: 1
	max: 3
	%s
}
nodeGroups: gpu: {
	kind: "gce"
	zones: ["europe-west4-b", "europe-west4-c"]
	machineType: "n1-standard-8"
	image: "projects/cap-project-1/global/images/family/node"
	min: 0
	max: 2
	gpu: {type: "nvidia-tesla-t4", count: 2}
}
nodeGroups: dc: {
	kind: "onprem"
	labels: "example.com/site": "dc1"
}
`

// loadCapacity writes capacitySource with the given autoscaler settings
// and group priorities, and loads it as nodegen vet does.
func loadCapacity(t *testing.T, autoscaler, cpuPrio, cpuBPrio string) (*model.Source, validate.Positioner, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(capacitySource, autoscaler, cpuPrio, cpuBPrio)
	if err := os.WriteFile(filepath.Join(dir, "all.cue"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := pipeline.Load(dir)
	if err != nil {
		return nil, nil, err
	}
	return l.Fleet.Clusters[0], l, nil
}

func renderCapacity(t *testing.T, autoscaler, cpuPrio, cpuBPrio string) (*model.Source, layout.Files) {
	t.Helper()
	src, _, err := loadCapacity(t, autoscaler, cpuPrio, cpuBPrio)
	if err != nil {
		t.Fatalf("nodegen rejects the test's source: %v", err)
	}
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.All(src, files); err != nil {
		t.Fatal(err)
	}
	return src, files
}

// bestByPriority does what the autoscaler's priority expander does with
// its parsed ConfigMap (expander/priority/priority.go: BestOptions): keep
// the options whose id a pattern of the highest priority matches.
func bestByPriority(prios map[int][]*regexp.Regexp, ids []string) []string {
	maxPrio := -1
	var best []string
	for _, id := range ids {
		for prio, res := range prios {
			if !slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.FindStringIndex(id) != nil }) {
				continue
			}
			if prio < maxPrio {
				continue
			}
			if prio > maxPrio {
				maxPrio, best = prio, nil
			}
			best = append(best, id)
		}
	}
	return best
}

func TestPriorityExpanderConfigMap(t *testing.T) {
	src, files := renderCapacity(t, `expander: "priority,least-waste"`, "priority: 30", "priority: 20")
	objs, err := k8sdecode.Objects(files[layout.PriorityExpanderPath])
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("%d objects, want the ConfigMap alone", len(objs))
	}
	cm, ok := objs[0].(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("%T, want a ConfigMap", objs[0])
	}
	// The expander reads this name, in the autoscaler's --namespace (the
	// chart's release namespace).
	if cm.Name != "cluster-autoscaler-priority-expander" || cm.Namespace != "autoscaling" {
		t.Errorf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	}
	// Parsed as the expander parses it.
	var parsed map[int][]string
	if err := yaml.Unmarshal([]byte(cm.Data["priorities"]), &parsed); err != nil {
		t.Fatalf("priorities: %v", err)
	}
	compiled := map[int][]*regexp.Regexp{}
	for p, list := range parsed {
		for _, s := range list {
			re, err := regexp.Compile(s)
			if err != nil {
				t.Fatalf("priority %d: %v", p, err)
			}
			compiled[p] = append(compiled[p], re)
		}
	}
	// Every MIG URL of the source, the static group's included: each
	// autoscaled MIG is matched by exactly one pattern, of its group's
	// priority; the static one by none.
	want := map[string]int{}
	var ids []string
	for _, g := range src.Groups() {
		for _, z := range g.Zones {
			u := src.Cluster.MIGURL(g, z)
			ids = append(ids, u)
			matched := 0
			for p, res := range compiled {
				for _, re := range res {
					if re.MatchString(u) {
						matched++
						if !g.Autoscaled() || p != g.GroupPriority() {
							t.Errorf("%s (%s, priority %d) matched by %s at priority %d", u, g.Kind, g.GroupPriority(), re, p)
						}
					}
				}
			}
			if g.Autoscaled() {
				want[u] = g.GroupPriority()
				if matched != 1 {
					t.Errorf("%s matched by %d patterns, want 1", u, matched)
				}
			} else if matched != 0 {
				t.Errorf("%s group %s's MIG %s is matched", g.Kind, g.Name, u)
			}
		}
	}
	// A pattern is not a URL with a different host or a longer name.
	for _, u := range ids {
		for _, variant := range []string{u + "x", strings.Replace(u, "www.googleapis.com", "wwwxgoogleapis.com", 1), "x" + u} {
			for _, res := range compiled {
				for _, re := range res {
					if re.MatchString(variant) {
						t.Errorf("%s matches %s", re, variant)
					}
				}
			}
		}
	}
	if got := want[src.Cluster.MIGURL(src.NodeGroups["gpu"], "europe-west4-b")]; got != 0 {
		t.Errorf("a group without priority has %d, want 0", got)
	}
	// All options open: the expander keeps the cpu group's MIG (30); without
	// it, cpu-b's (20); without both, the gpu group's zones (0).
	cpu := src.Cluster.MIGURL(src.NodeGroups["cpu"], "europe-west4-a")
	cpuB := src.Cluster.MIGURL(src.NodeGroups["cpu-b"], "europe-west4-b")
	gpu := []string{src.Cluster.MIGURL(src.NodeGroups["gpu"], "europe-west4-b"), src.Cluster.MIGURL(src.NodeGroups["gpu"], "europe-west4-c")}
	for _, tc := range []struct {
		ids, want []string
	}{
		{ids, []string{cpu}},
		{append([]string{cpuB}, gpu...), []string{cpuB}},
		{gpu, gpu},
	} {
		if got := bestByPriority(compiled, tc.ids); !slices.Equal(got, tc.want) {
			t.Errorf("from %v the expander keeps %v, want %v", tc.ids, got, tc.want)
		}
	}

	// The chart renders the same ConfigMap from values.yaml: priorities
	// rendered key by key as {{ $k | int }}: <list>.
	var v chartValues
	if err := yaml.UnmarshalStrict(files[layout.AutoscalerValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	fromChart := map[int][]string{}
	for k, list := range v.ExpanderPriorities {
		p, err := strconv.Atoi(k)
		if err != nil {
			t.Fatalf("expanderPriorities key %q is not an int", k)
		}
		fromChart[p] = list
	}
	if fmt.Sprint(fromChart) != fmt.Sprint(parsed) {
		t.Errorf("chart's expanderPriorities %v, ConfigMap %v", fromChart, parsed)
	}
	// The chart creates it (and lets the autoscaler watch it) only when
	// extraArgs.expander, split at ',', contains "priority".
	if !slices.Contains(strings.Split(v.ExtraArgs["expander"], ","), "priority") {
		t.Errorf("extraArgs.expander %q", v.ExtraArgs["expander"])
	}
	if !slices.Equal(chartArgs(t, files), flagLines(files)) {
		t.Errorf("chart args\n%v\nflags.txt\n%v", chartArgs(t, files), flagLines(files))
	}
}

func TestNoPriorityExpanderWithoutPriority(t *testing.T) {
	_, files := renderCapacity(t, `expander: "least-waste"`, "", "")
	if _, ok := files[layout.PriorityExpanderPath]; ok {
		t.Errorf("%s rendered without the priority expander", layout.PriorityExpanderPath)
	}
	if bytes.Contains(files[layout.AutoscalerValuesPath], []byte("expanderPriorities")) {
		t.Errorf("values.yaml sets expanderPriorities without the priority expander")
	}
}

// chartArgs renders the chart's autoscaler arguments from values.yaml as
// the chart does (autoscalingGroups → --nodes=min:max:name, extraArgs →
// --key=value with everything from the first '_' of the key dropped), sorted.
func chartArgs(t *testing.T, files layout.Files) []string {
	t.Helper()
	var v chartValues
	if err := yaml.UnmarshalStrict(files[layout.AutoscalerValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	args := []string{"--cloud-provider=" + v.CloudProvider}
	for _, g := range v.AutoscalingGroups {
		args = append(args, fmt.Sprintf("--nodes=%d:%d:%s", g.MinSize, g.MaxSize, g.Name))
	}
	for k, val := range v.ExtraArgs {
		k, _, _ = strings.Cut(k, "_")
		args = append(args, "--"+k+"="+val)
	}
	slices.Sort(args)
	return args
}

// flagLines are flags.txt's flags, sorted.
func flagLines(files layout.Files) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(files[layout.AutoscalerFlagsPath]))
	for sc.Scan() {
		if line := sc.Text(); !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	slices.Sort(out)
	return out
}

// flagValues returns the values of a flag in flags.txt, in order.
func flagValues(files layout.Files, name string) []string {
	var out []string
	for _, l := range flagLines(files) {
		if v, ok := strings.CutPrefix(l, "--"+name+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// parseMinMax parses <min>:<max> as the autoscaler's parseMinMaxFlag does.
func parseMinMax(t *testing.T, s string) (int64, int64) {
	t.Helper()
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		t.Fatalf("%q is not min:max", s)
	}
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || lo < 0 || hi < lo {
		t.Fatalf("%q: the autoscaler refuses it", s)
	}
	return lo, hi
}

func TestCapFlags(t *testing.T) {
	_, files := renderCapacity(t, `caps: {
			maxNodesTotal: 30
			cores: {min: 4, max: 200}
			memoryGiB: max: 900
			gpus: {"nvidia-tesla-t4": {max: 8}}
		}`, "", "")
	if got := flagValues(files, "max-nodes-total"); !slices.Equal(got, []string{"30"}) {
		t.Errorf("--max-nodes-total %v", got)
	}
	cores := flagValues(files, "cores-total")
	if len(cores) != 1 {
		t.Fatalf("--cores-total %v", cores)
	}
	if lo, hi := parseMinMax(t, cores[0]); lo != 4 || hi != 200 {
		t.Errorf("--cores-total %d:%d", lo, hi)
	}
	mem := flagValues(files, "memory-total")
	if len(mem) != 1 {
		t.Fatalf("--memory-total %v", mem)
	}
	// The flag is in GiB: the autoscaler multiplies by units.GiB.
	if lo, hi := parseMinMax(t, mem[0]); lo != 0 || hi != 900 {
		t.Errorf("--memory-total %d:%d", lo, hi)
	}
	gpus := flagValues(files, "gpu-total")
	if len(gpus) != 1 {
		t.Fatalf("--gpu-total %v", gpus)
	}
	parts := strings.Split(gpus[0], ":")
	if len(parts) != 3 || parts[0] != "nvidia-tesla-t4" || parts[1] != "0" || parts[2] != "8" {
		t.Errorf("--gpu-total %q, want <type>:<min>:<max>", gpus[0])
	}
	if !slices.Equal(chartArgs(t, files), flagLines(files)) {
		t.Errorf("chart args\n%v\nflags.txt\n%v", chartArgs(t, files), flagLines(files))
	}

	_, none := renderCapacity(t, `expander: "least-waste"`, "", "")
	for _, f := range []string{"max-nodes-total", "cores-total", "memory-total", "gpu-total"} {
		if got := flagValues(none, f); got != nil {
			t.Errorf("no caps, yet --%s %v", f, got)
		}
	}
}

// TestCapFlagsCountDeclaredNodes pins the arithmetic the system test
// TestCapsBind relies on: each cap flag is the source's cap (the cloud's
// budget) plus exactly what the declared nodes outside the MIGs count,
// since the autoscaler counts every Node (kubernetes/autoscaler
// cluster-autoscaler-1.35.2, resourcequotas/usage.go calculateUsages):
// each node once, its vCPUs and GiB; their GPUs, even of a capped type,
// add nothing to --gpu-total (the autoscaler counts GPUs under the label
// cloud.google.com/gke-accelerator, which only cloud nodes carry).
func TestCapFlagsCountDeclaredNodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	caps := `caps: {
			maxNodesTotal: 30
			cores: {min: 4, max: 200}
			memoryGiB: max: 900
			gpus: "nvidia-tesla-t4": {min: 1, max: 8}
		}`
	// A control-plane node and two on-prem servers with T4s (6 advertised,
	// which no cap counts): 3 nodes, 104 vCPUs, 800 GiB.
	text := strings.NewReplacer(`joinToken: secretManager: secret: "join"`, `joinToken: secretManager: secret: "join"
	controlPlaneNodes: "cp-1": {cpu: 8, memoryGiB: 32}`,
		`labels: "example.com/site": "dc1"`, `labels: "example.com/site": "dc1"
	gpu: {type: "nvidia-tesla-t4", count: 4}
	nodes: {
		"dc-1": {cpu: 64, memoryGiB: 512}
		"dc-2": {cpu: 32, memoryGiB: 256, gpus: 2}
	}`).Replace(fmt.Sprintf(capacitySource, caps, "", ""))
	if !strings.Contains(text, "dc-2") || !strings.Contains(text, "cp-1") {
		t.Fatal("capacitySource changed: the declared nodes were not added")
	}
	if err := os.WriteFile(filepath.Join(dir, "all.cue"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := pipeline.Load(dir)
	if err != nil {
		t.Fatalf("nodegen rejects the test's source: %v", err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string][]string{
		"max-nodes-total": {"33"},
		"cores-total":     {"108:304"},
		"memory-total":    {"800:1700"},
		"gpu-total":       {"nvidia-tesla-t4:1:8"},
	} {
		if got := flagValues(files, flag); !slices.Equal(got, want) {
			t.Errorf("--%s %v, want %v", flag, got, want)
		}
	}
	const comment = "plus the 3 declared node(s) outside the MIGs, which the autoscaler counts too: 104 vCPUs, 800 GiB (their GPUs count towards no --gpu-total: they lack the label cloud.google.com/gke-accelerator).\n"
	if !bytes.Contains(files[layout.AutoscalerFlagsPath], []byte(comment)) {
		t.Errorf("flags.txt does not say what it adds (%q):\n%s", comment, files[layout.AutoscalerFlagsPath])
	}
	if !slices.Equal(chartArgs(t, files), flagLines(files)) {
		t.Errorf("chart args\n%v\nflags.txt\n%v", chartArgs(t, files), flagLines(files))
	}
}

func TestBalanceDefault(t *testing.T) {
	// gpu spans two zones: balancing is on by default.
	_, files := renderCapacity(t, "", "", "")
	if got := flagValues(files, "balance-similar-node-groups"); !slices.Equal(got, []string{"true"}) {
		t.Errorf("multi-zone group, default: %v", got)
	}
	// Explicitly off: off, with a warning that names the group.
	src, pos, err := loadCapacity(t, "balanceSimilarNodeGroups: false", "", "")
	if err != nil {
		t.Fatal(err)
	}
	files, err = render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := flagValues(files, "balance-similar-node-groups"); !slices.Equal(got, []string{"false"}) {
		t.Errorf("explicitly off: %v", got)
	}
	w := validate.Warnings(src, pos)
	if len(w) != 1 || !strings.Contains(w[0].Msg, "gpu spans several zones") {
		t.Errorf("warnings %v", w)
	}
	// Only single-zone groups: off by default, no warning.
	single := strings.Replace(capacitySource, `zones: ["europe-west4-b", "europe-west4-c"]`, `zones: ["europe-west4-c"]`, 1)
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "all.cue"), []byte(fmt.Sprintf(single, "", "", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := pipeline.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if files, err = render.All(l.Fleet.Clusters[0]); err != nil {
		t.Fatal(err)
	}
	if got := flagValues(files, "balance-similar-node-groups"); !slices.Equal(got, []string{"false"}) {
		t.Errorf("single-zone groups only: %v", got)
	}
}

// chartDefaultsPath is the official cluster-autoscaler chart's values.yaml
// (chart 9.59.0, verbatim): the chart has no values schema and Helm
// ignores unknown keys silently.
const chartDefaultsPath = "testdata/charts/cluster-autoscaler-9.59.0/values.yaml"

// TestValuesKeysExistInChart checks every key path nodegen writes into
// values.yaml against the chart's defaults, down to where the chart's
// default is an empty map or a list (free-form: extraArgs, nodeSelector,
// expanderPriorities, autoscalingGroups), for a source using every
// capacity field.
func TestValuesKeysExistInChart(t *testing.T) {
	b, err := os.ReadFile(chartDefaultsPath)
	if err != nil {
		t.Fatal(err)
	}
	var chart map[string]any
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	_, files := renderCapacity(t, `expander: "priority,least-waste"
		caps: {maxNodesTotal: 30, cores: max: 200, memoryGiB: max: 900, gpus: "nvidia-tesla-t4": max: 8}`, "priority: 30", "")
	var ours map[string]any
	if err := yaml.Unmarshal(files[layout.AutoscalerValuesPath], &ours); err != nil {
		t.Fatal(err)
	}
	if _, ok := ours["expanderPriorities"]; !ok {
		t.Fatal("the test's values have no expanderPriorities")
	}
	var walk func(path string, ours, chart map[string]any)
	walk = func(path string, ours, chart map[string]any) {
		for k, v := range ours {
			def, ok := chart[k]
			if !ok {
				t.Errorf("values.yaml sets %s%s, which the chart does not have", path, k)
				continue
			}
			sub, isMap := v.(map[string]any)
			defMap, defIsMap := def.(map[string]any)
			if isMap && defIsMap && len(defMap) > 0 && k != "extraArgs" {
				walk(path+k+".", sub, defMap)
			}
		}
	}
	walk("", ours, chart)
}
