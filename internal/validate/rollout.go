package validate

import (
	"time"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
)

// rollout checks cluster.rollout: a batch's unready replacements within
// its surge, a drain timeout that can be waited, and exclusions that name
// cloud groups.
func (c *checker) rollout() {
	r := c.src.Cluster.Rollout
	if r.MaxUnavailable > r.Surge {
		c.at(sel("cluster", "rollout", "maxUnavailable"), "maxUnavailable %d is more than surge %d: a batch has only surge replacements to wait for", r.MaxUnavailable, r.Surge)
	}
	if r.DrainTimeout.Duration() < 30*time.Second {
		c.at(sel("cluster", "rollout", "drainTimeout"), "drainTimeout %s is under 30s, the termination grace period pods get by default to leave", r.DrainTimeout)
	}
	cloud := c.src.CloudGroupNames()
	seen := map[string]bool{}
	for i, name := range r.Exclude {
		p := sel("cluster", "rollout", "exclude", i)
		g, ok := c.src.NodeGroups[name]
		switch {
		case seen[name]:
			c.at(p, "node group %q is excluded twice", name)
		case !ok:
			if s := diag.SuggestNames(name, cloud); len(s) > 0 {
				c.at(p, "no node group %q; did you mean %s?", name, diag.QuotedOrList(s))
			} else {
				c.at(p, "no node group %q", name)
			}
		case !g.Cloud():
			c.at(p, "node group %q is of kind %s: nodegen rollout replaces cloud nodes only", name, model.KindOnPrem)
		}
		seen[name] = true
	}
}
