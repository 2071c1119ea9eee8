package validate

import (
	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// nodeLifecycle checks the node garbage collector's grace period: a Node
// that is NotReady for less is more often rebooting than stuck.
func (c *checker) nodeLifecycle() {
	p := sel("cluster", "nodeLifecycle", "notReadyGracePeriod")
	v := c.src.Cluster.NodeLifecycle.NotReadyGracePeriod
	if v.Duration() < model.MinNotReadyGracePeriod {
		c.at(p, "%s is shorter than %s: a node that is not Ready for less is more often rebooting than stuck", v, model.MinNotReadyGracePeriod)
	}
}

// autohealing checks a gce-static group's reboot time: its health check
// must be able to wait it out (model.MaxRebootTime).
func (c *checker) autohealing(g *model.NodeGroup, base []cue.Selector) {
	if g.Autohealing == nil || g.Autohealing.RebootTime.IsZero() {
		return
	}
	p := join(base, "autohealing", "rebootTime")
	switch r := g.Autohealing.RebootTime; {
	case r.Duration() <= 0:
		c.at(p, "rebootTime %s is not a length of time: a reboot takes some", r)
	case r.Duration() > model.MaxRebootTime:
		c.at(p, "rebootTime %s is over %s, the longest a health check waits out (9 intervals of 300 s, the Compute API's longest, before the 10th failure): the MIG would recreate a VM still rebooting", r, model.FormatDuration(model.MaxRebootTime))
	}
}
