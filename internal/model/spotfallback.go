package model

import "time"

// Spot fallback. When Spot capacity never arrives and GCE reports no error
// (the VMs stay CREATING), the Cluster Autoscaler waits for each zonal MIG
// its maxNodeProvisionTime: the scale-up request expires at the request's
// time plus that (kubernetes/autoscaler cluster-autoscaler-1.35.0,
// cluster-autoscaler/clusterstate/clusterstate.go RegisterScaleUp and
// updateScaleRequests, "Scale-up timed out for node group"), the VMs are
// removed as unregistered, and the next scale-up picks another MIG of the
// same priority, the group's next zone, before any group of a lower
// priority (expander/priority keeps only the highest priority among the
// options). Measured with the real autoscaler: a stuck Spot zone was given
// up after its maxNodeProvisionTime and the next Spot zone tried, without
// falling back to the on-demand group in 23 minutes; a reported stockout
// (ZONE_RESOURCE_POOL_EXHAUSTED) backs the zone off and falls back within
// seconds. The worst case is one maxNodeProvisionTime per zone.

// SpotFallbackDelay is the longest a scale-up that the priority expander
// sends to Spot group g may wait before it falls back to a group of lower
// priority: g's zones times its maxNodeProvisionTime.
func (c *Cluster) SpotFallbackDelay(g *NodeGroup) time.Duration {
	return time.Duration(len(g.Zones)) * c.MaxNodeProvisionTime(g)
}

// PreferredSpot reports whether g is a Spot group the priority expander
// prefers to another autoscaled group: the expander chain uses priority
// and an autoscaled group of a lower priority exists to fall back to.
func (s *Source) PreferredSpot(g *NodeGroup) bool {
	if !g.Spot || !g.Autoscaled() || !s.Cluster.Autoscaler.UsesPriority() {
		return false
	}
	for _, o := range s.Groups() {
		if o != g && o.Autoscaled() && o.GroupPriority() < g.GroupPriority() {
			return true
		}
	}
	return false
}
