package model

// Locality is where an on-prem group's nodes are: the region and zone
// their topology labels carry.
type Locality struct {
	Region string `json:"region"`
	Zone   string `json:"zone"`
}

// resolveLocality adds an on-prem group's locality to the labels its
// nodes carry (topology.kubernetes.io/region and zone). Cloud nodes get
// theirs at join (BootLabels).
func (g *NodeGroup) resolveLocality() {
	if g.Kind != KindOnPrem || g.Locality == nil {
		return
	}
	g.NodeLabels[RegionLabel] = g.Locality.Region
	g.NodeLabels[ZoneLabel] = g.Locality.Zone
}
