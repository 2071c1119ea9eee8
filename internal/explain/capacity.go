package explain

import (
	"fmt"
	"strconv"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
)

// ReasonCap is a reason kind: a cluster-wide cap leaves no room for one
// more node of the group.
const ReasonCap = "cap"

// capacity is what the explainer knows of the autoscaler's capacity
// policy: whether the priority expander decides first, and the caps.
type capacity struct {
	priorityFirst bool
	priorities    map[string]int // autoscaled group → priority
	caps          *model.Caps
	cloud         []*model.NodeGroup
}

func newCapacity(src *model.Source) capacity {
	a := &src.Cluster.Autoscaler
	c := capacity{caps: a.Caps, priorities: map[string]int{}}
	c.priorityFirst = a.Expanders()[0] == model.PriorityExpander
	for _, g := range src.Groups() {
		if g.Autoscaled() {
			c.priorities[g.Name] = g.GroupPriority()
		}
		if g.Cloud() {
			c.cloud = append(c.cloud, g)
		}
	}
	return c
}

// capUse is how much of one cap a node of a group takes.
type capUse struct {
	name string // the cap's path in the source
	unit string
	max  int64
	per  func(g *model.NodeGroup) (int64, bool)
}

func (c capacity) uses() []capUse {
	if c.caps == nil {
		return nil
	}
	var out []capUse
	if c.caps.MaxNodesTotal > 0 {
		out = append(out, capUse{"cluster.autoscaler.caps.maxNodesTotal", "Nodes", int64(c.caps.MaxNodesTotal),
			func(*model.NodeGroup) (int64, bool) { return 1, true }})
	}
	if r := c.caps.Cores; r != nil {
		out = append(out, capUse{"cluster.autoscaler.caps.cores.max", "vCPUs", r.Max, func(g *model.NodeGroup) (int64, bool) {
			cpu, _, err := g.Shape.Resources()
			return cpu, err == nil
		}})
	}
	if r := c.caps.MemoryGiB; r != nil {
		// The limit is in GiB, compared with node capacity in bytes.
		out = append(out, capUse{"cluster.autoscaler.caps.memoryGiB.max", "bytes of memory", r.Max * gib, func(g *model.NodeGroup) (int64, bool) {
			_, mem, err := g.Shape.Resources()
			if err != nil {
				return 0, false
			}
			return mem - nodetemplate.KernelReserved(mem, "linux", g.OSDistribution, g.Arch), true
		}})
	}
	for _, t := range model.SortedKeys(c.caps.GPUs) {
		out = append(out, capUse{"cluster.autoscaler.caps.gpus." + strconv.Quote(t) + ".max", t + " GPUs", c.caps.GPUs[t].Max, func(g *model.NodeGroup) (int64, bool) {
			if g.GPU == nil || g.GPU.Type != t {
				return 0, true
			}
			return g.CapGPUs(), true // advertised, as --gpu-total counts
		}})
	}
	return out
}

// capReasons returns a reason for each cap that leaves no room for one
// more node of g when every cloud group is at its minimum size (on-prem
// and control-plane nodes, which the autoscaler counts too, would leave
// even less).
func (c capacity) capReasons(g *model.NodeGroup) []Reason {
	var out []Reason
	for _, u := range c.uses() {
		per, ok := u.per(g)
		if !ok || per == 0 {
			continue
		}
		var floor int64
		known := true
		for _, o := range c.cloud {
			n, ok := u.per(o)
			known = known && ok
			floor += n * int64(o.MinNodes())
		}
		if !known {
			continue
		}
		if left := u.max - floor; left < per {
			out = append(out, Reason{Kind: ReasonCap, Message: fmt.Sprintf(
				"%s %d leaves room for %d %s with every cloud group at its minimum size, and a node of this group needs %d: the autoscaler never adds one",
				u.name, rawMax(u), max(left, 0), u.unit, per)})
		}
	}
	return out
}

// rawMax is the cap as written in the source.
func rawMax(u capUse) int64 {
	if u.unit == "bytes of memory" {
		return u.max / gib
	}
	return u.max
}

// prefer sets the groups the priority expander keeps among those the
// workload fits, when it is the first expander of the chain (after
// another expander the outcome depends on that one).
func (c capacity) prefer(wr *WorkloadResult) {
	if !c.priorityFirst {
		return
	}
	best := -1
	var groups []string
	for _, gr := range wr.Groups {
		if gr.Verdict != Fits {
			continue
		}
		p := c.priorities[gr.Group]
		if p > best {
			best, groups = p, nil
		}
		if p == best {
			groups = append(groups, gr.Group)
		}
	}
	if groups != nil {
		wr.Preferred = groups
		wr.PreferredPriority = &best
	}
}

// capNotes says, for a group the workload fits, how many of its nodes the
// cap of its GPU type admits when that is fewer than its max: the cap
// counts advertised GPUs (model.GPUCapNodes).
func capNotes(src *model.Source, g *model.NodeGroup) []string {
	n, capped, ok := src.GPUCapNodes(g)
	if !ok || !capped {
		return nil
	}
	return []string{fmt.Sprintf("cluster.autoscaler.caps.gpus.%s.max %d admits at most %d of the group's %d nodes: the cap counts advertised %s, %d per node of this group, with the other cloud groups at their minimum",
		strconv.Quote(g.GPU.Type), src.Cluster.Autoscaler.Caps.GPUs[g.GPU.Type].Max, n, g.MaxNodes(), model.GPUResource, g.CapGPUs())}
}
