package render

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
			strings.Join(parts, ", "), a.Namespace, PriorityExpanderConfigMapName, layout.PriorityExpanderPath)
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
	caps := a.Caps
	if caps == nil {
		d.p("- **Caps**: none; the autoscaler's defaults apply.\n")
		return
	}
	if caps.MaxNodesTotal > 0 {
		d.p("- **Nodes**: at most %d Nodes in the whole cluster (control plane and on-prem nodes included).\n", caps.MaxNodesTotal)
	}
	if r := caps.Cores; r != nil {
		d.p("- **vCPUs**: %d–%d in the whole cluster.\n", r.Min, r.Max)
	}
	if r := caps.MemoryGiB; r != nil {
		d.p("- **Memory**: %d–%d GiB in the whole cluster.\n", r.Min, r.Max)
	}
	for _, t := range model.SortedKeys(caps.GPUs) {
		r := caps.GPUs[t]
		d.p("- **GPUs %s**: %d–%d in the whole cluster.\n", code(t), r.Min, r.Max)
	}
}
