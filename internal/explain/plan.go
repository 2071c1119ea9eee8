package explain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/model"
)

// PlanEstimate says what the plan is and is not, in the output and the docs.
const PlanEstimate = "an estimate of the Cluster Autoscaler's binpacking with fresh nodes (one workload's pods per node), not its code"

// Plan is what the Cluster Autoscaler would add for the workloads'
// pending pods together: the steps in the order it serves them, and the
// pods left with no node.
type Plan struct {
	// Order says how workloads and groups were ordered: by the priority
	// expander, or by name when the expander chain does not start with it.
	Order   string        `json:"order"`
	Steps   []PlanStep    `json:"steps"`
	Pending []PlanPending `json:"pending,omitempty"`
}

// PlanStep is one group grown for one workload's pods.
type PlanStep struct {
	Workload string `json:"workload"`
	Group    string `json:"group"`
	Priority int    `json:"priority"`
	// Nodes are the nodes added (0 when the group is already at a bound);
	// Pods the workload's pods they hold, PodsPerNode at most per fresh
	// node, by PerNodeBy (a resource, or the node's pod count).
	Nodes       int    `json:"nodes"`
	Pods        int    `json:"pods"`
	PodsPerNode int    `json:"podsPerNode"`
	PerNodeBy   string `json:"perNodeBy"`
	// Stop is the bound that kept the group from adding the nodes the
	// rest of the workload's pods need: the group's max or a cap.
	Stop string `json:"stop,omitempty"`
	// AtMax is true when the group reached its max with this step.
	AtMax bool `json:"atMax,omitempty"`
}

// PlanPending is a workload's pods no group takes.
type PlanPending struct {
	Workload string `json:"workload"`
	Pods     int    `json:"pods"`
	Reason   string `json:"reason"`
}

// planFit is a group a workload's pod fits on a fresh node of.
type planFit struct {
	g       *model.NodeGroup
	prio    int
	perNode int64
	by      string
}

