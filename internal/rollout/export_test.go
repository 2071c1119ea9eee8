package rollout_test

import (
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/rollout"
)

func rolloutReplacement(c *model.Cluster, g *model.NodeGroup, old, rev string) string {
	return rollout.ReplacementName(c, g, old, rev)
}
