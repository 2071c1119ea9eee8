package validate

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
)

// Mesh checks the mesh of a fleet source against what Istio's
// multi-cluster, multi-network installation needs and what nodegen renders
// from it. Positions are taken from the source's root (mesh.clusters...).
//
// nodegen's mesh is multi-network: every cluster is on a network of its
// own, and reaches the others' pods only through their east-west gateways
// (Istio's "primary-remote on different networks" and "multi-primary on
// different networks"). The rules:
//
//   - two clusters on one network: rejected (each needs its own network);
//   - primary-remote: a remote's primary must be a primary of the mesh; a
//     remote that names none needs the mesh to have exactly one primary;
//     a primary that remotes use needs eastWestGateway.address, the
//     address the remotes reach its istiod at (global.remotePilotAddress);
//   - multi-primary: no remotes, and no primary fields;
//   - primary set on a primary: rejected (it names a remote's primary);
//   - the gateway's node group must be a group of that cluster that never
//     scales to zero: an onprem group, or a gce-static group of size at
//     least 1 (a gce group is sized by the autoscaler, down to its min);
//   - the gateway's node group is not Spot (a preemption takes its nodes);
//   - extra ports: no port (per protocol) used twice, none of Istio's
//     own (15021, 15443, 15012, 15017), no name used twice or one of the
//     gateway's own port names; no target port one of the gateway pod's
//     own listeners (those and 15090) or another extra port's;
//   - istioVersion: a release nodegen's table knows, supported on every
//     cluster's Kubernetes minor, unless acceptUnknownIstioVersion;
//   - Service: annotation keys valid Kubernetes annotation keys;
//     loadBalancerIP only with type LoadBalancer.
//
// Mesh clusters that are not clusters of the fleet are reported by Fleet.
func Mesh(l *source.Loaded) diag.List {
	if l.Fleet == nil || l.Fleet.Single || l.Fleet.Mesh == nil || l.Broken.Mesh {
		return nil
	}
	return MeshOf(l.Fleet, l, func(cluster string) *source.Broken {
		if l.Broken.Clusters[cluster] {
			return nil
		}
		if m := l.Member(cluster); m != nil {
			return &m.Broken
		}
		return nil
	})
}

