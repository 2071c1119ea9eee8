package explain

import (
	"fmt"
	"time"

	"github.com/nodegen/nodegen/internal/model"
)

// SpotFallback is the worst-case wait before the autoscaler falls back
// from a Spot group the priority expander prefers (model.SpotFallbackDelay).
type SpotFallback struct {
	Group string `json:"group"`
	Zones int    `json:"zones"`
	// MaxNodeProvisionTime is the group's, as a Go duration.
	MaxNodeProvisionTime string `json:"maxNodeProvisionTime"`
	// Worst is Zones × MaxNodeProvisionTime, as a Go duration.
	Worst string `json:"worst"`
	// Bound is cluster.autoscaler.maxSpotFallbackDelay, if set.
	Bound string `json:"bound,omitempty"`
}

// spotFallbacks lists the source's preferred Spot groups, by name.
func spotFallbacks(src *model.Source) []SpotFallback {
	var out []SpotFallback
	for _, g := range src.Groups() {
		if !src.PreferredSpot(g) {
			continue
		}
		worst := src.Cluster.SpotFallbackDelay(g)
		out = append(out, SpotFallback{
			Group: g.Name, Zones: len(g.Zones),
			MaxNodeProvisionTime: (worst / time.Duration(len(g.Zones))).String(),
			Worst:                worst.String(),
			Bound:                src.Cluster.Autoscaler.MaxSpotFallbackDelay.String(),
		})
	}
	return out
}

// String is the line explain prints.
func (s SpotFallback) String() string {
	line := fmt.Sprintf("%s: if Spot VMs never arrive (and GCE reports no error), a scale-up waits up to %s before the autoscaler falls back to a lower priority group (%d zones × maxNodeProvisionTime %s)",
		s.Group, s.Worst, s.Zones, s.MaxNodeProvisionTime)
	if s.Bound != "" {
		line += "; bound " + s.Bound
	}
	return line
}
