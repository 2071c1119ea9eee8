package validate

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
)

// linkLocal is the range of the tunnels' BGP addresses: Cloud Router's
// interfaces on HA VPN tunnels take an address of RFC 3927's link-local
// range (google_compute_router_interface's ip_range), and the metadata
// server's address is one of it.
var (
	linkLocal      = netip.MustParsePrefix("169.254.0.0/16")
	metadataServer = netip.MustParseAddr("169.254.169.254")
)

// vpnWeak are algorithms Cloud VPN accepts and vet refuses as weak, with
// the reason: below 112 bits of security, or built on MD5 or SHA-1.
var vpnWeak = map[string]string{
	"3des": "3DES has a 64-bit block", "md5": "HMAC-MD5", "sha1": "HMAC-SHA1",
	"prfmd5": "a PRF on MD5", "prfsha1": "a PRF on SHA-1", "prfaesxcbc": "PRF-AES128-XCBC (128-bit, legacy)",
	"prfaescmac": "PRF-AES128-CMAC (128-bit, legacy)", "aesxcbc": "AES-XCBC-96", "aescmac": "AES-CMAC-96",
	"modp1024": "MODP 1024 (group 2)", "modp1536": "MODP 1536 (group 5)",
	"modp1024s160": "the RFC 5114 group 22, which Cloud VPN drops (its cipher changes page)",
	"modp2048s224": "the RFC 5114 group 23", "modp2048s256": "the RFC 5114 group 24",
}

// vpnPhase names a proposal's phase for people.
func vpnPhase(ike bool) (int, string) {
	if ike {
		return 1, "phase 1 (IKE)"
	}
	return 2, "phase 2 (ESP)"
}

// vpnRole is the role of strongSwan's keyword a in a proposal of the
// phase, by Cloud VPN's table of supported IKEv2 ciphers (gce.
// CloudVPNCiphers: Google, Cloud VPN, "Supported IKE ciphers"): an AEAD
// cipher's is "aead", a Diffie-Hellman group's "dh" in either phase. ok
// is false when the table lists a in neither phase; inPhase when it lists
// it in this one.
func vpnRole(a string, phase int) (role string, inPhase, ok bool) {
	for _, ph := range []int{phase, 3 - phase} {
		for _, c := range gce.CloudVPNCipher(ph, a) {
			role = c.Role
			switch {
			case c.Role == "encryption" && c.AEAD:
				role = "aead"
			case c.Role == "pfs":
				role = "dh"
			}
			return role, ph == phase, true
		}
	}
	return "", false, false
}

