package validate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
)

// Expanders are the expanders nodegen lets the autoscaler chain
// (expander/expander.go; grpc needs a server nodegen does not render).
var Expanders = []string{"least-waste", "random", "most-pods", "price", "priority", "least-nodes"}

// capacity checks the autoscaler's capacity policy: the expander chain,
// the groups' priorities, and the cluster-wide caps against the groups.
func (c *checker) capacity() {
	a := &c.src.Cluster.Autoscaler
	chainOK := c.expanderChain()
	prioritised := false
	for _, g := range c.src.Groups() {
		if g.Priority == nil {
			continue
		}
		p := sel("nodeGroups", g.Name, "priority")
		// Only gce groups have a priority (the schema's).
		switch {
		case !a.UsesPriority() && chainOK:
			c.at(p, "priority has no effect: cluster.autoscaler.expander %q has no priority expander; use e.g. %q", a.Expander, "priority,"+a.Expander)
		default:
			prioritised = true
		}
	}
	if a.UsesPriority() && !prioritised && chainOK && len(c.broken.Groups) == 0 {
		c.at(sel("cluster", "autoscaler", "expander"), "the priority expander needs priorities: set priority on the gce groups you prefer (a higher number wins; groups without one have priority 0)")
	}
	if a.Caps != nil && len(c.broken.Groups) == 0 {
		c.caps(a.Caps, false)
	}
}

// expanderChain checks the expander chain as the autoscaler's expander
// factory does (expander/factory/expander_factory.go: Build): known names,
// none twice, and nothing after "random", which always returns one option.
// It reports whether the chain is valid.
func (c *checker) expanderChain() bool {
	a := &c.src.Cluster.Autoscaler
	p := sel("cluster", "autoscaler", "expander")
	seen := map[string]bool{}
	names := a.Expanders()
	before := len(c.list)
	for i, n := range names {
		switch {
		case !slices.Contains(Expanders, n):
			in := ""
			if len(names) > 1 {
				in = fmt.Sprintf(" in %q", a.Expander)
			}
			if s := diag.Suggest(n, Expanders); s != "" {
				c.at(p, "unknown expander %q%s; did you mean %q?", n, in, s)
			} else {
				c.at(p, "unknown expander %q%s; known: %s", n, in, strings.Join(Expanders, ", "))
			}
		case seen[n]:
			c.at(p, "expander %q appears twice in %q: the autoscaler refuses to start", n, a.Expander)
		case n == "random" && i < len(names)-1:
			c.at(p, "expander \"random\" always returns one group, so %q after it would never be used: the autoscaler refuses to start; put random last", names[i+1])
		}
		seen[n] = true
	}
	return len(c.list) == before
}

// capResource is one cluster-wide cap: what a node of a group holds of it.
type capResource struct {
	path []cue.Selector
	what string // "Nodes", "vCPUs", "GiB of memory", "nvidia-tesla-t4 GPUs"
	r    model.Range
	// per returns what one node of g counts towards the cap, and whether
	// it is known.
	per func(g *model.NodeGroup) (float64, bool)
}

func (c *checker) capResources(caps *model.Caps) []capResource {
	base := sel("cluster", "autoscaler", "caps")
	var out []capResource
	if caps.MaxNodesTotal > 0 {
		out = append(out, capResource{join(base, "maxNodesTotal"), "Nodes", model.Range{Max: int64(caps.MaxNodesTotal)},
			func(*model.NodeGroup) (float64, bool) { return 1, true }})
	}
	if r := caps.Cores; r != nil {
		out = append(out, capResource{join(base, "cores"), "vCPUs", *r, func(g *model.NodeGroup) (float64, bool) {
			cpu, _, err := g.Shape.Resources()
			return float64(cpu), err == nil
		}})
	}
	if r := caps.MemoryGiB; r != nil {
		out = append(out, capResource{join(base, "memoryGiB"), "GiB of memory", *r, func(g *model.NodeGroup) (float64, bool) {
			_, mem, err := g.Shape.Resources()
			if err != nil {
				return 0, false
			}
			// Node capacity, as the template node declares it.
			capacity := mem - nodetemplate.KernelReserved(mem, "linux", g.OSDistribution, g.Arch)
			return float64(capacity) / (1 << 30), true
		}})
	}
	for _, t := range model.SortedKeys(caps.GPUs) {
		out = append(out, capResource{join(base, "gpus", t), t + " GPUs", *caps.GPUs[t], func(g *model.NodeGroup) (float64, bool) {
			if g.GPU == nil || g.GPU.Type != t {
				return 0, true
			}
			return float64(g.CapGPUs()), true // advertised, as --gpu-total counts
		}})
	}
	return out
}

