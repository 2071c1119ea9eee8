package validate

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// network checks cluster.gcp.network: its on-prem ranges are CIDRs and
// hold the control plane (its firewall rule is the only way the API
// server reaches a cloud node's kubelet), and its CNI and metrics ports
// are ports.
func (c *checker) network() {
	n := c.src.Cluster.GCP.Network
	if n == nil {
		return
	}
	p := sel("cluster", "gcp", "network")
	if n.Create {
		if n.SubnetworkRange == "" {
			c.at(join(p, "create"), "nodegen creates the subnetwork, so it needs its primary range: set cluster.gcp.network.subnetworkRange (a CIDR, e.g. \"10.128.0.0/20\")")
		}
		if n.Project != "" && n.Project != c.src.Cluster.GCP.Project {
			c.at(join(p, "project"), "nodegen creates the network in project %s (the root module's provider), not in %s: a Shared VPC's network is its host project's; leave create false there, or drop project", c.src.Cluster.GCP.Project, n.Project)
		}
	}
	var prefixes []netip.Prefix
	for i, r := range n.OnpremRanges {
		pr, err := netip.ParsePrefix(r)
		if err != nil {
			c.at(join(p, "onpremRanges", i), "%q is not a CIDR: %v", r, err)
			continue
		}
		if pr.Masked() != pr {
			c.at(join(p, "onpremRanges", i), "%s has host bits set: a firewall rule's range is its network address, %s", r, pr.Masked())
		}
		prefixes = append(prefixes, pr)
	}
	if host, _, err := net.SplitHostPort(c.src.Cluster.ControlPlaneEndpoint); err == nil && len(prefixes) == len(n.OnpremRanges) {
		if a, err := netip.ParseAddr(host); err == nil {
			in := false
			for _, pr := range prefixes {
				in = in || pr.Contains(a)
			}
			if !in {
				c.at(join(p, "onpremRanges"), "the control plane %s is in none of the on-prem ranges %s: the firewall rule would keep the API server from the cloud nodes' kubelet (logs, exec, metrics); add its range", a, strings.Join(n.OnpremRanges, ", "))
			}
		}
	}
	var subnet netip.Prefix
	subnetOK := false
	if n.SubnetworkRange != "" {
		pr, err := netip.ParsePrefix(n.SubnetworkRange)
		switch {
		case err != nil:
			c.at(join(p, "subnetworkRange"), "%q is not a CIDR: %v", n.SubnetworkRange, err)
		case pr.Masked() != pr:
			c.at(join(p, "subnetworkRange"), "%s has host bits set: a subnetwork's range is its network address, %s", n.SubnetworkRange, pr.Masked())
		default:
			if why := subnetworkRangeProblem(pr); why != "" {
				c.at(join(p, "subnetworkRange"), "%s", why)
			}
			subnet, subnetOK = pr, true
		}
	}
	if n.VPN != nil {
		c.vpn(n, subnet, subnetOK)
	}
	for i, cp := range n.CNIPorts {
		if cp == "ipip" {
			continue // a protocol without ports
		}
		c.ports(join(p, "cniPorts", i), cp)
	}
	for i, mp := range n.MetricsPorts {
		if c.ports(join(p, "metricsPorts", i), mp) && slices.Contains(n.CNIPorts, mp) {
			c.at(join(p, "metricsPorts", i), "%q is one of cniPorts, which the on-prem rule admits already", mp)
		}
	}
}

// ports checks a firewall port or range "proto/N" or "proto/N-M" at path
// and reports whether it is valid.
func (c *checker) ports(path []cue.Selector, pp string) bool {
	_, ports, _ := strings.Cut(pp, "/")
	lo, hi, isRange := strings.Cut(ports, "-")
	a, errA := strconv.Atoi(lo)
	b := a
	var errB error
	if isRange {
		b, errB = strconv.Atoi(hi)
	}
	switch {
	case errA != nil || errB != nil || a < 1 || b > 65535:
		c.at(path, "%q: ports are between 1 and 65535", pp)
	case b < a:
		c.at(path, "%q: the range ends below its start", pp)
	case pp == "tcp/"+strconv.Itoa(model.KubeletPort):
		c.at(path, "%q is the kubelet's port, which the on-prem rule admits already", pp)
	default:
		return true
	}
	return false
}

// subnetworkProhibited are the IPv4 ranges Compute Engine refuses in a
// subnetwork's range (Google, VPC, "Subnets", prohibited IPv4 subnet
// ranges): "this network", loopback, link-local (the VMs' metadata
// server is 169.254.169.254), multicast and the limited broadcast address.
var subnetworkProhibited = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\" (0.0.0.0/8)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (127.0.0.0/8)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (169.254.0.0/16, where the metadata server and the VPN's BGP sessions are)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (224.0.0.0/4)"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the limited broadcast address"},
}

// subnetworkRangeProblem says why Compute Engine refuses pr as a
// subnetwork's primary range, or "": a range in a prohibited block, or
// one smaller than /29, the smallest primary range a subnetwork takes
// (Google, VPC, "Subnets", IPv4 subnet ranges). No subnetwork of the
// network can have it, so the firewall rules and the VPN would be
// rendered for addresses no node has, and with network.create Terraform's
// apply fails.
func subnetworkRangeProblem(pr netip.Prefix) string {
	for _, b := range subnetworkProhibited {
		if b.prefix.Overlaps(pr) {
			return fmt.Sprintf("%s is in %s, which Compute Engine refuses in a subnetwork's range (Google, VPC, \"Subnets\", prohibited IPv4 subnet ranges): no subnetwork has it", pr, b.what)
		}
	}
	if pr.Bits() > 29 {
		return fmt.Sprintf("%s is smaller than /29, the smallest primary range Compute Engine gives a subnetwork (Google, VPC, \"Subnets\", IPv4 subnet ranges): no subnetwork has it", pr)
	}
	return ""
}
