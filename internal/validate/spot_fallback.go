package validate

import (
	"time"

	"cuelang.org/go/cue"
)

// spotFallback enforces cluster.autoscaler.maxSpotFallbackDelay: a Spot
// group the priority expander prefers may make a scale-up wait its zones
// times its maxNodeProvisionTime before the autoscaler falls back
// (model.SpotFallbackDelay); that may not exceed the bound. The knobs are
// the group's autoscaling.maxNodeProvisionTime and its zones.
func (c *checker) spotFallback() {
	bound := c.src.Cluster.Autoscaler.MaxSpotFallbackDelay
	if bound.IsZero() {
		return
	}
	p := sel("cluster", "autoscaler", "maxSpotFallbackDelay")
	max := bound.Duration()
	if max <= 0 {
		c.at(p, "%q is not a positive duration", bound)
		return
	}
	c.spotFallbackNoEffect(p)
	for _, g := range c.src.Groups() {
		if c.broken.Groups[g.Name] || !c.src.PreferredSpot(g) {
			continue
		}
		worst := c.src.Cluster.SpotFallbackDelay(g)
		if worst <= max {
			continue
		}
		mnpt := worst / time.Duration(len(g.Zones))
		c.at(sel("nodeGroups", g.Name, "spot"),
			"Spot group %q may make a scale-up wait %s before the autoscaler falls back to a lower priority group (%d zones × maxNodeProvisionTime %s, when Spot VMs never arrive and GCE reports no error), over cluster.autoscaler.maxSpotFallbackDelay %s: lower the group's autoscaling.maxNodeProvisionTime to %s or less, or give it fewer zones",
			g.Name, worst, len(g.Zones), mnpt, max, max/time.Duration(len(g.Zones)))
	}
}

// spotFallbackNoEffect refuses a maxSpotFallbackDelay that bounds nothing,
// at p: it applies only to a Spot group the priority expander prefers to a
// lower-priority autoscaled group (model.Source.PreferredSpot). A setting
// without effect would be read as a promise the source does not keep.
func (c *checker) spotFallbackNoEffect(p []cue.Selector) {
	spot := 0
	for _, g := range c.src.Groups() {
		if c.broken.Groups[g.Name] {
			return // whether it is preferred cannot be told
		}
		if c.src.PreferredSpot(g) {
			return
		}
		if g.Spot && g.Autoscaled() {
			spot++
		}
	}
	why := "no autoscaled node group is Spot"
	if spot > 0 {
		why = "no Spot group is preferred by the priority expander over a lower-priority autoscaled group, so none waits for Spot capacity before a fallback"
	}
	c.at(p, "maxSpotFallbackDelay has no effect: %s; remove it (set it again with the Spot group it is to bound)", why)
}
