package validate

import (
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
