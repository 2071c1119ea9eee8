package model

import (
	"fmt"
	"net/netip"
	"time"
)

// VPN is the HA VPN between the on-prem side and the cloud nodes' network
// (cluster.gcp.network.vpn): its two tunnels, the BGP sessions over them
// and the prefixes each side advertises.
type VPN struct {
	CloudRouterASN int64            `json:"cloudRouterASN"`
	OnpremASN      int64            `json:"onpremASN"`
	PeerGateways   []VPNPeerGateway `json:"peerGateways"`
	// HAVPNAddresses are the addresses Google gave the HA VPN gateway's
	// interfaces, by interface; empty until the source declares them.
	HAVPNAddresses []string    `json:"haVpnAddresses,omitempty"`
	Tunnels        []VPNTunnel `json:"tunnels"`
	IKEProposal    string      `json:"ikeProposal"`
	ESPProposal    string      `json:"espProposal"`
	// BGPKeepaliveInterval is in seconds; the hold time is three times it.
	BGPKeepaliveInterval int          `json:"bgpKeepaliveInterval"`
	Advertise            VPNAdvertise `json:"advertise"`
	// TunnelLossToleration is the tolerationSeconds of the pods nodegen
	// renders for cloud nodes, for the unreachable and not-ready taints.
	TunnelLossToleration Duration `json:"tunnelLossToleration"`
	// NotificationChannels are the resource names of the Cloud Monitoring
	// notification channels of the VPN's alert policies; nil for none.
	NotificationChannels []string `json:"notificationChannels,omitempty"`
	// SiteBGP is the gateways' BGP toward the site's routers; nil for
	// none.
	SiteBGP *VPNSiteBGP `json:"siteBGP,omitempty"`
}

// VPNSiteBGP is the on-prem gateways' BGP toward the site's routers: each
// gateway sends each router the cloud prefixes while it has them from the
// Cloud Router, and takes nothing from them.
type VPNSiteBGP struct {
	ASN     int64    `json:"asn"`
	Routers []string `json:"routers"`
}

// The BGP timers of the gateways' sessions with the site's routers, in
// seconds: a lost gateway leaves the site's routing when the hold time
// runs out. BGP takes the smaller of the two ends' hold times (RFC 4271,
// 4.2), so a router that offers more still gets this one; 3 s is the
// least hold time RFC 4271 allows.
const (
	SiteBGPKeepalive = 3
	SiteBGPHoldTime  = 9
	// SiteBGPConnectRetry is how often a gateway tries again to open a
	// session with a router that is not up (FRR's timers connect).
	SiteBGPConnectRetry = 3
)

// SiteIBGP reports whether the site's routers are in the gateways' own AS.
func (v *VPN) SiteIBGP() bool { return v.SiteBGP != nil && v.SiteBGP.ASN == v.OnpremASN }

// VPNAdvertise holds the prefixes each side advertises, as the source
// writes them (nil: the default, see VPN.OnpremPrefixes and CloudPrefixes).
type VPNAdvertise struct {
	Onprem []string `json:"onprem,omitempty"`
	Cloud  []string `json:"cloud,omitempty"`
}

// VPNPeerGateway is an on-prem VPN gateway host.
type VPNPeerGateway struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	// NATTraversal says the gateway is behind NAT: its ESP travels in UDP.
	NATTraversal bool `json:"natTraversal,omitempty"`
}

// VPNTunnel is one tunnel of the HA VPN gateway and its BGP session.
type VPNTunnel struct {
	InsideRange             string    `json:"insideRange"`
	SharedSecret            VPNSecret `json:"sharedSecret"`
	AdvertisedRoutePriority int       `json:"advertisedRoutePriority"`
}

// VPNSecret is the Secret Manager secret version that holds a tunnel's
// pre-shared key: a version number, never "latest", so that both ends
// read the same key and a rotation is a change of the source.
type VPNSecret struct {
	Secret  string `json:"secret"`
	Version int    `json:"version"`
}

// BGPHoldTime is the BGP hold time in seconds of both sides: three
// keepalive intervals, as Cloud Router sets it.
func (v *VPN) BGPHoldTime() int { return 3 * v.BGPKeepaliveInterval }