// Plan estimates what the Cluster Autoscaler adds for the workloads'
// pending pods together. Workloads are served in the order the priority
// expander serves them (the one whose best fitting group has the highest
// priority first) and each is offered its fitting groups from the highest
// priority down, as the expander falls back when a group is full or
// capped. A group adds at most max × zones nodes less its minimum, at as
// many of the workload's pods per node as a fresh node holds (cpu, memory,
// nvidia.com/gpu as advertised, pods). The caps are the cloud's budget: the
// cloud groups start at their minimum size (the gce-static groups at
// theirs) and every added node consumes them, across workloads and groups.
// DaemonSets are not planned (one pod per node, on every node).
func (e *Explainer) Plan(workloads []*Workload) *Plan {
	c := e.capacity
	p := &Plan{Steps: []PlanStep{}, Order: "the priority expander: the highest priority group that fits first"}
	if !c.priorityFirst {
		p.Order = "group name (the expander chain does not start with priority: its first expander chooses)"
	}
	uses := c.uses()
	used := make([]int64, len(uses))
	known := make([]bool, len(uses))
	for i, u := range uses {
		known[i] = true
		for _, o := range c.cloud {
			n, ok := u.per(o)
			known[i] = known[i] && ok
			used[i] += n * int64(o.MinNodes())
		}
	}
	added := map[string]int{}

	type job struct {
		w    *Workload
		fits []planFit
	}
	var jobs []job
	for _, w := range workloads {
		if w.Kind == "DaemonSet" || w.Replicas < 1 {
			continue
		}
		jobs = append(jobs, job{w, e.planFits(w)})
	}
	best := func(j job) int {
		if len(j.fits) == 0 || !c.priorityFirst {
			return 0
		}
		return j.fits[0].prio
	}
	if c.priorityFirst {
		slices.SortStableFunc(jobs, func(a, b job) int {
			if (len(a.fits) == 0) != (len(b.fits) == 0) {
				if len(a.fits) == 0 {
					return 1
				}
				return -1
			}
			return cmp.Compare(best(b), best(a))
		})
	}
	for _, j := range jobs {
		left := j.w.Replicas
		var stops []string
		for _, f := range j.fits {
			if left == 0 {
				break
			}
			need := (int64(left) + f.perNode - 1) / f.perNode
			room := int64(f.g.MaxNodes() - f.g.MinNodes() - added[f.g.Name])
			type bound struct {
				n   int64
				msg string
			}
			bounds := []bound{{room, fmt.Sprintf("%s is at its max (%d per zone × %d %s)", f.g.Name, f.g.Max, len(f.g.Zones), plural(len(f.g.Zones), "zone", "zones"))}}
			for i, u := range uses {
				per, ok := u.per(f.g)
				if !known[i] || !ok || per == 0 {
					continue
				}
				bounds = append(bounds, bound{max(u.max-used[i], 0) / per, fmt.Sprintf("%s %d is reached (%d %s per node of %s)", u.name, rawMax(u), per, u.unit, f.g.Name)})
			}
			n := need
			for _, b := range bounds {
				n = min(n, b.n)
			}
			var stop []string
			if n < need {
				for _, b := range bounds {
					if b.n == n {
						stop = append(stop, b.msg)
					}
				}
			}
			pods := min(int(n*f.perNode), left)
			left -= pods
			added[f.g.Name] += int(n)
			for i, u := range uses {
				if per, ok := u.per(f.g); ok {
					used[i] += per * n
				}
			}
			st := strings.Join(stop, " and ")
			if st != "" {
				stops = append(stops, st)
			}
			p.Steps = append(p.Steps, PlanStep{Workload: j.w.ID(), Group: f.g.Name, Priority: f.prio, Nodes: int(n), Pods: pods,
				PodsPerNode: int(f.perNode), PerNodeBy: f.by, Stop: st, AtMax: added[f.g.Name] == f.g.MaxNodes()-f.g.MinNodes()})
		}
		if left > 0 {
			why := "no autoscaled group's fresh node fits the pod"
			if len(stops) > 0 {
				why = strings.Join(stops, "; ")
			}
			p.Pending = append(p.Pending, PlanPending{Workload: j.w.ID(), Pods: left, Reason: why})
		}
	}
	return p
}

// planFits are the autoscaled groups with a max above zero a fresh node of
// which (in some zone) takes w's pod, caps aside, with the most pods per
// node among those zones; by priority, highest first, when the priority
// expander decides, else by name.
func (e *Explainer) planFits(w *Workload) []planFit {
	var out []planFit
	for _, g := range e.groups {
		if !g.Autoscaled() || g.Max == 0 || e.errs[g.Name] != nil {
			continue
		}
		f := planFit{g: g, prio: e.capacity.priorities[g.Name]}
		for _, t := range e.templates[g.Name] {
			if len(Check(w, t)) > 0 {
				continue
			}
			if n, by := podsPerNode(w, t); n > f.perNode {
				f.perNode, f.by = n, by
			}
		}
		if f.perNode > 0 {
			out = append(out, f)
		}
	}
	if e.capacity.priorityFirst {
		slices.SortStableFunc(out, func(a, b planFit) int { return cmp.Compare(b.prio, a.prio) })
	}
	return out
}

// String is a step for people.
func (s PlanStep) String() string {
	if s.Nodes == 0 {
		return fmt.Sprintf("%s: %s adds no node: %s", s.Workload, s.Group, s.Stop)
	}
	out := fmt.Sprintf("%s: %s adds %d %s for %d %s (%d per node, by %s)", s.Workload, s.Group,
		s.Nodes, plural(s.Nodes, "node", "nodes"), s.Pods, plural(s.Pods, "pod", "pods"), s.PodsPerNode, s.PerNodeBy)
	switch {
	case s.Stop != "":
		out += ": " + s.Stop
	case s.AtMax:
		out += ": " + s.Group + " is at its max"
	}
	return out
}
