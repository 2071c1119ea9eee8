package validate

import (
	"fmt"
	"net/netip"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// vpnSiteBGP checks cluster.gcp.network.vpn.siteBGP, the gateways' BGP
// toward the site's routers: a private ASN that is not the Cloud Router's
// (the site's routers would take the cloud prefixes' AS path as their
// own and drop them), and routers that are IPv4 unicast addresses on the
// on-prem side, each once: not the gateways' own public addresses or the
// HA VPN gateway's, and not inside a cloud prefix, which each gateway
// routes into its tunnels (its session to the router would go there).
func (c *checker) vpnSiteBGP(p []cue.Selector, n *model.GCPNetwork) {
	v := n.VPN
	s := v.SiteBGP
	sp := join(p, "siteBGP")
	if !privateASN(s.ASN) {
		c.at(join(sp, "asn"), "%d is not a private ASN: use one of 64512-65534 or 4200000000-4294967294 (RFC 6996)", s.ASN)
	} else if s.ASN == v.CloudRouterASN {
		c.at(join(sp, "asn"), "%d is cloudRouterASN: the site's routers would find their own ASN in the cloud prefixes' AS path and drop them; use onpremASN (%d, iBGP) or an ASN of the site's", s.ASN, v.OnpremASN)
	}
	var cloud []netip.Prefix
	for _, s := range v.CloudPrefixes(n) {
		if pr, err := netip.ParsePrefix(s); err == nil {
			cloud = append(cloud, pr.Masked())
		}
	}
	public := map[netip.Addr]string{}
	for _, g := range v.PeerGateways {
		if a, err := netip.ParseAddr(g.Address); err == nil {
			public[a] = "the peer gateway " + g.Name + "'s public address"
		}
	}
	for i, h := range v.HAVPNAddresses {
		if a, err := netip.ParseAddr(h); err == nil {
			public[a] = fmt.Sprintf("HA VPN interface %d's address", i)
		}
	}
	seen := map[netip.Addr]int{}
	for i, r := range s.Routers {
		rp := join(sp, "routers", i)
		a, err := netip.ParseAddr(r)
		switch {
		case err != nil || !a.Is4():
			c.at(rp, "%q is not an IPv4 address", r)
			continue
		case !a.IsGlobalUnicast() || linkLocal.Contains(a):
			c.at(rp, "%s is not a unicast address a gateway can reach on its LAN: give the router's address on the LAN it shares with the gateways", a)
			continue
		}
		if j, dup := seen[a]; dup {
			c.at(rp, "%s is also routers[%d]: each router once", a, j)
		}
		seen[a] = i
		if what, ok := public[a]; ok {
			c.at(rp, "%s is %s: give the site router's address on the LAN it shares with the gateways", a, what)
		}
		for _, cl := range cloud {
			if cl.Contains(a) {
				c.at(rp, "%s is inside the cloud prefix %s: the gateways route it into the tunnels, so their sessions to the router would go there; give the router's address on the on-prem side", a, cl)
			}
		}
	}
}
