package validate

import (
	"fmt"
	"net/netip"
	"strings"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// The mesh's connectivity rules: every east-west gateway's address is
// provided by something the source names, a multi-primary mesh has one
// root of trust, and every extra port has a listener.
//
// nodegen's clusters are kubeadm clusters without a cloud-controller-
// manager: nothing writes an address into a LoadBalancer Service's status
// unless a load-balancer controller runs in the cluster. istiod learns a
// network gateway's address only from that status or from the Service's
// externalIPs (istio/istio pilot/pkg/serviceregistry/kube/conversion.go,
// ConvertService; extractGatewaysInner in
// pilot/pkg/serviceregistry/kube/controller/network.go), so a gateway
// without either is never used by the other clusters.

// maxForwardingRulePorts is how many ports one GCP forwarding rule lists
// ("ports": up to five; Compute Engine forwarding rules API reference).
const maxForwardingRulePorts = 5

// trust checks the mesh's root of trust.
func (c *checker) trust(m *model.Mesh) {
	t := m.Trust
	switch {
	case t == nil && m.Model == model.MeshMultiPrimary:
		c.atKey(sel("mesh", "model"), "a multi-primary mesh needs one root of trust: every cluster's istiod signs its workloads' certificates, and with a self-signed root of its own each cluster's mTLS fails across clusters; set mesh.trust: pluginCA (Istio's cacerts per cluster, from one root) or externalCA")
	case t == nil && m.Model == model.MeshPrimaryRemote && len(m.Primaries()) > 1:
		// Each primary's istiod signs the certificates of its own and its
		// remotes' workloads; without a shared root, a workload of one
		// primary's part of the mesh trusts no certificate of another's
		// ("A multicluster service mesh deployment requires that you
		// establish trust between all clusters in the mesh": Istio's
		// multicluster "Before you begin", Configure Trust,
		// https://istio.io/latest/docs/setup/install/multicluster/before-you-begin/).
		c.atKey(sel("mesh", "model"), "the primary-remote mesh has %d primaries (%s): each one's istiod signs its workloads' certificates, and with a self-signed root of its own the mTLS between their parts of the mesh fails; set mesh.trust: pluginCA (Istio's cacerts per cluster, from one root) or externalCA", len(m.Primaries()), strings.Join(quoted(m.Primaries()), ", "))
	case t != nil && (t.PluginCA == nil) == (t.ExternalCA == nil):
		c.at(sel("mesh", "trust"), "set exactly one of pluginCA or externalCA")
	}
}

// reach checks what provides the gateway's address.
func (c *checker) reach(f *model.Fleet, name string, p []cue.Selector) {
	if f.Cluster(name) == nil {
		return // not a cluster of the fleet: reported by Fleet
	}
	gw := &f.Mesh.Clusters[name].EastWestGateway
	r := gw.ReachedThrough
	svc := join(p, "service")
	typ := gw.ServiceType()
	if r == nil {
		if typ == model.ServiceLoadBalancer {
			c.at(join(svc, "type"), "a Service of type LoadBalancer that nothing in the source serves: nodegen's clusters run no cloud controller, so its address stays pending and istiod never learns where the gateway of %q is; set reachedThrough: loadBalancerController (MetalLB and the like), internalLoadBalancer (a cloud gateway group) or router", name)
			return
		}
		c.atKey(p, "nothing provides the address the other clusters reach the east-west gateway of %q at: set reachedThrough to internalLoadBalancer (a cloud gateway group), router (a router delivering address to the gateway's nodes) or loadBalancerController", name)
		return
	}
	rp := join(p, "reachedThrough")
	n := 0
	for _, set := range []bool{r.InternalLoadBalancer != nil, r.Router != nil, r.LoadBalancerController != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		c.at(rp, "set exactly one of internalLoadBalancer, router or loadBalancerController")
		return
	}
	if r.LoadBalancerController != nil {
		if typ != model.ServiceLoadBalancer {
			c.at(join(svc, "type"), "the load-balancer controller %q serves Services of type LoadBalancer, and this one is %s: remove type or make it \"LoadBalancer\"", r.LoadBalancerController.Name, typ)
		}
		return
	}
	// The address goes into the Service's externalIPs: an IP address.
	how := "internalLoadBalancer"
	if r.Router != nil {
		how = "router"
	}
	remotesNeedIt := f.Mesh.Model == model.MeshPrimaryRemote && len(f.Mesh.RemotesOf(name)) > 0 // reported by MeshOf
	if gw.Address == "" && !remotesNeedIt {
		c.atKey(join(rp, how), "%s delivers the gateway's address to its nodes: set eastWestGateway.address to that IP address", how)
	} else if a, err := netip.ParseAddr(gw.Address); gw.Address != "" && (err != nil || !a.Is4()) {
		c.at(join(p, "address"), "%q is not an IPv4 address: with %s it is the Service's externalIPs entry, which kube-proxy and istiod read as an IP address", gw.Address, how)
	}
	if typ == model.ServiceLoadBalancer {
		c.at(join(svc, "type"), "with %s the Service is reached at its externalIPs, and a LoadBalancer Service would wait for an address nothing gives it: remove type (%s) or make it %q", how, model.ServiceClusterIP, model.ServiceNodePort)
	}
	if r.InternalLoadBalancer != nil {
		c.internalLB(f, name, gw, p)
	}
}

// internalLB checks a gateway behind nodegen's GCP internal load balancer.
func (c *checker) internalLB(f *model.Fleet, name string, gw *model.EastWestGateway, gp []cue.Selector) {
	p := join(gp, "reachedThrough", "internalLoadBalancer")
	if src := f.Cluster(name); src != nil {
		// A gce group is reported by gatewayGroup: it can lose its nodes.
		if g := src.NodeGroups[gw.NodeGroup]; g != nil && g.Kind == model.KindOnPrem {
			c.atKey(p, "the internal load balancer's backends are the gateway group's MIGs, and node group %q is %s: place the gateway on a gce-static group, or use router or loadBalancerController", g.Name, g.Kind)
		}
	}
	var tcp []int
	for i, ep := range gw.Ports() {
		if ep.Port == model.MeshPortStatus {
			continue // the health check's port, not forwarded
		}
		if ep.Protocol != "TCP" {
			c.at(join(gp, "extraPorts", i-len(model.MeshPorts), "protocol"), "the internal load balancer forwards TCP only (one forwarding rule, one protocol): make the port TCP, or reach the gateway through router")
			continue
		}
		tcp = append(tcp, ep.Port)
	}
	if len(tcp) > maxForwardingRulePorts {
		c.at(join(gp, "extraPorts"), "the internal load balancer forwards %d ports (%s) and a forwarding rule lists at most %d: drop extra ports, or reach the gateway through router", len(tcp), joinInts(tcp), maxForwardingRulePorts)
	}
	for i, r := range gw.ReachedThrough.InternalLoadBalancer.SourceRanges {
		pr, err := netip.ParsePrefix(r)
		switch {
		case err != nil:
			c.at(join(p, "sourceRanges", i), "%q is not a CIDR: %v", r, err)
		case pr.Masked() != pr:
			// As onpremRanges: Compute stores a firewall rule's source
			// range as its network address, so Terraform would plan the
			// rule again on every apply.
			c.at(join(p, "sourceRanges", i), "%s has host bits set: a firewall rule's range is its network address, %s", r, pr.Masked())
		}
	}
}

// listener checks that an extra port has exactly one listener.
func (c *checker) listener(ep model.GatewayPort, p []cue.Selector) {
	switch {
	case ep.Listener == nil && ep.Gateway == "":
		c.atKey(p, "port %d is opened on the gateway's Service, but no Gateway has a server on it, so the gateway has no listener and drops its traffic: set listener (protocol and hosts: nodegen renders the server) or gateway (your own Gateway, namespace/name, that serves it)", ep.Port)
	case ep.Listener != nil && ep.Gateway != "":
		c.at(join(p, "gateway"), "port %d has a listener and names the Gateway %q: set one of them", ep.Port, ep.Gateway)
	case ep.Listener != nil:
		l := ep.Listener
		switch {
		case l.Protocol == "TLS" && l.TLSMode == "":
			c.atKey(join(p, "listener"), "a TLS server needs its TLS mode: set tlsMode (PASSTHROUGH, AUTO_PASSTHROUGH or ISTIO_MUTUAL)")
		case l.Protocol != "TLS" && l.TLSMode != "":
			c.at(join(p, "listener", "tlsMode"), "tlsMode applies to a TLS server, and this one is %s: remove it or make protocol \"TLS\"", l.Protocol)
		}
		if ep.Protocol != "" && ep.Protocol != "TCP" {
			c.at(join(p, "protocol"), "Istio's gateway serves %s listeners over TCP, and the port is %s: make it TCP", l.Protocol, ep.Protocol)
		}
	}
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// sharedAddresses reports two clusters whose east-west gateways have one
// address: the other clusters (and istiod, which keys a network's gateway
// by address) could not tell the two gateways apart, and a packet for one
// reaches one of them only.
func (c *checker) sharedAddresses(m *model.Mesh) {
	first := map[string]string{}
	for _, name := range m.Names() {
		a := m.Clusters[name].EastWestGateway.Address
		if a == "" {
			continue
		}
		key := strings.ToLower(a)
		if other, ok := first[key]; ok {
			c.at(sel("mesh", "clusters", name, "eastWestGateway", "address"), "address %s is also the east-west gateway address of cluster %q: every cluster's gateway needs an address of its own, on its own network", a, other)
			continue
		}
		first[key] = name
	}
}
