package validate

import (
	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// joinDeadline checks that the group's effective maxNodeProvisionTime
// leaves its join script a deadline (model.Cluster.JoinDeadline).
func (c *checker) joinDeadline(g *model.NodeGroup, base []cue.Selector) {
	if c.broken.Cluster {
		return
	}
	if _, err := c.src.Cluster.JoinDeadline(g); err != nil {
		p := sel("cluster", "autoscaler", "maxNodeProvisionTime")
		if g.Autoscaled() && !g.Autoscaling.MaxNodeProvisionTime.IsZero() {
			p = join(base, "autoscaling", "maxNodeProvisionTime")
		}
		c.at(p, "node group %q: %v", g.Name, err)
	}
}
