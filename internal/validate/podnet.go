package validate

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// podNetwork checks cluster.podNetwork: an encapsulation that carries pod
// packets with what nodegen renders, the firewall rules it needs, a pod
// CIDR apart from every other range of the source, and a pod MTU nodegen
// can compute and the source does not exceed.
func (c *checker) podNetwork() {
	pn := c.src.Cluster.PodNetwork
	if pn == nil {
		return
	}
	p := sel("cluster", "podNetwork")
	n := c.src.Cluster.GCP.Network
	if n == nil {
		c.atKey(p, "a podNetwork needs cluster.gcp.network: the pod MTU comes from the VPC's MTU, the on-prem nodes' and the VPN's, and the encapsulation needs its firewall rules")
		return
	}

	// The encapsulation. Only one that encapsulates every pod packet
	// between nodes works: the VPC drops a packet whose source is a pod
	// address (a VM sends only from its own addresses unless it may
	// forward, google_compute_instance_template's can_ip_forward, which
	// nodegen does not set) and has no route to a pod range, which
	// nodegen does not make (Google, VPC "Routes": a packet is delivered
	// to a VM only by a route or the subnet's own range).
	switch pn.Encapsulation {
	case model.EncapVXLAN:
		if !slices.Contains(n.CNIPorts, "udp/4789") {
			c.at(join(p, "encapsulation"), "VXLAN needs cluster.gcp.network.cniPorts to hold \"udp/4789\" (Calico's VXLAN port): without it the firewall drops every pod packet to a cloud node")
		}
	case model.EncapIPIP:
		// IP in IP is protocol 4, which only an "ipip" rule admits; and
		// its routes to other nodes' pod blocks come from BIRD over BGP
		// (tigera-operator v1.43.0, the Installation CRD's
		// calicoNetwork.clusterRoutingMode: Felix programs the routes only
		// for VXLAN pools), so TCP 179 too.
		var missing []string
		if !slices.Contains(n.CNIPorts, "ipip") {
			missing = append(missing, "\"ipip\" (IP in IP is protocol 4, which no tcp or udp rule admits)")
		}
		if !slices.Contains(n.CNIPorts, "tcp/179") {
			missing = append(missing, "\"tcp/179\" (Calico's BGP, which programs IP in IP's routes)")
		}
		if len(missing) > 0 {
			c.at(join(p, "encapsulation"), "IPIP needs cluster.gcp.network.cniPorts to hold %s: without it the firewall drops the pod traffic to the cloud nodes; add it, or use \"VXLAN\"", strings.Join(missing, " and "))
		}
	case "VXLANCrossSubnet", "IPIPCrossSubnet", "None":
		which := "between nodes of one subnetwork"
		if pn.Encapsulation == "None" {
			which = "between any two nodes"
		}
		c.at(join(p, "encapsulation"), "%q sends pod packets %s unencapsulated, which the VPC drops: nodegen makes no routes to pod ranges and lets no VM forward; use \"VXLAN\" (or \"IPIP\"), which encapsulate every pod packet between nodes", pn.Encapsulation, which)
	default:
		c.at(join(p, "encapsulation"), "%q is not an encapsulation nodegen renders: use \"VXLAN\" (UDP 4789) or \"IPIP\" (protocol 4)", pn.Encapsulation)
	}

	// The pod CIDR against every other range.
	pod, ok := c.cidr(join(p, "podCIDR"), pn.PodCIDR)
	svc, svcOK := c.cidr(join(p, "serviceCIDR"), pn.ServiceCIDR)
	if ok {
		type other struct {
			what   string
			ranges []string
		}
		others := []other{
			{"the on-prem ranges (cluster.gcp.network.onpremRanges)", n.OnpremRanges},
			{"the nodes' subnetwork (cluster.gcp.network.subnetworkRange)", nonEmpty(n.SubnetworkRange)},
		}
		if svcOK {
			others = append(others, other{"the Services' range (serviceCIDR)", []string{svc.String()}})
		}
		if v := n.VPN; v != nil {
			var inside []string
			for _, t := range v.Tunnels {
				inside = append(inside, t.InsideRange)
			}
			var ends []string
			for _, g := range v.PeerGateways {
				ends = append(ends, g.Address+"/32")
			}
			for _, a := range v.HAVPNAddresses {
				ends = append(ends, a+"/32")
			}
			others = append(others,
				other{"the VPN tunnels' inside ranges", inside},
				other{"the VPN's ends (peer gateways, HA VPN interfaces)", ends},
				other{"what the on-prem gateways advertise (vpn.advertise.onprem)", v.Advertise.Onprem},
				other{"what the Cloud Router advertises (vpn.advertise.cloud)", v.Advertise.Cloud})
		}
		for _, o := range others {
			for _, s := range o.ranges {
				r, err := netip.ParsePrefix(s)
				if err == nil && r.Masked().Overlaps(pod) {
					c.at(join(p, "podCIDR"), "%s overlaps %s of %s: pod addresses would be routed as that range's, and its as pods'; give the pods a range of their own", pod, r.Masked(), o.what)
				}
			}
		}
	}

	// The pod MTU.
	m := c.src.Cluster.PodMTU()
	if len(m.Unknown) > 0 {
		// The encapsulation and the proposal have their own findings.
		return
	}
	if pn.MTU > m.Computed {
		c.at(join(p, "mtu"), "%d is above the pod MTU the paths carry, %s: larger pod packets would be lost across the VPN; lower it, or leave it unset", pn.MTU, m.Derivation())
	}
}

// cidr parses a CIDR at path, reporting one that is not one or has host
// bits set.
func (c *checker) cidr(path []cue.Selector, s string) (netip.Prefix, bool) {
	r, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		c.at(path, "%q is not a CIDR: %v", s, err)
		return netip.Prefix{}, false
	case r.Masked() != r:
		c.at(path, "%s has host bits set: the range is %s", s, r.Masked())
		return netip.Prefix{}, false
	}
	return r, true
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// espPayloadMTU refuses an ESP proposal whose payload MTU Google's table
// does not give: nodegen could set neither the gateways' interfaces nor
// the pod MTU.
func (c *checker) espPayloadMTU(v *model.VPN, path []cue.Selector) {
	if _, ok := model.ESPPayloadMTU(v.ESPProposal, model.IPv4, false); !ok {
		c.at(path, "%q: Cloud VPN's payload MTU table (Google, Cloud VPN \"MTU considerations\") has no entry for its integrity %s, so nodegen cannot set the tunnels' MTU: use AES-GCM (aes256gcm16) or an AES-CBC cipher with sha256 or sha512", v.ESPProposal, fmt.Sprintf("%q", model.ESPAuth(v.ESPProposal)))
	}
}