// vpnProposal checks one proposal, IKE (phase 1) or ESP (phase 2), and
// returns what is wrong with it ("" when nothing): every algorithm one
// Cloud VPN's table lists for the phase and vet does not refuse as weak,
// exactly one per role (Google's advice: one cipher per role, so that
// both ends always select the same), an AEAD cipher without integrity, a
// CBC cipher with one, IKE's PRF where strongSwan needs it (with an AEAD
// cipher), no PRF in ESP, and a DH group in both: IKE's, and ESP's PFS
// group, which Cloud VPN requires in phase 2 (the page's "PFS Algorithm
// (required)"; strongSwan negotiates the first CHILD SA without one, so a
// proposal without a group fails only at the first rekey).
func vpnProposal(p string, ike bool) string {
	phase, phaseName := vpnPhase(ike)
	count := map[string]int{}
	for _, a := range strings.Split(p, "-") {
		role, inPhase, ok := vpnRole(a, phase)
		switch {
		case !ok:
			return fmt.Sprintf("%q is not an algorithm Cloud VPN supports for IKEv2 (in strongSwan's name; Google, Cloud VPN, \"Supported IKE ciphers\"): vet accepts %s", a, vpnAccepted(ike))
		case !ike && role == "prf":
			return "ESP has no PRF: drop it"
		case !inPhase:
			return fmt.Sprintf("Cloud VPN does not negotiate %s (%q) in %s (Google, Cloud VPN, \"Supported IKE ciphers\"): vet accepts %s", vpnCipherName(a), a, phaseName, vpnAccepted(ike))
		case vpnWeak[a] != "":
			return fmt.Sprintf("%q is weak (%s): vet accepts %s", a, vpnWeak[a], vpnAccepted(ike))
		}
		count[role]++
	}
	enc := count["encryption"] + count["aead"]
	switch {
	case enc != 1:
		return fmt.Sprintf("%d encryption algorithms: give one (Google advises one algorithm per role, so that both ends select the same)", enc)
	case count["integrity"] > 1 || count["prf"] > 1 || count["dh"] > 1:
		return "more than one algorithm for a role: give one (Google advises one algorithm per role, so that both ends select the same)"
	case count["aead"] == 1 && count["integrity"] == 1:
		return "an AES-GCM cipher authenticates itself: drop the integrity algorithm"
	case count["encryption"] == 1 && count["integrity"] == 0:
		return fmt.Sprintf("an AES-CBC cipher needs an integrity algorithm (%s)", diag.OrList(vpnAcceptedKeywords(phase, "integrity", false)))
	case ike && count["aead"] == 1 && count["prf"] == 0:
		return fmt.Sprintf("an AES-GCM cipher in IKE needs a PRF (%s)", diag.OrList(vpnAcceptedKeywords(phase, "prf", true)))
	case ike && count["dh"] == 0:
		return "IKE needs a Diffie-Hellman group"
	case !ike && count["dh"] == 0:
		return fmt.Sprintf("Cloud VPN requires a PFS group in phase 2 (Google, Cloud VPN, \"Supported IKE ciphers\": \"PFS Algorithm (required)\"), so the tunnel would fail at its first rekey: add one, e.g. %q", p+"-modp2048")
	}
	return ""
}

// vpnCipherName is Google's name for strongSwan's keyword a.
func vpnCipherName(a string) string {
	for _, c := range gce.CloudVPNCiphers() {
		if c.Keyword == a {
			return c.Name
		}
	}
	return a
}

// vpnAcceptedKeywords are the keywords of a phase's role in one table
// that vet accepts (the table's, less the weak), encryption sorted.
func vpnAcceptedKeywords(phase int, role string, aead bool) []string {
	var out []string
	for _, k := range gce.CloudVPNKeywords(phase, role, aead) {
		if vpnWeak[k] == "" {
			out = append(out, k)
		}
	}
	if role == "encryption" {
		slices.Sort(out)
	}
	return out
}

func vpnAccepted(ike bool) string {
	phase, _ := vpnPhase(ike)
	dhRole := "dh"
	if !ike {
		dhRole = "pfs"
	}
	enc := fmt.Sprintf("%s (with %s) or %s",
		strings.Join(vpnAcceptedKeywords(phase, "encryption", false), ", "),
		diag.OrList(vpnAcceptedKeywords(phase, "integrity", false)),
		strings.Join(vpnAcceptedKeywords(phase, "encryption", true), ", "))
	dh := strings.Join(vpnAcceptedKeywords(phase, dhRole, false), ", ")
	if ike {
		return enc + "; " + strings.Join(vpnAcceptedKeywords(phase, "prf", false), ", ") + "; " + dh
	}
	return enc + "; for PFS " + dh
}

// privateASN reports whether asn is a private ASN (RFC 6996), the ones
// Cloud Router takes without owning a public one.
func privateASN(asn int64) bool {
	return asn >= 64512 && asn <= 65534 || asn >= 4200000000 && asn <= 4294967294
}

