package validate

import "time"

// spotFallback enforces cluster.autoscaler.maxSpotFallbackDelay: a Spot
// group the priority expander prefers may make a scale-up wait its zones
// times its maxNodeProvisionTime before the autoscaler falls back
// (model.SpotFallbackDelay); that may not exceed the bound. The knobs are
// the group's autoscaling.maxNodeProvisionTime and its zones.
func (c *checker) spotFallback() {
	bound := c.src.Cluster.Autoscaler.MaxSpotFallbackDelay
	if bound == "" {
		return
	}
	p := sel("cluster", "autoscaler", "maxSpotFallbackDelay")
	max, err := time.ParseDuration(bound)
	if err != nil || max <= 0 {
		c.at(p, "%q is not a positive duration", bound)
		return
	}
	for _, g := range c.src.Groups() {
		if c.broken.Groups[g.Name] || !c.src.PreferredSpot(g) {
			continue
		}
		worst, err := c.src.Cluster.SpotFallbackDelay(g)
		if err != nil || worst <= max {
			continue // a bad maxNodeProvisionTime has its own finding
		}
		mnpt := worst / time.Duration(len(g.Zones))
		c.at(sel("nodeGroups", g.Name, "spot"),
			"Spot group %q may make a scale-up wait %s before the autoscaler falls back to a lower priority group (%d zones × maxNodeProvisionTime %s, when Spot VMs never arrive and GCE reports no error), over cluster.autoscaler.maxSpotFallbackDelay %s: lower the group's autoscaling.maxNodeProvisionTime to %s or less, or give it fewer zones",
			g.Name, worst, len(g.Zones), mnpt, max, max/time.Duration(len(g.Zones)))
	}
}
