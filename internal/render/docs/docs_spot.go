package docs

import (
	"time"

	"github.com/nodegen/nodegen/internal/model"
)

// spotFallback says how long a scale-up the priority expander sends to
// Spot group g may wait before the autoscaler falls back, when Spot VMs
// never arrive and GCE reports no error (model.SpotFallbackDelay), and the
// bound the source sets.
func (d *docWriter) spotFallback(g *model.NodeGroup) {
	if !d.src.PreferredSpot(g) {
		return
	}
	worst := d.src.Cluster.SpotFallbackDelay(g)
	d.p("\nWorst-case fallback: the priority expander prefers this group; when Spot VMs never arrive and GCE reports no error, the autoscaler waits maxNodeProvisionTime (%s) in each of its %d zones before it falls back to a lower priority group: up to **%s**. A reported stockout falls back within seconds.",
		worst/time.Duration(len(g.Zones)), len(g.Zones), worst)
	if b := d.src.Cluster.Autoscaler.MaxSpotFallbackDelay; !b.IsZero() {
		d.p(" `cluster.autoscaler.maxSpotFallbackDelay` bounds it at %s.", b)
	} else {
		d.p(" Bound it with `cluster.autoscaler.maxSpotFallbackDelay`; lower the group's `autoscaling.maxNodeProvisionTime` or its zones to shorten it.")
	}
	d.p("\n")
}