// vpn checks cluster.gcp.network.vpn: the topology the 99.99% SLA needs,
// the tunnels' link-local ranges, the ASNs, the proposals, the BGP timers,
// and that each side advertises what the other must reach, and nothing of
// the other's.
func (c *checker) vpn(n *model.GCPNetwork, subnet netip.Prefix, subnetOK bool) {
	v := n.VPN
	p := sel("cluster", "gcp", "network", "vpn")
	if n.SubnetworkRange == "" {
		c.atKey(p, "a vpn needs cluster.gcp.network.subnetworkRange, the subnetwork's primary range: the Cloud Router advertises it to the on-prem side and vet checks what the cloud side advertises against it")
	}

	// The topology.
	switch len(v.PeerGateways) {
	case 1, 2:
	default:
		c.at(join(p, "peerGateways"), "%d peer gateway(s): HA VPN's topologies take one on-prem gateway (both tunnels on it) or two (one tunnel each)", len(v.PeerGateways))
	}
	if len(v.Tunnels) != 2 {
		c.at(join(p, "tunnels"), "%d tunnel(s): the 99.99%% topology needs two, one from each of the HA VPN gateway's interfaces (tunnels[0] from interface 0, tunnels[1] from interface 1)", len(v.Tunnels))
	}
	names := map[string]int{}
	addrs := map[netip.Addr]cue.Selector{}
	for i, g := range v.PeerGateways {
		if j, ok := names[g.Name]; ok {
			c.at(join(p, "peerGateways", i, "name"), "peer gateway %q is also peerGateways[%d]: each gateway has its own directory of files", g.Name, j)
		}
		names[g.Name] = i
		if a, ok := c.publicAddress(join(p, "peerGateways", i, "address"), g.Address, "an on-prem gateway's address"); ok {
			if _, dup := addrs[a]; dup {
				c.at(join(p, "peerGateways", i, "address"), "%s is the address of another peer gateway: two gateways need two addresses (one gateway has one entry)", a)
			}
			addrs[a] = cue.Index(i)
		}
	}
	if v.HAVPNAddresses != nil {
		if len(v.HAVPNAddresses) != 2 {
			c.at(join(p, "haVpnAddresses"), "%d address(es): the HA VPN gateway has two interfaces, write the two addresses of terraform output %s", len(v.HAVPNAddresses), layout.VPNAddressesOutput)
		}
		seen := map[netip.Addr]bool{}
		for i, s := range v.HAVPNAddresses {
			a, ok := c.publicAddress(join(p, "haVpnAddresses", i), s, "an HA VPN interface's address")
			if !ok {
				continue
			}
			if seen[a] {
				c.at(join(p, "haVpnAddresses", i), "%s is the address of the other interface too: each interface has its own", a)
			}
			if _, peer := addrs[a]; peer {
				c.at(join(p, "haVpnAddresses", i), "%s is an on-prem gateway's address: a tunnel's two ends differ", a)
			}
			seen[a] = true
		}
	}

	// The tunnels' link-local ranges.
	var ranges []netip.Prefix
	for i, t := range v.Tunnels {
		tp := join(p, "tunnels", i, "insideRange")
		r, err := netip.ParsePrefix(t.InsideRange)
		switch {
		case err != nil:
			c.at(tp, "%q is not a CIDR: %v", t.InsideRange, err)
			continue
		case r.Bits() != 30:
			c.at(tp, "%s is a /%d: a tunnel's inside range is a /30 (the Cloud Router takes its first usable address, the on-prem gateway the second)", r, r.Bits())
			continue
		case r.Masked() != r:
			c.at(tp, "%s has host bits set: the /30 is %s", r, r.Masked())
			continue
		case !linkLocal.Contains(r.Addr()):
			c.at(tp, "%s is outside 169.254.0.0/16: Cloud Router's BGP addresses on a VPN tunnel are link-local", r)
			continue
		case r.Contains(metadataServer):
			c.at(tp, "%s holds 169.254.169.254, the metadata server's address, which every VM reaches on its own interface", r)
			continue
		}
		for j, o := range ranges {
			if o == r {
				c.at(tp, "%s is also tunnels[%d]'s inside range: each tunnel's BGP session needs its own addresses", r, j)
			}
		}
		ranges = append(ranges, r)
	}

	// The ASNs.
	for _, a := range []struct {
		field string
		asn   int64
	}{{"cloudRouterASN", v.CloudRouterASN}, {"onpremASN", v.OnpremASN}} {
		if !privateASN(a.asn) {
			c.at(join(p, a.field), "%d is not a private ASN: use one of 64512-65534 or 4200000000-4294967294 (RFC 6996)", a.asn)
		}
	}
	if v.CloudRouterASN == v.OnpremASN {
		c.at(join(p, "onpremASN"), "%d is cloudRouterASN too: the sessions are eBGP, each side has its own ASN", v.OnpremASN)
	}

	// The proposals and timers.
	if why := vpnProposal(v.IKEProposal, true); why != "" {
		c.at(join(p, "ikeProposal"), "%q: %s", v.IKEProposal, why)
	}
	if why := vpnProposal(v.ESPProposal, false); why != "" {
		c.at(join(p, "espProposal"), "%q: %s", v.ESPProposal, why)
	} else {
		c.espPayloadMTU(v, join(p, "espProposal"))
	}
	if k := v.BGPKeepaliveInterval; k < 20 || k > 60 {
		c.at(join(p, "bgpKeepaliveInterval"), "%d: Cloud Router's BGP keepalive interval is 20 to 60 seconds", k)
	}
	for i, t := range v.Tunnels {
		if r := t.AdvertisedRoutePriority; r < 0 || r > 65535 {
			c.at(join(p, "tunnels", i, "advertisedRoutePriority"), "%d: a route priority is 0 to 65535", r)
		}
	}
	if d := v.TunnelLossToleration.Duration(); d < 2*time.Minute {
		c.at(join(p, "tunnelLossToleration"), "%s is shorter than 2m: the pods it applies to would be evicted during a two-minute loss of both tunnels, which docs/vpn.md's runbook expects them to survive", v.TunnelLossToleration)
	}
	c.vpnTimers(p, v)
	// The schema checks each notification channel's form; a channel
	// named twice is a slip of the source, refused where it repeats.
	seenChannel := map[string]int{}
	for i, ch := range v.NotificationChannels {
		if j, dup := seenChannel[ch]; dup {
			c.at(join(p, "notificationChannels", i), "%s is also notificationChannels[%d]: name each channel once", ch, j)
			continue
		}
		seenChannel[ch] = i
	}
	if v.SiteBGP != nil {
		c.vpnSiteBGP(p, n)
	}

	c.vpnPrefixes(n, subnet, subnetOK)
}