// OnpremPrefixes are the prefixes the on-prem gateways advertise: the
// source's advertise.onprem, or the network's onpremRanges.
func (v *VPN) OnpremPrefixes(n *GCPNetwork) []string {
	if len(v.Advertise.Onprem) > 0 {
		return v.Advertise.Onprem
	}
	return n.OnpremRanges
}

// CloudPrefixes are the prefixes the Cloud Router advertises: the
// source's advertise.cloud, or the subnetwork's range.
func (v *VPN) CloudPrefixes(n *GCPNetwork) []string {
	if len(v.Advertise.Cloud) > 0 {
		return v.Advertise.Cloud
	}
	if n.SubnetworkRange == "" {
		return nil
	}
	return []string{n.SubnetworkRange}
}

// External VPN gateway redundancy types (google_compute_external_vpn_gateway).
const (
	RedundancySingleIP = "SINGLE_IP_INTERNALLY_REDUNDANT"
	RedundancyTwoIPs   = "TWO_IPS_REDUNDANCY"
)

// RedundancyType is the external VPN gateway's redundancy type: one peer
// gateway address or two.
func (v *VPN) RedundancyType() string {
	if len(v.PeerGateways) == 2 {
		return RedundancyTwoIPs
	}
	return RedundancySingleIP
}

// VPNRouterName is the GCE name of the HA VPN's Cloud Router, and
// VPNTunnelName that of tunnel i (its router interface and BGP peer share
// it): out/terraform's names, which the by-hand checks name too.
func (c *Cluster) VPNRouterName() string      { return c.Name + "-vpn" }
func (c *Cluster) VPNTunnelName(i int) string { return c.Name + "-" + TunnelName(i) }

// TunnelName is tunnel i's name on both sides: the HA VPN interface it
// leaves from ("tunnel0", "tunnel1"). It names the strongSwan connection
// and its file.
func TunnelName(i int) string { return fmt.Sprintf("tunnel%d", i) }

// TunnelInterface is the on-prem XFRM interface of tunnel i (at most 15
// characters, the kernel's limit).
func TunnelInterface(i int) string { return "vpn-" + TunnelName(i) }

// TunnelInterfaceID is the XFRM interface ID of tunnel i, strongSwan's
// if_id_in and if_id_out (0 would mean none).
func TunnelInterfaceID(i int) int { return i + 1 }

// PeerGatewayOf is the index of the peer gateway tunnel i ends on, and the
// interface of the external VPN gateway that stands for it: with one peer
// gateway both tunnels end on it (interface 0); with two, tunnel i ends
// on gateway i.
func (v *VPN) PeerGatewayOf(i int) int {
	if len(v.PeerGateways) == 2 {
		return i
	}
	return 0
}

// TunnelsOf lists the tunnels that end on peer gateway g.
func (v *VPN) TunnelsOf(g int) []int {
	var out []int
	for i := range v.Tunnels {
		if v.PeerGatewayOf(i) == g {
			out = append(out, i)
		}
	}
	return out
}

// InsideAddresses are the BGP addresses of a tunnel's /30: the Cloud
// Router's is the first usable address, the on-prem gateway's the second.
// ok is false when the range is not an IPv4 /30.
func (t *VPNTunnel) InsideAddresses() (cloud, onprem netip.Addr, ok bool) {
	p, err := netip.ParsePrefix(t.InsideRange)
	if err != nil || !p.Addr().Is4() || p.Bits() != 30 {
		return netip.Addr{}, netip.Addr{}, false
	}
	base := p.Masked().Addr()
	cloud = base.Next()
	return cloud, cloud.Next(), true
}

// TunnelLossToleration is how long the pods nodegen renders for the cloud
// nodes tolerate their node being unreachable or not ready: the VPN's
// tunnelLossToleration, 0 without a VPN (Kubernetes' default applies).
func (c *Cluster) TunnelLossToleration() time.Duration {
	if n := c.GCP.Network; n != nil && n.VPN != nil {
		return n.VPN.TunnelLossToleration.Duration()
	}
	return 0
}