// MeshOf checks f's mesh with positions from pos (the source's root).
// broken returns what did not decode of a cluster, nil when the cluster
// is missing or did not decode at all.
func MeshOf(f *model.Fleet, pos Positioner, broken func(cluster string) *source.Broken) diag.List {
	c := &checker{pos: pos}
	m := f.Mesh
	base := func(name string, parts ...any) []cue.Selector {
		return append(sel("mesh", "clusters", name), sel(parts...)...)
	}

	// Networks: one per cluster.
	onNetwork := map[string]string{}
	for _, name := range m.Names() {
		mc := m.Clusters[name]
		if first, ok := onNetwork[mc.Network]; ok {
			c.at(base(name, "network"), "clusters %q and %q are both on network %q: nodegen's mesh is multi-network (a cluster reaches another's pods only through its east-west gateway), so every cluster needs a network of its own", first, name, mc.Network)
			continue
		}
		onNetwork[mc.Network] = name
	}

	// Roles.
	primaries := m.Primaries()
	for _, name := range m.Names() {
		mc := m.Clusters[name]
		switch {
		case m.Model == model.MeshMultiPrimary && mc.Role == model.MeshRoleRemote:
			c.at(base(name, "role"), "a multi-primary mesh has no remotes: every cluster runs its own istiod; make %q a primary, or make the mesh's model \"primary-remote\"", name)
		case m.Model == model.MeshMultiPrimary && mc.Primary != "":
			c.at(base(name, "primary"), "a multi-primary mesh has no remotes, so no cluster names a primary; remove it")
		case mc.Role == model.MeshRolePrimary && mc.Primary != "":
			c.at(base(name, "primary"), "%q is a primary: primary names the primary whose istiod a remote uses; remove it", name)
		case mc.Role == model.MeshRoleRemote && mc.Primary != "":
			p := m.Clusters[mc.Primary]
			switch {
			case p == nil:
				if s := diag.SuggestNames(mc.Primary, m.Names()); len(s) > 0 {
					c.at(base(name, "primary"), "no cluster %q in the mesh; did you mean %s?", mc.Primary, diag.QuotedOrList(s))
				} else {
					c.at(base(name, "primary"), "no cluster %q in the mesh: a remote's primary must be a primary of the mesh (%s)", mc.Primary, orNone(primaries))
				}
			case p.Role != model.MeshRolePrimary:
				c.at(base(name, "primary"), "%q is a remote, not a primary: a remote uses a primary's istiod (primaries: %s)", mc.Primary, orNone(primaries))
			}
		case mc.Role == model.MeshRoleRemote && len(primaries) != 1:
			if len(primaries) == 0 {
				c.at(base(name, "role"), "remote %q has no primary: a primary-remote mesh needs a cluster with role \"primary\", whose istiod the remotes use", name)
			} else {
				c.atKey(base(name), "remote %q names no primary and the mesh has %d (%s): set primary", name, len(primaries), strings.Join(primaries, ", "))
			}
		}
	}
	if m.Model == model.MeshPrimaryRemote {
		for _, p := range primaries {
			remotes := m.RemotesOf(p)
			if len(remotes) > 0 && m.Clusters[p].EastWestGateway.Address == "" {
				c.atKey(base(p, "eastWestGateway"), "remotes %s reach the istiod of %q through its east-west gateway: set address to the address they reach it at (an IP address or a DNS name; with a fixed loadBalancerIP, that address)", strings.Join(quoted(remotes), ", "), p)
			}
		}
	}

	c.trust(m)
	c.istioRelease(f, false)
	c.sharedAddresses(m)
	ranges := declaredRanges(m)
	for _, name := range m.Names() {
		c.gateway(f, name, base(name, "eastWestGateway"), broken)
		c.reach(f, name, base(name, "eastWestGateway"))
		c.gatewayAddresses(f, name, base(name, "eastWestGateway"), ranges)
		c.rendered(f, name, base(name, "eastWestGateway"))
	}
	c.meshOverVPN(f, broken)
	c.onpremGatewayOverVPN(f, broken)
	return c.list.Sorted()
}