// publicAddress parses an address that must be a public IPv4 address (an
// IKE peer across the internet) and reports it at path otherwise: no
// multicast address, and none of the IANA IPv4 Special-Purpose Address
// Registry (specialPurpose), whose blocks are either not globally
// reachable (shared address space, benchmarking, documentation, reserved,
// "this network") or the anycast addresses of a service that is no VPN
// gateway's. The documentation blocks (RFC 5737) are the exception:
// examples, nodegen's among them, write them where a reader puts the
// real addresses, and no live address can be mistaken for one.
func (c *checker) publicAddress(path []cue.Selector, s, what string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		c.at(path, "%q is not an IPv4 address", s)
		return netip.Addr{}, false
	}
	if b, ok := specialPurpose(a); ok && b.rfc != documentationRFC {
		reach := "not globally reachable"
		if b.globallyReachable {
			reach = "the anycast address of that service"
		}
		c.at(path, "%s is not a public address: it is in %s, %s (%s; IANA IPv4 Special-Purpose Address Registry), %s, and %s is where the tunnels cross the internet", a, b.prefix, b.name, b.rfc, reach, what)
		return netip.Addr{}, false
	}
	if !a.IsGlobalUnicast() {
		c.at(path, "%s is not a public address: %s is where the tunnels cross the internet", a, what)
		return netip.Addr{}, false
	}
	return a, true
}

