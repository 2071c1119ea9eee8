package validate

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
)

// fleetNetworks reports what two clusters of a fleet declare about one
// VPC network, or about Google's addresses, that cannot both be true:
//   - subnetwork ranges that overlap in one network: Compute Engine keeps
//     every subnetwork's range of a network disjoint from the others
//     (Compute Engine API, subnetworks, ipCidrRange: "Ranges must be
//     unique and non-overlapping within a network"), so one of the
//     declared ranges is not its subnetwork's, and the VPN and the
//     firewall rules would be rendered for the wrong addresses;
//   - one subnetwork (a network's subnetwork of one name in one region)
//     declared with two ranges: a subnetwork has one primary range;
//   - an HA VPN interface address in two clusters: each cluster renders
//     its own HA VPN gateway, and Google gives every gateway interface an
//     address of its own, so the on-prem gateways of one cluster would
//     dial the other's;
//   - an on-prem VPN gateway (its address) in two clusters: each cluster's
//     install.sh installs its files under the same names on the host
//     (/etc/swanctl/conf.d/tunnel0.conf, the vpn-tunnel0 interface with
//     its if_id, /etc/frr/frr.conf, the MSS clamp), so the second install
//     replaces the first cluster's tunnels and BGP.
func fleetNetworks(l *source.Loaded) diag.List {
	var list diag.List
	type subnet struct {
		m      *source.Member
		key    string // network project, network, region, subnetwork
		prefix netip.Prefix
	}
	byNetwork := map[string][]subnet{}
	vpnAddrs := map[netip.Addr][]vpnUse{}
	peerAddrs := map[netip.Addr][]vpnUse{}
	for _, m := range l.Members {
		if m.Broken.Cluster {
			continue
		}
		cl := &m.Source.Cluster
		n := cl.GCP.Network
		if n == nil {
			continue
		}
		if pr, err := netip.ParsePrefix(n.SubnetworkRange); err == nil && pr.Masked() == pr {
			network := n.NetworkProject(cl) + "/" + n.Name
			byNetwork[network] = append(byNetwork[network], subnet{m, network + "/" + cl.GCP.Region + "/" + n.Subnetwork, pr})
		}
		if n.VPN != nil {
			for i, a := range n.VPN.HAVPNAddresses {
				if ip, err := netip.ParseAddr(a); err == nil {
					vpnAddrs[ip] = append(vpnAddrs[ip], vpnUse{m, i})
				}
			}
			for i, g := range n.VPN.PeerGateways {
				if ip, err := netip.ParseAddr(g.Address); err == nil {
					peerAddrs[ip] = append(peerAddrs[ip], vpnUse{m, i})
				}
			}
		}
	}
	rangePath := sel("cluster", "gcp", "network", "subnetworkRange")
	for _, network := range model.SortedKeys(byNetwork) {
		subs := byNetwork[network]
		slices.SortFunc(subs, func(a, b subnet) int {
			return cmp.Or(a.prefix.Addr().Compare(b.prefix.Addr()), cmp.Compare(a.prefix.Bits(), b.prefix.Bits()), strings.Compare(a.m.Key, b.m.Key))
		})
		// Sorted by first address, a range overlaps a later one exactly
		// when it holds that one's first address: compare each with those
		// that follow while they start inside it.
		for i, a := range subs {
			for _, b := range subs[i+1:] {
				if !a.prefix.Contains(b.prefix.Addr()) {
					break
				}
				if a.key == b.key {
					continue // one subnetwork: below
				}
				for _, x := range [][2]subnet{{a, b}, {b, a}} {
					c := &checker{pos: x[0].m}
					other := &x[1].m.Source.Cluster
					c.at(rangePath, "%s overlaps %s, the range of cluster %s's subnetwork %s in the same network %s: Compute Engine keeps a network's subnetwork ranges disjoint (Compute Engine API, subnetworks, ipCidrRange), so one of the two is not its subnetwork's range", x[0].prefix, x[1].prefix, other.Name, other.GCP.Network.Subnetwork, network)
					list = append(list, c.list...)
				}
			}
		}
		// One subnetwork in several clusters (they share it): one range.
		for _, a := range subs {
			for _, b := range subs {
				if a.key != b.key || a.prefix == b.prefix {
					continue
				}
				c := &checker{pos: a.m}
				c.at(rangePath, "subnetwork %s of network %s is also cluster %s's, with the range %s: a subnetwork has one primary range; state the one it has in both clusters", a.m.Source.Cluster.GCP.Network.Subnetwork, network, b.m.Source.Cluster.Name, b.prefix)
				list = append(list, c.list...)
				break
			}
		}
	}
	for _, sh := range sharedAddrs(vpnAddrs) {
		// (One cluster's own interfaces sharing one are its VPN checks'.)
		c := &checker{pos: sh.use.m}
		c.at(sel("cluster", "gcp", "network", "vpn", "haVpnAddresses", sh.use.i), "%s is also an HA VPN interface address of cluster %s: each cluster has its own HA VPN gateway, and Google gives each gateway's interfaces addresses of their own (out/terraform's output %s of this cluster's apply)", sh.addr, andList(sh.others), layout.VPNAddressesOutput)
		list = append(list, c.list...)
	}
	for _, sh := range sharedAddrs(peerAddrs) {
		c := &checker{pos: sh.use.m}
		c.at(sel("cluster", "gcp", "network", "vpn", "peerGateways", sh.use.i, "address"), "%s is also an on-prem VPN gateway of cluster %s: each cluster's install.sh installs its tunnels, FRR's configuration and the MSS clamp under the same names on the gateway host (/etc/swanctl/conf.d/tunnel0.conf, vpn-tunnel0, /etc/frr/frr.conf), so one would replace the other's; give each cluster gateways of its own", sh.addr, andList(sh.others))
		list = append(list, c.list...)
	}
	return list
}

// vpnUse is an address's place in a member's VPN: the index of the list
// entry that holds it.
type vpnUse struct {
	m *source.Member
	i int
}

// sharedUse is one use of an address that other clusters of the fleet
// use too, with those clusters' names.
type sharedUse struct {
	addr   netip.Addr
	use    vpnUse
	others []string
}

// sharedAddrs returns, in address order, each use of an address that
// another cluster of the fleet uses too.
func sharedAddrs(uses map[netip.Addr][]vpnUse) []sharedUse {
	var out []sharedUse
	for _, a := range slices.SortedFunc(maps.Keys(uses), netip.Addr.Compare) {
		for i, u := range uses[a] {
			var others []string
			for j, o := range uses[a] {
				if j != i && o.m != u.m {
					others = append(others, o.m.Source.Cluster.Name)
				}
			}
			if len(others) > 0 {
				out = append(out, sharedUse{a, u, others})
			}
		}
	}
	return out
}