// gateway checks one cluster's east-west gateway.
func (c *checker) gateway(f *model.Fleet, name string, p []cue.Selector, broken func(string) *source.Broken) {
	gw := &f.Mesh.Clusters[name].EastWestGateway
	if src := f.Cluster(name); src != nil {
		if b := broken(name); b != nil && !b.Groups[gw.NodeGroup] {
			c.gatewayGroup(src, gw, join(p, "nodeGroup"))
		}
	}

	svc := join(p, "service")
	if typ := gw.ServiceType(); gw.Service.LoadBalancerIP != "" && typ != model.ServiceLoadBalancer {
		c.at(join(svc, "loadBalancerIP"), "loadBalancerIP applies to a Service of type LoadBalancer, and this one is %s: remove it or make the type \"LoadBalancer\"", typ)
	}
	for _, k := range model.SortedKeys(gw.Service.Annotations) {
		if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
			c.atKey(join(svc, "annotations", k), "invalid annotation key %q: %s", k, strings.Join(errs, "; "))
		}
	}

	type portKey struct {
		port     int
		protocol string
	}
	ports := map[portKey]string{}
	names := map[string]string{}
	for _, mp := range model.MeshPorts {
		ports[portKey{mp.Port, mp.Protocol}] = "Istio's " + mp.Name
		names[mp.Name] = "Istio's own port " + fmt.Sprint(mp.Port)
	}
	// Target ports: the gateway pod's own listeners, and one listener per
	// pod port. Istio turns a Gateway server's port into a listener on the
	// Service's targetPort; the gateway's Envoy already listens on 15021
	// (health), 15090 (Prometheus metrics), 15443 (cross-network mTLS) and,
	// through the east-west Gateway, 15012 and 15017 (istiod): "Ports used
	// by Istio", https://istio.io/latest/docs/ops/deployment/application-requirements/
	// (istio/istio.io content/en/docs/ops/deployment/application-requirements/index.md).
	targets := map[portKey]string{}
	for _, mp := range model.MeshPorts {
		targets[portKey{mp.TargetPort, mp.Protocol}] = "the gateway's own " + mp.Name + " listener"
	}
	targets[portKey{meshPortPrometheus, "TCP"}] = "the gateway's own Prometheus metrics listener (http-envoy-prom)"
	for i, ep := range gw.ExtraPorts {
		ip := join(p, "extraPorts", i)
		tk := portKey{ep.TargetPort, ep.Protocol}
		at := join(ip, "targetPort")
		if ep.TargetPort == 0 {
			tk.port, at = ep.Port, join(ip, "port")
		}
		if tk.protocol == "" {
			tk.protocol = "TCP"
		}
		_, ownPort := ports[portKey{ep.Port, tk.protocol}]
		switch owner, taken := targets[tk]; {
		case taken && ep.TargetPort == 0 && ownPort:
			// The port itself is Istio's: reported below.
		case taken:
			c.at(at, "target port %d/%s is %s: the gateway pod would have two listeners on one port; pick another target port", tk.port, tk.protocol, owner)
		default:
			targets[tk] = fmt.Sprintf("the target port of extra port %q", ep.Name)
		}
		k := portKey{ep.Port, ep.Protocol}
		if k.protocol == "" {
			k.protocol = "TCP"
		}
		if owner, ok := ports[k]; ok {
			if slices.ContainsFunc(model.MeshPorts, func(mp model.GatewayPort) bool { return mp.Port == ep.Port }) {
				c.at(join(ip, "port"), "port %d/%s is %s port on the east-west gateway (15021 status, 15443 cross-network mTLS, 15012 istiod, 15017 istiod webhook): pick another port", ep.Port, k.protocol, owner)
			} else {
				c.at(join(ip, "port"), "port %d/%s is already opened by extra port %s", ep.Port, k.protocol, owner)
			}
		} else {
			ports[k] = fmt.Sprintf("%q", ep.Name)
		}
		c.listener(ep, ip)
		if owner, ok := names[ep.Name]; ok {
			c.at(join(ip, "name"), "port name %q is already used by %s: Service port names must be unique", ep.Name, owner)
		} else {
			names[ep.Name] = fmt.Sprintf("extra port %d", ep.Port)
		}
	}
}

// meshPortPrometheus is the port the gateway's Envoy serves its
// Prometheus metrics on (http-envoy-prom).
const meshPortPrometheus = 15090

// gatewayGroup checks that the gateway's group is a group of its cluster
// that never scales to zero.
func (c *checker) gatewayGroup(src *model.Source, gw *model.EastWestGateway, p []cue.Selector) {
	g := src.NodeGroups[gw.NodeGroup]
	if g == nil {
		names := model.SortedKeys(src.NodeGroups)
		if s := diag.SuggestNames(gw.NodeGroup, names); len(s) > 0 {
			c.at(p, "no node group %q in cluster %q; did you mean %s?", gw.NodeGroup, src.Cluster.Name, diag.QuotedOrList(s))
		} else {
			c.at(p, "no node group %q in cluster %q (groups: %s)", gw.NodeGroup, src.Cluster.Name, strings.Join(names, ", "))
		}
		return
	}
	c.notOnAutoscalerHome(src, g, "east-west gateway", p)
	switch {
	case g.Kind == model.KindGCE:
		c.at(p, "node group %q is autoscaled (kind \"gce\", min %d): the autoscaler can remove the nodes the east-west gateway runs on, down to zero, and the mesh loses its way into %q; place the gateway on an onprem group or a gce-static group", g.Name, g.Min, src.Cluster.Name)
	case g.Kind == model.KindGCEStatic && g.Min < 1:
		c.at(p, "node group %q has size 0: the east-west gateway would have no node to run on", g.Name)
	case g.Spot:
		c.at(p, "node group %q is Spot: GCE preempts its VMs at any time (all of them at once when Spot capacity runs out), and while the east-west gateway has no node the other clusters lose their way into %q (and its remotes their istiod); place the gateway on a group that is not Spot", g.Name, src.Cluster.Name)
	}
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(quoted(names), ", ")
}

