package model

import (
	"slices"
	"strings"
)

// Caps are the autoscaler's cluster-wide limits.
type Caps struct {
	MaxNodesTotal int               `json:"maxNodesTotal,omitempty"`
	Cores         *Range            `json:"cores,omitempty"`
	MemoryGiB     *Range            `json:"memoryGiB,omitempty"`
	GPUs          map[string]*Range `json:"gpus,omitempty"`
}

// Range is a cluster-wide minimum and maximum.
type Range struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// PriorityExpander is the name of the autoscaler's priority expander.
const PriorityExpander = "priority"

// Expanders returns the autoscaler's expander chain, in order.
func (a *Autoscaler) Expanders() []string { return strings.Split(a.Expander, ",") }

// UsesPriority reports whether the expander chain contains the priority
// expander.
func (a *Autoscaler) UsesPriority() bool { return slices.Contains(a.Expanders(), PriorityExpander) }

// GroupPriority is the group's priority for the priority expander: its
// priority, or 0.
func (g *NodeGroup) GroupPriority() int {
	if g.Priority == nil {
		return 0
	}
	return *g.Priority
}

// MultiZone reports whether an autoscaled group of the source has more
// than one zone, i.e. more than one MIG.
func (s *Source) MultiZone() []*NodeGroup {
	var out []*NodeGroup
	for _, g := range s.Groups() {
		if g.Autoscaled() && len(g.Zones) > 1 {
			out = append(out, g)
		}
	}
	return out
}

// BalanceSimilarNodeGroups is the autoscaler's --balance-similar-node-groups:
// the source's value, or true exactly when an autoscaled group spans
// several zones.
func (s *Source) BalanceSimilarNodeGroups() bool {
	if b := s.Cluster.Autoscaler.BalanceSimilarNodeGroups; b != nil {
		return *b
	}
	return len(s.MultiZone()) > 0
}

// MinNodes and MaxNodes are the group's smallest and largest node count
// over all its zones (min and max are per zonal MIG).
func (g *NodeGroup) MinNodes() int { return g.Min * len(g.Zones) }

// MaxNodes: see MinNodes.
func (g *NodeGroup) MaxNodes() int { return g.Max * len(g.Zones) }