// caps checks each cap against the groups: its min not above its max,
// the GPU types it names in use, the groups' minimum sizes under its max
// (errors); with warnings, each autoscaled group whose max it makes
// unreachable.
func (c *checker) caps(caps *model.Caps, warnings bool) {
	for _, res := range c.capResources(caps) {
		if res.r.Min > res.r.Max {
			if !warnings {
				c.at(join(res.path, "min"), "min %d is greater than max %d", res.r.Min, res.r.Max)
			}
			continue
		}
		floor, parts, used, known := c.capFloor(res)
		if strings.HasSuffix(res.what, " GPUs") && !used {
			if !warnings && c.gpusSettled() {
				c.unusedGPUCap(res)
			}
			continue
		}
		max := float64(res.r.Max)
		if floor > max {
			if !warnings {
				c.at(maxPath(res), "max %d %s is below what the cloud groups hold at their minimum size, %s (%s; min is per zone)%s: the autoscaler would never add a node",
					res.r.Max, res.what, amount(floor), strings.Join(parts, " + "), c.outsideClause(res))
			}
			continue
		}
		if !known {
			continue
		}
		if !warnings {
			c.capLeavesNoRoom(res, floor, parts)
			continue
		}
		c.unreachableMaxes(res, floor)
	}
}

// capFloor is what the cloud groups hold of res at their smallest:
// gce-static groups at their fixed size, autoscaled ones at min in every
// zone; parts names each group's share. used says whether a group has
// any of the resource, known whether every group's amount is known.
func (c *checker) capFloor(res capResource) (floor float64, parts []string, used, known bool) {
	known = true
	for _, g := range c.src.CloudGroups() {
		per, ok := res.per(g)
		if !ok {
			known = false
			continue
		}
		if per > 0 {
			used = true
		}
		if n := float64(g.MinNodes()) * per; n > 0 {
			floor += n
			parts = append(parts, fmt.Sprintf("%s %s", g.Name, amount(n)))
		}
	}
	return floor, parts, used, known
}

// unusedGPUCap reports a GPU cap of a type no cloud group has, with the
// type a slip away when there is one.
func (c *checker) unusedGPUCap(res capResource) {
	t := strings.TrimSuffix(res.what, " GPUs")
	var types []string
	for _, g := range c.src.CloudGroups() {
		if g.GPU != nil && !slices.Contains(types, g.GPU.Type) {
			types = append(types, g.GPU.Type)
		}
	}
	msg := fmt.Sprintf("no cloud node group has GPU type %s: the cap would limit nothing", t)
	if s := diag.SuggestNames(t, types); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", diag.QuotedOrList(s))
	}
	c.atKey(res.path, "%s", msg)
}

// unreachableMaxes warns of each autoscaled group whose max the cap res
// makes unreachable once the other cloud groups hold floor at their
// minimum.
func (c *checker) unreachableMaxes(res capResource, floor float64) {
	max := float64(res.r.Max)
	for _, g := range c.src.Groups() {
		if !g.Autoscaled() {
			continue
		}
		per, _ := res.per(g)
		if per == 0 || noRoom(g, per, floor, max) {
			continue // an error, reported by capLeavesNoRoom
		}
		others := floor - float64(g.MinNodes())*per
		if want := float64(g.MaxNodes()) * per; want > max-others {
			size := fmt.Sprintf("%d nodes (%d per zone × %d zone(s))", g.MaxNodes(), g.Max, len(g.Zones))
			if res.what != "Nodes" {
				size += fmt.Sprintf(", %s %s", amount(want), res.what)
			}
			unit := res.what
			if g.GPU != nil && strings.HasSuffix(res.what, " GPUs") {
				unit += fmt.Sprintf(" as the autoscaler counts them (advertised %s, %d per node of %s)", model.GPUResource, g.CapGPUs(), g.Name)
			}
			if res.what != "Nodes" {
				unit += fmt.Sprintf(", %d node(s)", int64(math.Max(max-others, 0)/per))
			}
			c.at(sel("nodeGroups", g.Name, "max"), "warning: node group %s can never reach its max of %s: %s %d leaves it at most %s %s once the other cloud groups are at their minimum (%s)%s",
				g.Name, size, capName(res.path), res.r.Max, amount(max-others), unit, amount(others), c.outsideClause(res))
		}
	}
}

