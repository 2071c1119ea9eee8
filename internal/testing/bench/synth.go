// Package bench writes synthetic nodegen sources of a chosen size, for the
// Go benchmarks of each stage and for the `make bench` comparison with
// `cue export` (hack/bench).
package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GPUShape is a machine type with the GPUs a group attaches to it.
type GPUShape struct {
	MachineType string
	Accelerator string
	Count       int
}

// GPUShapes are the GPU groups' shapes: valid combinations per
// internal/gce.MachineShape.CheckGPU (the tests check it).
var GPUShapes = []GPUShape{
	{"n1-standard-8", "nvidia-tesla-t4", 1},
	{"n1-standard-16", "nvidia-tesla-t4", 2},
	{"g2-standard-8", "nvidia-l4", 1},
	{"n1-standard-8", "nvidia-tesla-v100", 1},
	{"a2-highgpu-1g", "nvidia-tesla-a100", 1},
}

// CPUMachineTypes are the CPU groups' machine types.
var CPUMachineTypes = []string{"n2-standard-8", "e2-standard-4", "c3-standard-8", "n2d-standard-16", "t2d-standard-4"}

// Region is the synthetic cluster's region; every group has two of its zones.
const Region = "us-central1"

var zonePairs = [][2]string{{"a", "b"}, {"b", "c"}, {"a", "f"}, {"c", "f"}}

// AutoscalerGroup is the name of the synthetic source's gce-static group.
const AutoscalerGroup = "autoscaler"

