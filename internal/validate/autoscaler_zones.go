package validate

import "github.com/nodegen/nodegen/internal/model"

// autoscalerZones refuses an autoscaler group in one zone, unless
// cluster.autoscaler.singleZone says so on purpose: a zone outage, or the
// loss of its one VM, stops all scaling. With two zones or more the MIGs
// (one per zone, autohealed) keep a node, and with it a replica, in each.
func (c *checker) autoscalerZones() {
	a := c.src.Cluster.Autoscaler
	g, ok := c.src.NodeGroups[a.NodeGroup]
	if !ok || c.broken.Groups[a.NodeGroup] || g.Kind != model.KindGCEStatic {
		return // the nodeGroup's own finding says what is wrong
	}
	switch {
	case len(g.Zones) < 2 && !a.SingleZone:
		c.at(sel("nodeGroups", g.Name, "zones"),
			"the autoscaler's node group %q has one zone: a zone outage stops all scaling; give it two zones or more (one node and one autoscaler replica in each), or set cluster.autoscaler.singleZone: true to accept that", g.Name)
	case len(g.Zones) >= 2 && a.SingleZone:
		c.at(sel("cluster", "autoscaler", "singleZone"),
			"the autoscaler's node group %q has %d zones: singleZone: true says it has one; remove it", g.Name, len(g.Zones))
	}
}
