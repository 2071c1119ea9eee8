package validate

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// The addresses other machines send to: the control plane's endpoint, the
// east-west gateways' addresses and their fixed load-balancer addresses.

// limitedBroadcast is 255.255.255.255, the limited broadcast address
// (RFC 919, section 7).
var limitedBroadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// specialIP says why a is no address another machine can open a
// connection to, or "" when it is one.
//
// The API server refuses the unspecified, loopback, link-local and
// link-local multicast addresses in a Service's externalIPs and in
// Endpoints and EndpointSlice addresses (kubernetes/kubernetes v1.37.2,
// pkg/apis/core/validation/validation.go, ValidateEndpointIP, called
// ValidateNonSpecialIP in earlier releases). Multicast and broadcast
// addresses take no TCP connection at all: "A TCP connection ... MUST NOT
// be initiated to a broadcast or multicast address" (RFC 1122, section
// 4.2.3.10), and every one of the gateway's ports and the API server's is
// TCP.
func specialIP(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsUnspecified():
		return "the unspecified address: it names no machine (the API server refuses it in externalIPs and endpoints)"
	case a.IsLoopback():
		return "in the loopback range (127.0.0.0/8): every machine answers it itself, so the traffic never leaves the sender (the API server refuses it in externalIPs and endpoints)"
	case a.IsLinkLocalUnicast():
		return "in the link-local range (169.254.0.0/16): it is not routed beyond one link, and 169.254.169.254 is every GCE VM's own metadata server (the API server refuses it in externalIPs and endpoints)"
	case a.IsLinkLocalMulticast():
		return "in the link-local multicast range (224.0.0.0/24): no TCP connection can be opened to it (the API server refuses it in externalIPs and endpoints)"
	case a.IsMulticast():
		return "a multicast address (224.0.0.0/4): no TCP connection can be opened to it (RFC 1122, 4.2.3.10)"
	case a == limitedBroadcast:
		return "the limited broadcast address: no TCP connection can be opened to it (RFC 1122, 4.2.3.10)"
	}
	return ""
}

// endpointHost checks the host of controlPlaneEndpoint: the cloud nodes
// reach the API server at it over the VPN, so it must name another
// machine. "localhost" is the loopback address (RFC 6761, section 6.3).
func (c *checker) endpointHost(p []cue.Selector, host string) {
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		c.at(p, "host %q is the loopback address: a cloud node would look for the API server on itself; use the address the cloud nodes reach the control plane at over the VPN", host)
		return
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return
	}
	if why := specialIP(a); why != "" {
		c.at(p, "host %s is %s; use the address the cloud nodes reach the control plane at over the VPN", host, why)
	}
}

// declaredRange is a CIDR the fleet's source declares, and where.
type declaredRange struct {
	prefix netip.Prefix
	text   string
	where  string // for messages
}

// declaredRanges returns every internal load balancer's source ranges in
// the fleet's mesh, in cluster order.
func declaredRanges(m *model.Mesh) []declaredRange {
	var out []declaredRange
	for _, name := range m.Names() {
		r := m.Clusters[name].EastWestGateway.ReachedThrough
		if r == nil || r.InternalLoadBalancer == nil {
			continue
		}
		for i, s := range r.InternalLoadBalancer.SourceRanges {
			if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
				out = append(out, declaredRange{p.Masked(), s, fmt.Sprintf("mesh.clusters.%s.eastWestGateway.reachedThrough.internalLoadBalancer.sourceRanges[%d]", quotedLabel(name), i)})
			}
		}
	}
	return out
}

// quotedLabel writes a cluster name as it appears in a path.
func quotedLabel(name string) string {
	return cue.Str(name).String()
}

// gatewayAddresses checks the addresses of one cluster's east-west
// gateway: eastWestGateway.address, when it is an IP address, and
// service.loadBalancerIP.
func (c *checker) gatewayAddresses(f *model.Fleet, name string, p []cue.Selector, ranges []declaredRange) {
	gw := &f.Mesh.Clusters[name].EastWestGateway
	r := gw.ReachedThrough
	type addr struct {
		ip   netip.Addr
		path []cue.Selector
		what string
	}
	var addrs []addr
	if a, err := netip.ParseAddr(gw.Address); err == nil && a.Is4() {
		addrs = append(addrs, addr{a, join(p, "address"), "the gateway's address"})
	}
	lbPath := join(p, "service", "loadBalancerIP")
	if s := gw.Service.LoadBalancerIP; s != "" {
		if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
			c.at(lbPath, "%q is not an IPv4 address (four numbers from 0 to 255)", s)
		} else {
			addrs = append(addrs, addr{a, lbPath, "the load-balancer address"})
		}
	}
	for _, a := range addrs {
		if why := specialIP(a.ip); why != "" {
			c.at(a.path, "%s %s is %s; the other clusters send the mesh's traffic to it", a.what, a.ip, why)
			continue
		}
		for _, o := range f.Clusters {
			host, _, err := net.SplitHostPort(o.Cluster.ControlPlaneEndpoint)
			if cp, perr := netip.ParseAddr(host); err == nil && perr == nil && cp.Unmap() == a.ip {
				c.at(a.path, "%s %s is the address of cluster %q's API server (its controlPlaneEndpoint): one address cannot be both, give the gateway an address of its own", a.what, a.ip, o.Cluster.Name)
			}
		}
		for _, dr := range ranges {
			bits := dr.prefix.Bits()
			if bits > 30 || !dr.prefix.Contains(a.ip) {
				continue
			}
			switch a.ip {
			case dr.prefix.Addr():
				c.at(a.path, "%s %s is the network address of %s (%s): it names the range, not a machine", a.what, a.ip, dr.text, dr.where)
			case lastAddr(dr.prefix):
				c.at(a.path, "%s %s is the broadcast address of %s (%s): it names every machine of the range, not one", a.what, a.ip, dr.text, dr.where)
			}
		}
		if r != nil && r.InternalLoadBalancer != nil {
			for i, s := range r.InternalLoadBalancer.SourceRanges {
				if pr, err := netip.ParsePrefix(s); err == nil && pr.Masked().Contains(a.ip) {
					c.at(a.path, "%s %s is inside %s (sourceRanges[%d] of its own internal load balancer), a range the other clusters' traffic comes from over the VPN: GCE gives an internal load balancer an address of the VPC's subnet, and the VPN routes this range to the other side", a.what, a.ip, s, i)
				}
			}
		}
	}
	// A load-balancer controller (MetalLB, kube-vip) gives the Service the
	// address its loadBalancerIP asks for, and the other clusters use
	// eastWestGateway.address: two different IP addresses cannot both be
	// the gateway's.
	if r != nil && r.LoadBalancerController != nil && gw.Service.LoadBalancerIP != "" {
		if a, err := netip.ParseAddr(gw.Address); err == nil && gw.Service.LoadBalancerIP != gw.Address {
			c.at(lbPath, "the load-balancer controller %q gives the gateway's Service %s, and the other clusters reach the gateway at eastWestGateway.address %s: make them the same address (or leave loadBalancerIP out)", r.LoadBalancerController.Name, gw.Service.LoadBalancerIP, a)
		}
	}
}

// lastAddr is the last address of p (its broadcast address for IPv4).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := 32 - p.Bits()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v |= (1 << host) - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
