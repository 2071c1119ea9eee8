package rollout

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/model"
)

// virtualKubeletLabel marks the nodes the autoscaler leaves out of its
// caps (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// core/utils/utils.go).
const virtualKubeletLabel, virtualKubeletValue = "type", "virtual-kubelet"

// gib is a GiB in bytes: the unit of cluster.autoscaler.caps.memoryGiB.
const gib = 1 << 30

// capRoom is how many more nodes of group g the autoscaler's cluster-wide
// caps admit beside the cluster's nodes, counted as the autoscaler counts
// them (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// resourcequotas/usage.go calculateUsages: every Node but virtual-kubelet
// ones, its capacity's cpu and memory, and its GPUs by accelerator type as
// model.CapGPUs says) against the limits nodegen renders (each cap plus
// the declared nodes outside the MIGs, model.Source.Fixed). A surge beyond
// it would take the cluster past the budget its caps set. capped is false
// when no cap bounds g; why names the cap that leaves the least room.
func capRoom(src *model.Source, g *model.NodeGroup, nodes []corev1.Node) (room int, capped bool, why string) {
	caps := src.Cluster.Autoscaler.Caps
	if caps == nil {
		return 0, false, ""
	}
	fixed := src.Fixed()
	var used struct {
		nodes, cpu, mem int64
		gpus            map[string]int64
	}
	used.gpus = map[string]int64{}
	for i := range nodes {
		n := &nodes[i]
		if n.Labels[virtualKubeletLabel] == virtualKubeletValue {
			continue
		}
		used.nodes++
		used.cpu += n.Status.Capacity.Cpu().Value()
		used.mem += n.Status.Capacity.Memory().Value()
		if t := n.Labels[model.GPULabel]; t != "" {
			q := n.Status.Allocatable[corev1.ResourceName(model.GPUResource)]
			gpus := q.Value()
			if ng := src.NodeGroups[n.Labels[model.GroupLabel]]; gpus == 0 && ng != nil && ng.GPU != nil && ng.GPU.Type == t {
				// GPUs not reported yet: the autoscaler counts the
				// group's template, what the device plugin will advertise.
				gpus = ng.CapGPUs()
			}
			used.gpus[t] += gpus
		}
	}
	cpu, mem, err := g.Shape.Resources()
	if err != nil {
		cpu, mem = 0, 0 // vet refuses such a source; count nodes and GPUs only
	}
	room = -1
	// bound lowers room to what limit leaves for nodes of per each; unit
	// scales the numbers why shows.
	bound := func(what string, limit, inUse, per, unit int64) {
		if per <= 0 {
			return
		}
		n := int(max(limit-inUse, 0) / per)
		if room < 0 || n < room {
			room = n
			why = fmt.Sprintf("%s (%d in use of %d)", what, inUse/unit, limit/unit)
		}
	}
	if caps.MaxNodesTotal > 0 {
		bound("cluster.autoscaler.caps.maxNodesTotal", int64(caps.MaxNodesTotal)+fixed.Nodes, used.nodes, 1, 1)
	}
	if caps.Cores != nil {
		bound("cluster.autoscaler.caps.cores", caps.Cores.Max+fixed.CPU, used.cpu, cpu, 1)
	}
	if caps.MemoryGiB != nil {
		bound("cluster.autoscaler.caps.memoryGiB", (caps.MemoryGiB.Max+fixed.MemoryGiB)*gib, used.mem, mem, gib)
	}
	if g.GPU != nil {
		if r := caps.GPUs[g.GPU.Type]; r != nil {
			bound(fmt.Sprintf("cluster.autoscaler.caps.gpus.%q", g.GPU.Type), r.Max, used.gpus[g.GPU.Type], g.CapGPUs(), 1)
		}
	}
	if room < 0 {
		return 0, false, ""
	}
	return room, true, why
}