// noRoom says whether a cap of max leaves group g (per of the resource
// per node, min 0) no room for a single node once the cloud groups hold
// floor at their minimum: the autoscaler can never give it a node.
func noRoom(g *model.NodeGroup, per, floor, max float64) bool {
	return g.MinNodes() == 0 && max-floor < per
}

// capLeavesNoRoom reports each autoscaled group that the cap leaves
// without room for one node: its pods could never scale it up, and the
// autoscaler says only that the cap is reached.
func (c *checker) capLeavesNoRoom(res capResource, floor float64, parts []string) {
	max := float64(res.r.Max)
	held := "nothing"
	if len(parts) > 0 {
		held = strings.Join(parts, " + ")
	}
	for _, g := range c.src.Groups() {
		if !g.Autoscaled() {
			continue
		}
		per, _ := res.per(g)
		if per == 0 || !noRoom(g, per, floor, max) {
			continue
		}
		each := ""
		if res.what != "Nodes" {
			each = fmt.Sprintf(" (%s %s each)", amount(per), res.what)
		}
		c.at(maxPath(res), "max %d %s leaves node group %s no room for a single node%s once the cloud groups hold their minimum (%s)%s: the autoscaler could never add a node to it; raise the cap or lower the group's minimums",
			res.r.Max, res.what, g.Name, each, held, c.outsideClause(res))
	}
}

// maxPath is where the cap's max was written.
func maxPath(res capResource) []cue.Selector {
	if pathLabel(res.path) == "maxNodesTotal" {
		return res.path
	}
	return join(res.path, "max")
}

func pathLabel(p []cue.Selector) string { return p[len(p)-1].Unquoted() }

// capName names a cap in a message: its path, with ".max" for a range.
func capName(p []cue.Selector) string {
	if pathLabel(p) == "maxNodesTotal" {
		return pathString(p)
	}
	return pathString(p) + ".max"
}

// amount formats a count, with up to one decimal for memory.
func amount(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

// capacityWarnings returns what is valid but surprising in the capacity
// policy: balancing turned off while a group spans zones, and group maxima
// the caps make unreachable.
func (c *checker) capacityWarnings() {
	a := &c.src.Cluster.Autoscaler
	if b := a.BalanceSimilarNodeGroups; b != nil && !*b {
		if mz := c.src.MultiZone(); len(mz) > 0 {
			var names []string
			for _, g := range mz {
				names = append(names, g.Name)
			}
			c.at(sel("cluster", "autoscaler", "balanceSimilarNodeGroups"),
				"warning: %s %s several zones, each zone its own MIG: without balancing, the expander grows one zonal MIG per scale-up and the nodes can pile up in one zone; remove the field (it defaults to true) unless you mean it",
				andList(names), map[bool]string{true: "spans", false: "span"}[len(names) == 1])
		}
	}
	if a.Caps != nil {
		c.caps(a.Caps, true)
		c.undeclaredOnprem()
	}
}

// gpusSettled reports whether every cloud group's GPUs are valid for its
// machine type: until they are, their own findings say what to fix, and a
// cap naming a GPU type no group has may name the one they will have.
func (c *checker) gpusSettled() bool {
	for _, g := range c.src.CloudGroups() {
		if g.GPU != nil && (g.Shape.Machine == nil || g.Shape.Machine.CheckGPU(g.GPU.Type, g.GPU.Count) != nil) {
			return false
		}
	}
	return true
}