// istioRelease judges mesh.istioVersion by nodegen's table of Istio
// releases (model.IstioReleases): a version the table does not know, and
// one whose line Istio does not support on a cluster's Kubernetes minor,
// are errors unless mesh.acceptUnknownIstioVersion says the source means
// it; then they are warnings (warnings selects which are reported).
func (c *checker) istioRelease(f *model.Fleet, warnings bool) {
	m := f.Mesh
	noEffect := func(why string) {
		if m.AcceptUnknownIstioVersion && !warnings {
			c.at(sel("mesh", "acceptUnknownIstioVersion"), "acceptUnknownIstioVersion has no effect: %s; remove it (while it is set, a mistyped istioVersion is only a warning)", why)
		}
	}
	if m.IstioVersion == "" {
		noEffect("the mesh names no istioVersion")
		return
	}
	at := sel("mesh", "istioVersion")
	r, err := model.LookupIstioRelease(m.IstioVersion)
	if err != nil {
		if !warnings {
			c.at(at, "%v", err)
		}
		return
	}
	accept := m.AcceptUnknownIstioVersion
	// The clusters whose Kubernetes minor the release's line is not
	// supported on, by minor.
	byMinor := map[int][]string{}
	var minors []int
	for _, name := range m.Names() {
		src := f.Cluster(name)
		if src == nil {
			continue // Fleet reports it
		}
		v, err := model.ParseKubeVersion(src.Cluster.ControlPlane())
		if err != nil || !v.Supported() || r.SupportsKubernetes(v.Minor) {
			continue // an unsupported version has its own finding
		}
		if byMinor[v.Minor] == nil {
			minors = append(minors, v.Minor)
		}
		byMinor[v.Minor] = append(byMinor[v.Minor], quote(name))
	}
	slices.Sort(minors)
	if r.Known && len(minors) == 0 {
		noEffect(fmt.Sprintf("nodegen's table knows Istio %s, supported on every mesh cluster's Kubernetes minor", m.IstioVersion))
	}
	if warnings != accept {
		return
	}
	prefix, fix := "", "; set mesh.acceptUnknownIstioVersion: true to use it on purpose"
	if accept {
		prefix, fix = "warning: ", ""
	}
	if !r.Known {
		msg := fmt.Sprintf("%snodegen's table of Istio releases (newest %s) does not know istioVersion %s", prefix, model.NewestIstioRelease(), m.IstioVersion)
		if !accept {
			msg += "; a typo, or a release nodegen has not read (docs/mesh.md lists those it knows)"
		}
		c.at(at, "%s%s", msg, fix)
		if r.IstioMinor.Minor == 0 {
			return // no line to judge the clusters' versions by
		}
	}
	for _, minor := range minors {
		names := byMinor[minor]
		which := "cluster " + names[0] + "'s control plane runs"
		if len(names) > 1 {
			which = "clusters " + strings.Join(names, ", ") + " run"
		}
		alt := "no Istio release nodegen knows is"
		if rels := model.IstioReleasesFor(minor); len(rels) > 0 {
			alt = "the releases supported there are " + strings.Join(rels, ", ") + ";"
		}
		c.at(at, "%sIstio 1.%d is supported on Kubernetes %s (Istio's support status table, istio.io docs/releases/supported-releases), and %s Kubernetes 1.%d: %s pick one%s",
			prefix, r.Minor, r.KubernetesRange(), which, minor, alt, fix)
	}
}

// MeshWarnings returns what is valid but risky in a valid source's mesh:
// an istioVersion the source accepts although nodegen's table does not
// know it or Istio does not support it on a cluster's Kubernetes minor.
func MeshWarnings(l *source.Loaded) diag.List {
	if l.Fleet == nil || l.Fleet.Single || l.Fleet.Mesh == nil || l.Broken.Mesh {
		return nil
	}
	c := &checker{pos: l}
	c.istioRelease(l.Fleet, true)
	return c.list.Sorted()
}
