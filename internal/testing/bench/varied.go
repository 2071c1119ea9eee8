package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/gce"
)

// WriteVaried writes a source of groups node groups into dir (created if
// missing) whose groups differ in almost every way a group can: one to
// three zones, machine types and GPU shapes (some time-sliced), Spot,
// boot disk size and type, OS and image, local SSDs, zero to eight
// labels and zero to three taints drawn from pools, kubelet reservations,
// eviction thresholds and maxPods, autoscaling options, descriptions. Few
// of its groups share a Terraform layout, unlike Write's. The first group
// is the autoscaler's, as in Write; the same groups always give the same
// files.
func WriteVaried(dir string, groups int) error {
	if groups < 1 {
		return fmt.Errorf("need at least one group, got %d", groups)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{"cluster.cue": clusterCUE, AutoscalerGroup + ".cue": autoscalerCUE}
	r := rand.New(rand.NewPCG(uint64(groups), 0x6e6f646567656e))
	for i := 1; i < groups; i++ {
		name, body := variedGroup(r, i)
		files[name+".cue"] = body
	}
	return writeFiles(dir, files)
}

var (
	variedZones  = []string{"a", "b", "c", "f"}
	labelKeys    = []string{"team", "pool", "location", "cost-center", "tier", "env", "owner", "project", "workload", "sla", "region-hint", "budget", "app", "component", "release", "track"}
	taintKeys    = []string{"dedicated", "burst", "batch", "team", "maintenance", "experimental", "gpu-class", "preemptible"}
	taintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
	diskTypes    = []string{"pd-balanced", "pd-standard", "pd-ssd"}
	words        = []string{"training", "inference", "batch", "interactive", "analytics", "render", "etl", "search", "ranking", "serving", "ci", "research"}
)

// variedGroup returns the name and file of the i-th (i ≥ 1) varied group.
func variedGroup(r *rand.Rand, i int) (string, string) {
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	var b strings.Builder
	gpu := r.IntN(5) < 2
	var name, mt string
	if gpu {
		s := GPUShapes[r.IntN(len(GPUShapes))]
		mt = s.MachineType
		name = fmt.Sprintf("gpu-%s-%04d", pick(words), i)
		fmt.Fprintf(&b, "nodeGroups: %q: {\n", name)
		fmt.Fprintf(&b, "\tgpu: {type: %q, count: %d", s.Accelerator, s.Count)
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, ", sharing: timeSlicing: replicas: %d", 2+r.IntN(7))
		}
		b.WriteString("}\n")
	} else {
		mt = pick(CPUMachineTypes)
		name = fmt.Sprintf("cpu-%s-%04d", pick(words), i)
		fmt.Fprintf(&b, "nodeGroups: %q: {\n", name)
	}
	b.WriteString("\tkind: \"gce\"\n")
	fmt.Fprintf(&b, "\tdescription: %q\n", strings.Repeat(pick(words)+" ", 1+r.IntN(6))+"workers")
	zs := slices.Clone(variedZones)
	r.Shuffle(len(zs), func(a, b int) { zs[a], zs[b] = zs[b], zs[a] })
	zs = zs[:1+r.IntN(3)]
	slices.Sort(zs)
	var zones []string
	for _, z := range zs {
		zones = append(zones, fmt.Sprintf("%q", Region+"-"+z))
	}
	fmt.Fprintf(&b, "\tzones: [%s]\n", strings.Join(zones, ", "))
	fmt.Fprintf(&b, "\tmachineType: %q\n", mt)
	// Half boot Container-Optimized OS from an image of the team's own
	// (nodegen builds its families from Ubuntu only).
	image := "family/k8s-node-1-35"
	if r.IntN(2) == 0 {
		b.WriteString("\tosDistribution: \"cos\"\n")
		image = "cos-node-1-35-v1"
	}
	fmt.Fprintf(&b, "\timage: \"projects/acme-bench-fleet/global/images/%s\"\n", image)
	fmt.Fprintf(&b, "\tbootDiskSizeGb: %d\n", 50+10*r.IntN(46))
	// A disk type the machine's series takes (C3 and G2 take no
	// pd-standard), from the same draw.
	disk := pick(diskTypes)
	if m, ok := gce.MachineType(mt); ok && m.DiskTypeProblem(disk) != "" {
		disk = "pd-balanced"
	}
	fmt.Fprintf(&b, "\tbootDiskType: %q\n", disk)
	min := r.IntN(3)
	fmt.Fprintf(&b, "\tmin: %d\n\tmax: %d\n", min, min+1+r.IntN(40))
	if r.IntN(10) < 3 {
		b.WriteString("\tspot: true\n")
	}
	if strings.HasPrefix(mt, "n2-") && r.IntN(4) == 0 {
		fmt.Fprintf(&b, "\tlocalSsdCount: %d\n", []int{1, 2, 4, 8}[r.IntN(4)])
	}
	keys := slices.Clone(labelKeys)
	r.Shuffle(len(keys), func(a, b int) { keys[a], keys[b] = keys[b], keys[a] })
	b.WriteString("\tlabels: {\n")
	for _, k := range keys[:r.IntN(9)] {
		fmt.Fprintf(&b, "\t\t\"example.com/%s\": \"%s-%d\"\n", k, pick(words), r.IntN(100))
	}
	b.WriteString("\t}\n")
	tk := slices.Clone(taintKeys)
	r.Shuffle(len(tk), func(a, b int) { tk[a], tk[b] = tk[b], tk[a] })
	b.WriteString("\ttaints: [\n")
	for _, k := range tk[:r.IntN(4)] {
		fmt.Fprintf(&b, "\t\t{key: \"example.com/%s\", value: %q, effect: %q},\n", k, pick(words), pick(taintEffects))
	}
	b.WriteString("\t]\n")
	var kubelet []string
	if r.IntN(2) == 0 {
		kubelet = append(kubelet, fmt.Sprintf("systemReserved: {cpu: \"%dm\", memory: \"%dMi\"}", 100*(1+r.IntN(5)), 256*(1+r.IntN(4))))
	}
	if r.IntN(3) == 0 {
		kubelet = append(kubelet, fmt.Sprintf("kubeReserved: {cpu: \"%dm\", memory: \"%dMi\"}", 100*(1+r.IntN(3)), 256*(1+r.IntN(3))))
	}
	if r.IntN(3) == 0 {
		kubelet = append(kubelet, fmt.Sprintf("evictionHard: \"memory.available\": \"%dMi\"", 100*(1+r.IntN(5))))
	}
	if r.IntN(3) == 0 {
		kubelet = append(kubelet, fmt.Sprintf("maxPods: %d", []int{64, 110, 128}[r.IntN(3)]))
	}
	if len(kubelet) > 0 {
		fmt.Fprintf(&b, "\tkubelet: {\n\t\t%s\n\t}\n", strings.Join(kubelet, "\n\t\t"))
	}
	switch r.IntN(4) {
	case 1:
		fmt.Fprintf(&b, "\tautoscaling: {\n\t\tscaleDownUnneededTime: \"%dm\"\n\t\tmaxNodeProvisionTime: \"%dm\"\n\t}\n", 5+r.IntN(20), 10+r.IntN(20))
	case 2:
		fmt.Fprintf(&b, "\tautoscaling: scaleDownUtilizationThreshold: 0.%d\n", 3+r.IntN(6))
	}
	b.WriteString("}\n")
	return name, b.String()
}
