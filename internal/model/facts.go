package model

import (
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Facts of a source that several artifacts, the validation, the
// verification, explain and drift all need. Each is decided here once;
// nothing else re-derives it.

// MinNotReadyGracePeriod is the shortest cluster.nodeLifecycle.notReadyGracePeriod.
const MinNotReadyGracePeriod = 5 * time.Minute

// CloudGroups returns the groups that run on GCE (gce and gce-static),
// sorted by name.
func (s *Source) CloudGroups() []*NodeGroup {
	var out []*NodeGroup
	for _, g := range s.Groups() {
		if g.Cloud() {
			out = append(out, g)
		}
	}
	return out
}

// CloudGroupNames returns the names of the cloud groups, sorted.
func (s *Source) CloudGroupNames() []string {
	var out []string
	for _, g := range s.CloudGroups() {
		out = append(out, g.Name)
	}
	return out
}

// GPUGroups returns the cloud groups with GPUs and a startup taint, sorted.
func (s *Source) GPUGroups() []*NodeGroup {
	var out []*NodeGroup
	for _, g := range s.CloudGroups() {
		if g.GPU != nil && g.StartupTaint != nil {
			out = append(out, g)
		}
	}
	return out
}

// MIG is one zonal MIG the autoscaler sizes.
type MIG struct {
	Group    *NodeGroup
	Zone     string
	URL      string
	Min, Max int
}

// AutoscaledMIGs returns the MIGs of every autoscaled group, by group then zone.
func (s *Source) AutoscaledMIGs() []MIG {
	var out []MIG
	for _, g := range s.Groups() {
		out = append(out, s.GroupMIGs(g)...)
	}
	return out
}

// GroupMIGs returns the MIGs of group g, by zone, none when g is not
// autoscaled: what AutoscaledMIGs holds of g, without the other groups'.
func (s *Source) GroupMIGs(g *NodeGroup) []MIG {
	if !g.Autoscaled() {
		return nil
	}
	out := make([]MIG, 0, len(g.Zones))
	for _, z := range g.Zones {
		out = append(out, MIG{Group: g, Zone: z, URL: s.Cluster.MIGURL(g, z), Min: g.Min, Max: g.Max})
	}
	return out
}

// ExtraStartupTaints are the cloud groups' startup-taint keys that the
// autoscaler does not recognise by prefix: each needs --startup-taint.
func (s *Source) ExtraStartupTaints() []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range s.CloudGroups() {
		if g.StartupTaint == nil || IsStartupTaint(g.StartupTaint.Key) || seen[g.StartupTaint.Key] {
			continue
		}
		seen[g.StartupTaint.Key] = true
		out = append(out, g.StartupTaint.Key)
	}
	return out
}

// TotalReserved adds kubeReserved and systemReserved per resource: the
// autoscaler takes both from kube-env's kube_reserved.
func (g *NodeGroup) TotalReserved() (map[string]string, error) {
	sum := map[string]resource.Quantity{}
	for _, m := range []map[string]string{g.Kubelet.KubeReserved, g.Kubelet.SystemReserved} {
		for k, v := range m {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return nil, fmt.Errorf("kubelet reservation %s=%q: %w", k, v, err)
			}
			total := sum[k]
			total.Add(q)
			sum[k] = total
		}
	}
	out := make(map[string]string, len(sum))
	for k, q := range sum {
		out[k] = q.String()
	}
	return out, nil
}

// BootLabels are the labels the join adds at boot to a node of the cloud
// group g in zone, beyond its NodeLabels: the zone, region and
// instance-type labels, which the autoscaler adds to its template nodes
// itself (so kube-env does not carry them).
func (c *Cluster) BootLabels(g *NodeGroup, zone string) map[string]string {
	return map[string]string{ZoneLabel: zone, RegionLabel: c.GCP.Region, InstanceTypeLabel: g.MachineType}
}

// JoinLabels are all the labels a node of the cloud group g registers
// with in zone: its NodeLabels and its BootLabels.
func (c *Cluster) JoinLabels(g *NodeGroup, zone string) map[string]string {
	out := make(map[string]string, len(g.NodeLabels)+3)
	maps.Copy(out, g.NodeLabels)
	maps.Copy(out, c.BootLabels(g, zone))
	return out
}