// vpnPrefixes checks what each side advertises: the on-prem side covers
// the control plane's address and every on-prem range the cloud nodes
// reach, the cloud side the subnetwork's range, and no prefix of one side
// overlaps one of the other's (either side would send the other's
// traffic back to it).
func (c *checker) vpnPrefixes(n *model.GCPNetwork, subnet netip.Prefix, subnetOK bool) {
	v := n.VPN
	p := sel("cluster", "gcp", "network", "vpn", "advertise")
	parse := func(list []string, path []cue.Selector) ([]netip.Prefix, bool) {
		var out []netip.Prefix
		ok := true
		for i, s := range list {
			pr, err := netip.ParsePrefix(s)
			switch {
			case err != nil:
				c.at(join(path, i), "%q is not a CIDR: %v", s, err)
				ok = false
			case pr.Masked() != pr:
				c.at(join(path, i), "%s has host bits set: the prefix is %s", s, pr.Masked())
				ok = false
			default:
				out = append(out, pr)
			}
		}
		return out, ok
	}
	covers := func(list []netip.Prefix, r netip.Prefix) bool {
		return slices.ContainsFunc(list, func(p netip.Prefix) bool { return p.Bits() <= r.Bits() && p.Contains(r.Addr()) })
	}

	var onprem []netip.Prefix
	onpremPath := sel("cluster", "gcp", "network", "onpremRanges")
	ok := true
	if v.Advertise.Onprem != nil {
		onpremPath = join(p, "onprem")
		if onprem, ok = parse(v.Advertise.Onprem, onpremPath); ok {
			var missing []string
			for _, s := range n.OnpremRanges {
				if r, err := netip.ParsePrefix(s); err == nil && !covers(onprem, r.Masked()) {
					missing = append(missing, s)
				}
			}
			if host, _, err := net.SplitHostPort(c.src.Cluster.ControlPlaneEndpoint); err == nil {
				if a, err := netip.ParseAddr(host); err == nil && !covers(onprem, netip.PrefixFrom(a, 32)) {
					missing = append(missing, fmt.Sprintf("the control plane %s", a))
				}
			}
			if len(missing) > 0 {
				c.at(onpremPath, "the on-prem gateways would not advertise %s: the cloud nodes reach the control plane and the on-prem nodes only through what the on-prem side advertises; add it", strings.Join(missing, ", "))
			}
		}
	} else {
		onprem, ok = parse(n.OnpremRanges, onpremPath)
	}

	var cloud []netip.Prefix
	cloudPath := sel("cluster", "gcp", "network", "subnetworkRange")
	cok := subnetOK
	if v.Advertise.Cloud != nil {
		cloudPath = join(p, "cloud")
		if cloud, cok = parse(v.Advertise.Cloud, cloudPath); cok && subnetOK && !covers(cloud, subnet) {
			c.at(cloudPath, "the Cloud Router would not advertise the subnetwork's range %s: the on-prem side reaches the cloud nodes only through what it advertises; add it", subnet)
		}
	} else if subnetOK {
		cloud = []netip.Prefix{subnet}
	}
	// A cloud prefix that holds an HA VPN interface's address is learned
	// by the on-prem gateways over BGP and installed by FRR (bgpd, zebra)
	// as a route through the tunnels; being more specific than the route
	// the gateway reaches the internet by, it sends IKE and ESP for that
	// address into the tunnel it carries, and the tunnels fail.
	if cok && v.Advertise.Cloud != nil {
		for i, cl := range cloud {
			for k, a := range v.HAVPNAddresses {
				if ha, err := netip.ParseAddr(a); err == nil && cl.Contains(ha) {
					c.at(join(cloudPath, i), "%s holds HA VPN interface %d's address %s (haVpnAddresses): the on-prem gateways would route their own tunnels' IKE and ESP into the tunnels; advertise prefixes that leave the HA VPN addresses out", cl, k, ha)
				}
			}
		}
	}
	if !ok || !cok {
		return
	}
	for _, o := range onprem {
		for _, cl := range cloud {
			if o.Overlaps(cl) {
				c.at(cloudPath, "%s (cloud side) overlaps %s (on-prem side, %s): the two sides' prefixes must be disjoint, or each would route the other's addresses back into the tunnel", cl, o, c.path(onpremPath))
			}
		}
	}
}

