package model

import (
	"strconv"
	"strings"
)

// AutoscalerConditionCap is the longest AutoscalerCondition nodegen
// renders, in characters: vet refuses a source whose condition is longer (too many
// groups or zones, or long names) rather than fall back to a shorter
// condition on the cluster's name prefix, which would also match every
// resource of a cluster whose name starts with this one's and "-"
// (cluster "<name>-2" among them).
const AutoscalerConditionCap = 8000

// AutoscalerCondition is the IAM condition (CEL) of the autoscaler's
// scoped Compute binding: the resource is one of the source's autoscaled
// MIGs (by name), an instance of one of its cloud groups (the MIG's base
// instance name and "-", in one of the group's zones), or an instance
// template of an autoscaled group (its name prefix). Resource names are
// in the form of IAM's resource attributes for Compute Engine
// (projects/<project>/zones/<zone>/instances/<name>,
// .../instanceGroupManagers/<name>, projects/<project>/global/instanceTemplates/<name>).
// vet refuses a source for which it is longer than
// AutoscalerConditionCap, unless the source sets
// cluster.gcp.iamConditionByClusterPrefix: then it falls back to the
// cluster's name followed by "-" in each zone of its cloud groups, which
// also matches the resources of a cluster whose name starts with this
// one's and "-", but for the MIGs of the autoscaler's own group, which
// nothing on that node may resize (the prefix term of a zone where that
// group has a MIG excludes it by name).
func (s *Source) AutoscalerCondition() string {
	c := &s.Cluster
	p := "projects/" + c.GCP.Project
	var terms []string
	seen := map[string]bool{}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	for _, m := range s.AutoscaledMIGs() {
		add(`resource.name == ` + strconv.Quote(p+"/zones/"+m.Zone+"/instanceGroupManagers/"+c.MIGName(m.Group, m.Zone)))
	}
	for _, g := range s.CloudGroups() {
		for _, z := range g.Zones {
			add(`resource.name.startsWith(` + strconv.Quote(p+"/zones/"+z+"/instances/"+c.BaseInstanceName(g)+"-") + `)`)
		}
	}
	for _, g := range s.CloudGroups() {
		if g.Autoscaled() {
			add(`resource.name.startsWith(` + strconv.Quote(p+"/global/instanceTemplates/"+c.TemplatePrefix(g)) + `)`)
		}
	}
	expr := strings.Join(terms, " || ")
	if len(expr) <= AutoscalerConditionCap || !c.GCP.IAMConditionByClusterPrefix {
		return expr
	}
	terms, seen = nil, map[string]bool{}
	home := map[string]string{} // zone -> the autoscaler group's MIG there
	if g := s.NodeGroups[c.Autoscaler.NodeGroup]; g != nil {
		for _, z := range g.Zones {
			home[z] = p + "/zones/" + z + "/instanceGroupManagers/" + c.MIGName(g, z)
		}
	}
	for _, g := range s.CloudGroups() {
		for _, z := range g.Zones {
			mig := `resource.name.startsWith(` + strconv.Quote(p+"/zones/"+z+"/instanceGroupManagers/"+c.Name+"-") + `)`
			if h, ok := home[z]; ok {
				mig = `(` + mig + ` && resource.name != ` + strconv.Quote(h) + `)`
			}
			add(mig)
			add(`resource.name.startsWith(` + strconv.Quote(p+"/zones/"+z+"/instances/"+c.Name+"-") + `)`)
		}
	}
	add(`resource.name.startsWith(` + strconv.Quote(p+"/global/instanceTemplates/"+c.Name+"-") + `)`)
	return strings.Join(terms, " || ")
}
