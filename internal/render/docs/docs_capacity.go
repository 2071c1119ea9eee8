package docs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// capacity writes the autoscaler's capacity policy: the expander chain
// with the groups in priority order, balancing, and the cluster-wide caps.
func (d *docWriter) capacity() {
	a := &d.src.Cluster.Autoscaler
	d.p("\n## Capacity policy\n\n")
	d.p("Min and max are per zonal MIG: a group's total is min and max times its zones (column Group total above).\n\n")
	d.p("- **Expander**: `%s`", a.Expander)
	if a.UsesPriority() {
		var groups []*model.NodeGroup
		for _, g := range d.src.Groups() {
			if g.Autoscaled() {
				groups = append(groups, g)
			}
		}
		slices.SortStableFunc(groups, func(x, y *model.NodeGroup) int { return y.GroupPriority() - x.GroupPriority() })
		var parts []string
		for _, g := range groups {
			parts = append(parts, fmt.Sprintf("%s (%d)", g.Name, g.GroupPriority()))
		}
		d.p(". Among the groups that fit, the priority expander grows the one with the highest priority: %s (ConfigMap `%s/%s`, `%s`, or the chart's `expanderPriorities`)",
			strings.Join(parts, ", "), a.Namespace, model.PriorityExpanderConfigMapName, layout.PriorityExpanderPath)
	}
	d.p(".\n")
	d.p("- **Balance similar node groups**: %t", d.src.BalanceSimilarNodeGroups())
	if a.BalanceSimilarNodeGroups == nil {
		if mz := d.src.MultiZone(); len(mz) > 0 {
			d.p(" (default: %s spans several zones, each its own MIG; a scale-up is split between them)", mz[0].Name)
		} else {
			d.p(" (default: no autoscaled group spans several zones)")
		}
	}
	d.p(".\n")
	if times := d.src.ProvisionTimes(); len(times) > 0 {
		d.p("- **Max node provision time** (how long a VM may take to register before the autoscaler gives it up): `--max-node-provision-time=%s` is the default; a group's own value, in its kube-env `autoscaling_options`, wins. Per group: %s.\n",
			a.MaxNodeProvisionTime, strings.Join(times, ", "))
	}
	caps := a.Caps
	if caps == nil {
		d.p("- **Caps**: none; the autoscaler's defaults apply.\n")
		return
	}
	fixed := d.src.Fixed()
	d.p("- The caps are the cloud's budget. The autoscaler counts every Node of the cluster, so the flags carry each cap plus the %d declared node(s) outside the MIGs (%d vCPUs, %d GiB)", fixed.Nodes, fixed.CPU, fixed.MemoryGiB)
	if len(d.src.OnpremWithoutNodes()) > 0 {
		d.p("; the servers of %s, which the source does not declare, take from the cloud's share", strings.Join(groupNames(d.src.OnpremWithoutNodes()), ", "))
	}
	if len(caps.GPUs) > 0 && slices.ContainsFunc(d.src.DeclaredNodes(), func(n model.DeclaredNode) bool { return n.GPUs > 0 }) {
		d.p("; their GPUs count towards no GPU cap: the autoscaler counts a Node's GPUs under its label `%s`, which nodegen puts on cloud nodes only", model.GPULabel)
	}
	d.p(".\n")
	if caps.MaxNodesTotal > 0 {
		d.p("- **Nodes**: at most %d cloud Nodes (`--max-nodes-total=%d`).\n", caps.MaxNodesTotal, int64(caps.MaxNodesTotal)+fixed.Nodes)
	}
	if r := caps.Cores; r != nil {
		d.p("- **vCPUs**: %d–%d in the cloud (`--cores-total=%d:%d`).\n", r.Min, r.Max, r.Min+fixed.CPU, r.Max+fixed.CPU)
	}
	if r := caps.MemoryGiB; r != nil {
		d.p("- **Memory**: %d–%d GiB in the cloud (`--memory-total=%d:%d`).\n", r.Min, r.Max, r.Min+fixed.MemoryGiB, r.Max+fixed.MemoryGiB)
	}
	for _, t := range model.SortedKeys(caps.GPUs) {
		r := caps.GPUs[t]
		d.p("- **GPUs %s**: %d–%d in the cloud (`--gpu-total=%s:%d:%d`), counted as the autoscaler counts them: the `%s` each node advertises, so a time-sliced GPU counts its replicas.", code(t), r.Min, r.Max, t, r.Min, r.Max, model.GPUResource)
		var per []string
		for _, g := range d.src.Groups() {
			if !g.Autoscaled() || g.GPU == nil || g.GPU.Type != t {
				continue
			}
			n, capped, _ := d.src.GPUCapNodes(g)
			s := fmt.Sprintf("a node of %s counts %d", g.Name, g.CapGPUs())
			if capped {
				s += fmt.Sprintf(", so the cap admits at most %d of its %d nodes", n, g.MaxNodes())
			}
			per = append(per, s)
		}
		if len(per) > 0 {
			d.p(" With the other cloud groups at their minimum: %s.", strings.Join(per, "; "))
		}
		d.p("\n")
	}
}

func groupNames(gs []*model.NodeGroup) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Name)
	}
	return out
}