// Write writes a source of groups node groups into dir (created if
// missing): cluster.cue and one file per node group, as users lay out
// nodegroups/. The first group is the autoscaler's dedicated gce-static
// group; of the others, every second one is a GPU group (alternating GPU
// shapes); each autoscaled group has two zones of one region, 3 to 5
// labels and 1 or 2 taints. The same groups always give the same files.
func Write(dir string, groups int) error {
	if groups < 1 {
		return fmt.Errorf("need at least one group, got %d", groups)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{"cluster.cue": clusterCUE}
	files[AutoscalerGroup+".cue"] = autoscalerCUE
	for i := 1; i < groups; i++ {
		name, body := group(i)
		files[name+".cue"] = body
	}
	return writeFiles(dir, files)
}

// writeFiles writes the source's files into dir.
func writeFiles(dir string, files map[string]string) error {
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// OptInPrefixCondition rewrites the cluster.cue Write or WriteVaried wrote
// into dir to opt in to the autoscaler's IAM condition on the cluster's
// prefix (no other cluster of the project starts with "bench-"): for a
// source whose condition naming each MIG and prefix is over what nodegen
// renders (model.AutoscalerConditionCap), as vet refuses it otherwise, and
// refuses the opt-in where it has no effect.
func OptInPrefixCondition(dir string) error {
	opted := strings.Replace(clusterCUE, "\tgcp: {\n", "\tgcp: {\n\t\tiamConditionByClusterPrefix: true\n", 1)
	return os.WriteFile(filepath.Join(dir, "cluster.cue"), []byte(opted), 0o644)
}

const clusterCUE = `// Synthetic benchmark cluster.
cluster: {
	name:                 "bench"
	kubernetesVersion:    "1.35.2"
	controlPlaneEndpoint: "10.20.0.10:6443"
	caCertHashes: ["sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d"]
	joinToken: secretManager: secret: "kubeadm-join-token"
	gcp: {
		project: "acme-bench-fleet"
		region:  "` + Region + `"
	}
	autoscaler: {
		nodeGroup:             "` + AutoscalerGroup + `"
		expander:              "least-waste"
		scaleDownUnneededTime: "10m"
	}
}
`

const autoscalerCUE = `nodeGroups: ` + AutoscalerGroup + `: {
	kind:        "gce-static"
	description: "Dedicated node for the Cluster Autoscaler"
	zones: ["` + Region + `-a", "` + Region + `-b"]
	machineType: "e2-standard-2"
	image:       "projects/acme-bench-fleet/global/images/family/k8s-node-1-35"
	min:         1
	max:         1
	labels: "example.com/role": "cluster-autoscaler"
	taints: [{key: "example.com/dedicated", value: "cluster-autoscaler", effect: "NoSchedule"}]
}
`

// group returns the name and file of the i-th (i ≥ 1) synthetic group.
func group(i int) (string, string) {
	gpu := i%2 == 1
	var b strings.Builder
	var name string
	zp := zonePairs[i%len(zonePairs)]
	team := fmt.Sprintf("team-%02d", i%37)
	if gpu {
		s := GPUShapes[(i/2)%len(GPUShapes)]
		name = fmt.Sprintf("gpu-%s-%04d", strings.TrimPrefix(strings.TrimPrefix(s.Accelerator, "nvidia-"), "tesla-"), i)
		fmt.Fprintf(&b, "// GPU burst workers for %s.\n", team)
		fmt.Fprintf(&b, "nodeGroups: %q: {\n", name)
		b.WriteString("\tkind:        \"gce\"\n")
		fmt.Fprintf(&b, "\tdescription: \"%s GPU workers (%s)\"\n", s.Accelerator, team)
		fmt.Fprintf(&b, "\tzones: [\"%s-%s\", \"%s-%s\"]\n", Region, zp[0], Region, zp[1])
		fmt.Fprintf(&b, "\tmachineType:    %q\n", s.MachineType)
		b.WriteString("\timage:          \"projects/acme-bench-fleet/global/images/family/k8s-node-gpu-1-35\"\n")
		b.WriteString("\tbootDiskSizeGb: 200\n")
		b.WriteString("\tmin:            0\n")
		fmt.Fprintf(&b, "\tmax:            %d\n", 2+i%7)
		fmt.Fprintf(&b, "\tgpu: {type: %q, count: %d}\n", s.Accelerator, s.Count)
	} else {
		mt := CPUMachineTypes[(i/2)%len(CPUMachineTypes)]
		name = fmt.Sprintf("cpu-%s-%04d", strings.SplitN(mt, "-", 2)[0], i)
		fmt.Fprintf(&b, "// CPU burst workers for %s.\n", team)
		fmt.Fprintf(&b, "nodeGroups: %q: {\n", name)
		b.WriteString("\tkind:        \"gce\"\n")
		fmt.Fprintf(&b, "\tdescription: \"CPU workers (%s)\"\n", team)
		fmt.Fprintf(&b, "\tzones: [\"%s-%s\", \"%s-%s\"]\n", Region, zp[0], Region, zp[1])
		fmt.Fprintf(&b, "\tmachineType: %q\n", mt)
		b.WriteString("\timage:       \"projects/acme-bench-fleet/global/images/family/k8s-node-1-35\"\n")
		fmt.Fprintf(&b, "\tmin:         %d\n", i%3)
		fmt.Fprintf(&b, "\tmax:         %d\n", 10+i%20)
		if i%4 == 0 {
			b.WriteString("\tspot:        true\n")
		}
	}
	// 3 to 5 labels.
	b.WriteString("\tlabels: {\n")
	fmt.Fprintf(&b, "\t\t\"example.com/team\":     %q\n", team)
	fmt.Fprintf(&b, "\t\t\"example.com/pool\":     %q\n", name)
	b.WriteString("\t\t\"example.com/location\": \"cloud\"\n")
	if i%3 != 0 {
		fmt.Fprintf(&b, "\t\t\"example.com/cost-center\": \"cc-%03d\"\n", i%113)
	}
	if i%3 == 2 {
		fmt.Fprintf(&b, "\t\t\"example.com/tier\": %q\n", []string{"batch", "interactive", "training"}[i%3])
	}
	b.WriteString("\t}\n")
	// 1 or 2 taints.
	b.WriteString("\ttaints: [\n")
	if gpu {
		b.WriteString("\t\t{key: \"nvidia.com/gpu\", value: \"present\", effect: \"NoSchedule\"},\n")
	} else {
		fmt.Fprintf(&b, "\t\t{key: \"example.com/burst\", value: %q, effect: \"NoSchedule\"},\n", team)
	}
	if i%2 == 0 || i%5 == 0 {
		fmt.Fprintf(&b, "\t\t{key: \"example.com/team\", value: %q, effect: \"PreferNoSchedule\"},\n", team)
	}
	b.WriteString("\t]\n")
	if i%3 == 1 {
		b.WriteString("\tkubelet: systemReserved: {cpu: \"100m\", memory: \"512Mi\"}\n")
	}
	switch i % 4 {
	case 1:
		b.WriteString("\tautoscaling: {\n\t\tscaleDownUnneededTime: \"15m\"\n\t\tmaxNodeProvisionTime:  \"20m\"\n\t}\n")
	case 2:
		b.WriteString("\tautoscaling: scaleDownUtilizationThreshold: 0.6\n")
	}
	b.WriteString("}\n")
	return name, b.String()
}
