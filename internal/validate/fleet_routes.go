package validate

import (
	"net/netip"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/source"
)

// fleetOnpremRoutes reports an on-prem prefix of one cluster's VPN that
// overlaps another cluster's subnetwork range in the same VPC network.
// The cloud nodes reach the on-prem side through the routes the VPC
// learns from the cluster's Cloud Router (custom dynamic routes), and a
// VPC evaluates its subnet routes before any custom route (Google, VPC,
// "Routes", routing order: policy-based routes, then subnet routes, then
// the most specific custom routes), so the VPC delivers the addresses of
// the overlap to the other cluster's subnetwork, never into this
// cluster's tunnels. (The cluster's own subnetwork range is checked
// against its on-prem prefixes with its VPN.)
func fleetOnpremRoutes(l *source.Loaded) diag.List {
	var list diag.List
	for _, m := range l.Members {
		if m.Broken.All || m.Broken.Cluster {
			continue
		}
		cl := &m.Source.Cluster
		n := cl.GCP.Network
		if n == nil || n.VPN == nil {
			continue
		}
		p := sel("cluster", "gcp", "network", "onpremRanges")
		if len(n.VPN.Advertise.Onprem) > 0 {
			p = sel("cluster", "gcp", "network", "vpn", "advertise", "onprem")
		}
		network := n.NetworkProject(cl) + "/" + n.Name
		for i, s := range n.VPN.OnpremPrefixes(n) {
			onprem, err := netip.ParsePrefix(s)
			if err != nil {
				continue // reported with the VPN
			}
			for _, o := range l.Members {
				if o == m || o.Broken.All || o.Broken.Cluster {
					continue
				}
				ocl := &o.Source.Cluster
				on := ocl.GCP.Network
				if on == nil || on.NetworkProject(ocl)+"/"+on.Name != network {
					continue
				}
				sub, err := netip.ParsePrefix(on.SubnetworkRange)
				if err != nil || !sub.Overlaps(onprem.Masked()) {
					continue
				}
				c := &checker{pos: m}
				c.at(join(p, i), "%s, the on-prem side of this cluster's VPN, overlaps %s, the range of cluster %s's subnetwork %s in the same network %s: the network takes its subnet routes before any route the Cloud Router learns (Google, VPC, \"Routes\", routing order), so this cluster's nodes would reach those addresses in cluster %s's subnetwork, never through the tunnels; keep the on-prem prefixes out of every subnetwork range of the network",
					onprem, sub, ocl.Name, on.Subnetwork, network, ocl.Name)
				list = append(list, c.list...)
			}
		}
	}
	return list
}