// meshOverVPN checks that the traffic a mesh's internal load balancer
// admits from the on-prem side can reach it: an east-west gateway's load
// balancer whose sourceRanges lie on the on-prem side of a cluster's VPN
// is reached through that VPN, so that VPN's cloud side must advertise the
// load balancer's address, or the on-prem side has no route to it.
func (c *checker) meshOverVPN(f *model.Fleet, broken func(cluster string) *source.Broken) {
	for _, name := range f.Mesh.Names() {
		gw := &f.Mesh.Clusters[name].EastWestGateway
		if gw.ReachedThrough == nil || gw.ReachedThrough.InternalLoadBalancer == nil {
			continue
		}
		addr, err := netip.ParseAddr(gw.Address)
		if err != nil {
			continue
		}
		var from []netip.Prefix
		for _, s := range gw.ReachedThrough.InternalLoadBalancer.SourceRanges {
			if p, err := netip.ParsePrefix(s); err == nil {
				from = append(from, p.Masked())
			}
		}
		for _, src := range f.Clusters {
			if b := broken(src.Cluster.Name); b == nil || b.Cluster {
				continue
			}
			n := src.Cluster.GCP.Network
			if n == nil || n.VPN == nil {
				continue
			}
			onprem := prefixesOf(n.VPN.OnpremPrefixes(n))
			if !slices.ContainsFunc(from, func(p netip.Prefix) bool {
				return slices.ContainsFunc(onprem, p.Overlaps)
			}) {
				continue
			}
			cloud := prefixesOf(n.VPN.CloudPrefixes(n))
			if slices.ContainsFunc(cloud, func(p netip.Prefix) bool { return p.Contains(addr) }) {
				continue
			}
			p := sel("clusters", src.Cluster.Name, "cluster", "gcp", "network", "subnetworkRange")
			if n.VPN.Advertise.Cloud != nil {
				p = sel("clusters", src.Cluster.Name, "cluster", "gcp", "network", "vpn", "advertise", "cloud")
			}
			c.at(p, "the east-west gateway of %q is at %s, which the mesh's traffic from %s (its load balancer's sourceRanges) reaches through this VPN, but its Cloud Router does not advertise it: add a prefix that holds %s to vpn.advertise.cloud", name, addr, strings.Join(gw.ReachedThrough.InternalLoadBalancer.SourceRanges, ", "), addr)
		}
	}
}

// onpremGatewayOverVPN checks that an east-west gateway on an on-prem
// group is advertised to the cloud: the cloud nodes (the other clusters'
// and its own) reach the on-prem side only through the routes the VPC
// learns from a Cloud Router, which are the prefixes the on-prem
// gateways' BGP daemons advertise (Cloud Router, dynamic routes; FRR's
// network statements in the rendered frr.conf: vpn.advertise.onprem, or
// the onpremRanges). A gateway address no VPN of the fleet advertises
// has no route from any cloud node. Only a cluster with a VPN is
// judged: without one, the way between the sides is not nodegen's.
func (c *checker) onpremGatewayOverVPN(f *model.Fleet, broken func(cluster string) *source.Broken) {
	for _, name := range f.Mesh.Names() {
		gw := &f.Mesh.Clusters[name].EastWestGateway
		src := f.Cluster(name)
		if src == nil {
			continue
		}
		if b := broken(name); b == nil || b.Cluster || b.Groups[gw.NodeGroup] {
			continue
		}
		g, ok := src.NodeGroups[gw.NodeGroup]
		n := src.Cluster.GCP.Network
		if !ok || g.Cloud() || n == nil || n.VPN == nil {
			continue
		}
		addr, err := netip.ParseAddr(gw.Address)
		if err != nil {
			continue
		}
		advertised := false
		for _, other := range f.Clusters {
			if b := broken(other.Cluster.Name); b == nil || b.Cluster {
				continue
			}
			on := other.Cluster.GCP.Network
			if on == nil || on.VPN == nil {
				continue
			}
			if slices.ContainsFunc(prefixesOf(on.VPN.OnpremPrefixes(on)), func(p netip.Prefix) bool { return p.Contains(addr) }) {
				advertised = true
				break
			}
		}
		if advertised {
			continue
		}
		c.at(sel("mesh", "clusters", name, "eastWestGateway", "address"), "the east-west gateway of %q is at %s on its on-prem group %s, but no VPN of the fleet advertises it from the on-prem side (cluster %s's on-prem gateways advertise %s): the cloud nodes learn routes to the on-prem side only from what the on-prem BGP daemons advertise, so no cloud node reaches the gateway; add a prefix that holds %s to cluster %s's vpn.advertise.onprem",
			name, addr, g.Name, name, strings.Join(n.VPN.OnpremPrefixes(n), ", "), addr, name)
	}
}

// prefixesOf parses the CIDRs of list that parse (the others are reported
// where they are written).
func prefixesOf(list []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}
