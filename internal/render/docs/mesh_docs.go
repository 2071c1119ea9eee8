package docs

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// istioChartRepo is the Helm repository of the official Istio charts.
const istioChartRepo = "https://istio-release.storage.googleapis.com/charts"

// Mesh renders the cluster's docs/mesh.md: the mesh drawn (clusters,
// networks, gateways, istiod, each remote's link to its primary) and what
// to install in this cluster, in order, with the commands.
func Mesh(f *model.Fleet, src *model.Source, _ string) ([]byte, error) {
	mc, err := f.InMesh(src)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	d := &docWriter{b: &b, src: src}
	m := f.Mesh
	name := src.Cluster.Name
	d.p("%s# Istio mesh %s: cluster %s\n\n", markdownHeader(src.Name), code(m.ID), code(name))
	switch mc.Role {
	case model.MeshRolePrimary:
		d.p("Mesh model %s, one network per cluster. This cluster is a **primary** on network %s: it runs istiod", code(m.Model), code(mc.Network))
		if remotes := m.RemotesOf(name); m.Model == model.MeshPrimaryRemote && len(remotes) > 0 {
			d.p(", which also serves the remotes %s through this cluster's east-west gateway", codeList(remotes))
		}
		d.p(".\n")
	case model.MeshRoleRemote:
		d.p("Mesh model %s, one network per cluster. This cluster is a **remote** on network %s: it runs no istiod of its own and uses the istiod of %s, reached through that cluster's east-west gateway at %s.\n",
			code(m.Model), code(mc.Network), code(m.PrimaryOf(name)), code(m.Clusters[m.PrimaryOf(name)].EastWestGateway.Address))
	}
	meshDrawing(d, f)
	meshInstall(d, f, src, mc)
	return b.Bytes(), nil
}

func codeList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = code(n)
	}
	return strings.Join(out, ", ")
}

// meshDrawing draws the mesh: a box per network holding its cluster, the
// cluster's istiod (primaries) and east-west gateway; cross-network
// traffic between the gateways; each remote's link to its primary's
// istiod through that primary's gateway; the remote secrets.
func meshDrawing(d *docWriter, f *model.Fleet) {
	m := f.Mesh
	d.p("\n## The mesh\n\n```mermaid\nflowchart LR\n")
	names := m.Names()
	id := map[string]int{}
	for i, n := range names {
		id[n] = i
	}
	for i, n := range names {
		mc := m.Clusters[n]
		d.p("  subgraph n%d[\"network %s\"]\n", i, mermaidText(mc.Network))
		d.p("    subgraph c%d[\"cluster %s (%s)\"]\n", i, mermaidText(n), mc.Role)
		if mc.Role == model.MeshRolePrimary {
			d.p("      i%d[\"istiod\"]\n", i)
		}
		gw := mc.EastWestGateway
		label := fmt.Sprintf("east-west gateway, node group %s, %d replicas", gw.NodeGroup, gw.Replicas)
		if gw.Address != "" {
			label += ", " + gw.Address
		}
		d.p("      g%d[\"%s\"]\n", i, mermaidText(label))
		d.p("    end\n  end\n")
	}
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			d.p("  g%d <-- \"15443 mTLS\" --> g%d\n", i, j)
		}
	}
	for _, n := range names {
		if p := m.PrimaryOf(n); p != "" {
			d.p("  c%d -- \"istiod 15012 and 15017\" --> g%d\n", id[n], id[p])
			d.p("  g%d --> i%d\n", id[p], id[p])
		}
	}
	for _, p := range m.Primaries() {
		for _, r := range m.RemoteSecretClusters(p) {
			d.p("  i%d -. \"remote secret: reads the API server\" .-> c%d\n", id[p], id[r])
		}
	}
	d.p("```\n")
}

// meshInstall writes the cluster's install steps.
func meshInstall(d *docWriter, f *model.Fleet, src *model.Source, mc *model.MeshCluster) {
	m := f.Mesh
	name := src.Cluster.Name
	ctx := "--context=" + name
	out := "out/" + src.Tree
	helm := func(release, chart, values string) string {
		v := ""
		if m.IstioVersion != "" {
			v = " --version " + m.IstioVersion
		}
		return fmt.Sprintf("helm upgrade --install %s istio/%s%s --kube-context %s -n %s -f %s%s", release, chart, v, name, model.IstioNamespace, out, values)
	}
	d.p("\n## Install, in order\n\n")
	d.p("The commands run from the directory that holds `out/` (the repository root), as those of `%sdocs/day0.md` do, after them, with a kubeconfig context named after each cluster of the mesh, and the official charts' repository added: `helm repo add istio %s`.", out, istioChartRepo)
	if m.IstioVersion != "" {
		d.p(" Every cluster installs Istio %s, the charts and `istioctl` alike.", code(m.IstioVersion))
	} else {
		d.p(" Install the same Istio version in every cluster, the charts and `istioctl` alike (set `mesh.istioVersion` to pin it here).")
	}
	d.p("\n\n")
	n := 0
	step := func(what string, cmds ...string) {
		n++
		d.p("%d. %s\n\n", n, what)
		if len(cmds) > 0 {
			d.p("   ```sh\n")
			for _, c := range cmds {
				d.p("   %s\n", c)
			}
			d.p("   ```\n\n")
		}
	}
	var nsWhat string
	if mc.Role == model.MeshRoleRemote {
		nsWhat = fmt.Sprintf("The %s namespace, labelled with the network %s and annotated with the primary %s whose istiod manages this cluster.", code(model.IstioNamespace), code(mc.Network), code(m.PrimaryOf(name)))
	} else {
		nsWhat = fmt.Sprintf("The %s namespace, labelled with the network %s.", code(model.IstioNamespace), code(mc.Network))
	}
	meshPrerequisites(d, f, src, mc)
	step(nsWhat, fmt.Sprintf("kubectl %s apply -f %s%s", ctx, out, layout.IstioNamespacePath))
	if what, cmds := trustStep(m, src, mc); what != "" {
		step(what, cmds...)
	}
	if mc.Role == model.MeshRoleRemote {
		step("Istio's CRDs and the istio-reader ServiceAccount (base chart, remote profile).", helm(model.IstioBaseRelease, "base", layout.IstioBaseValuesPath))
		step(fmt.Sprintf("The remote profile of istiod: no istiod here; the injection webhook and the %s Service point at the primary's east-west gateway.", code("istiod")), helm(model.IstiodRelease, "istiod", layout.IstiodValuesPath))
		p := m.PrimaryOf(name)
		step(fmt.Sprintf("Attach this cluster to %s (whose istiod must be exposed already): a remote secret, made here from the istio-reader ServiceAccount's token and applied in %s, lets its istiod read this cluster's API server and accept this cluster's workloads, the east-west gateway's pods among them. It goes straight from `istioctl` to the primary: no credential is written to a file.", code(p), code(p)),
			remoteSecret(name, p))
	} else {
		step("Istio's CRDs and the istio-reader ServiceAccount (base chart).", helm(model.IstioBaseRelease, "base", layout.IstioBaseValuesPath))
		step("istiod, with the mesh ID, this cluster's name and network.", helm(model.IstiodRelease, "istiod", layout.IstiodValuesPath))
	}
	gw := mc.EastWestGateway
	step(eastWestGatewayStep(mc, ctx), helm(model.EastWestGatewayName, "gateway", layout.EastWestGatewayValuesPath))
	step(meshGatewaysStep(m, mc, name), fmt.Sprintf("kubectl %s apply -f %s%s", ctx, out, layout.MeshManifestsPath))
	if own := extraPortList(&gw, false); own != "" {
		d.p("   Your own Gateways serve the other extra ports: %s.\n\n", own)
	}

	// Remote secrets: the primary's istiod reads the other clusters' API
	// servers with the istio-reader ServiceAccount of each.
	if mc.Role == model.MeshRolePrimary {
		if others := m.RemoteSecretClusters(name); len(others) > 0 {
			var cmds []string
			for _, o := range others {
				cmds = append(cmds, remoteSecret(o, name))
			}
			step(fmt.Sprintf("Once %s has its base and istiod charts installed: give this cluster's istiod read access to its API server with a remote secret, made from that cluster's istio-reader ServiceAccount. It goes straight from `istioctl` to this cluster: no credential is written to a file.", codeList(others)), cmds...)
		}
	}
}

// eastWestGatewayStep says what the east-west gateway's install step
// installs, and how to check the address of its Service (with kubectl's
// context flag ctx).
func eastWestGatewayStep(mc *model.MeshCluster, ctx string) string {
	gw := mc.EastWestGateway
	gwWhat := fmt.Sprintf("The east-west gateway (%d replicas on node group %s, ports 15021, 15443, 15012, 15017", gw.Replicas, code(gw.NodeGroup))
	for _, p := range gw.ExtraPorts {
		gwWhat += fmt.Sprintf(", %d", p.Port)
	}
	gwWhat += ").\n\n   "
	switch addr := cmp.Or(gw.Address, gw.Service.LoadBalancerIP); {
	case len(gw.ExternalIPs()) > 0:
		gwWhat += fmt.Sprintf("Its Service lists %s in `externalIPs`: kube-proxy forwards that address's traffic to the gateway's pods, and istiod announces it as the gateway of network %s. Check: ", code(addr), code(mc.Network))
	case addr != "":
		gwWhat += fmt.Sprintf("Check that its Service's address is %s, the address the source gives: ", code(addr))
	default:
		gwWhat += "Its Service's address: "
	}
	return gwWhat + fmt.Sprintf("`kubectl %s -n %s get service %s`.", ctx, model.IstioNamespace, model.EastWestGatewayName)
}

// meshGatewaysStep says what the step applying the mesh's Gateways and
// VirtualServices of cluster name applies.
func meshGatewaysStep(m *model.Mesh, mc *model.MeshCluster, name string) string {
	gw := mc.EastWestGateway
	what := "The cross-network Gateway (port 15443, `AUTO_PASSTHROUGH`, hosts `*.local`)"
	if mc.Role == model.MeshRolePrimary && m.Model == model.MeshPrimaryRemote && len(m.RemotesOf(name)) > 0 {
		what += ", and istiod's exposure on the east-west gateway for the remotes (Gateway and VirtualService, ports 15012 and 15017)"
	}
	if len(gw.ListenerPorts()) > 0 {
		what += fmt.Sprintf(", and the Gateway %s with a server on each extra port nodegen serves (%s)", code(model.ExtraPortsGatewayName), extraPortList(&gw, true))
	}
	return what + "."
}

// remoteSecret is the command that makes from's remote secret and applies
// it in into.
func remoteSecret(from, into string) string {
	return fmt.Sprintf("istioctl create-remote-secret --context=%s --name=%s | kubectl apply -f - --context=%s", from, from, into)
}

// extraPortList lists the extra ports with a listener nodegen renders
// (listener true) or served by the operator's own Gateway.
func extraPortList(gw *model.EastWestGateway, listener bool) string {
	var out []string
	for _, p := range gw.ExtraPorts {
		switch {
		case listener && p.Listener != nil:
			out = append(out, fmt.Sprintf("%d %s", p.Port, p.Listener.Protocol))
		case !listener && p.Listener == nil && p.Gateway != "":
			out = append(out, fmt.Sprintf("%d by %s", p.Port, code(p.Gateway)))
		}
	}
	return strings.Join(out, ", ")
}

// meshPrerequisites writes what must exist before the install steps: what
// provides the gateway's address.
func meshPrerequisites(d *docWriter, f *model.Fleet, src *model.Source, mc *model.MeshCluster) {
	gw := &mc.EastWestGateway
	r := gw.ReachedThrough
	if r == nil {
		return
	}
	d.p("Before the steps, the way to the east-west gateway:\n\n")
	switch {
	case r.InternalLoadBalancer != nil:
		d.p("- The internal passthrough load balancer at %s is part of this cluster's Terraform module (`%s`: the reserved address, the forwarding rule of ports %s, the regional backend service over the MIGs of node group %s, the health check on port %d `%s`, and the firewall rule for Google's health-check ranges %s", code(gw.Address), layout.MeshLBPath, joinPorts(gw.LoadBalancerPorts()), code(gw.NodeGroup), model.MeshPortStatus, model.MeshHealthPath, strings.Join(gce.HealthCheckRanges, " and "))
		if rs := r.InternalLoadBalancer.SourceRanges; len(rs) > 0 {
			d.p(", and one for the other clusters' ranges %s", strings.Join(rs, ", "))
		}
		d.p("). It is applied with the module, by `terraform apply` in your root module (its `module` block's `source` is `./out/%s%s`, as in the README's Terraform section and day0.md's Terraform step), with `network` set; the health check passes once the gateway runs.\n\n", src.Tree, layout.TerraformDir)
	case r.Router != nil:
		name := cmp.Or(r.Router.Name, "The router")
		d.p("- %s delivers the traffic for %s to the nodes of node group %s, with %s as its destination, on ports %s (its own setup, outside nodegen).\n\n", mdText(upperFirst(name)), code(gw.Address), code(gw.NodeGroup), code(gw.Address), joinPorts(routedPorts(gw)))
	case r.LoadBalancerController != nil:
		lb := r.LoadBalancerController
		d.p("- %s runs in this cluster and serves Services of type LoadBalancer", mdText(lb.Name))
		if lb.LoadBalancerClass != "" {
			d.p(" of class %s", code(lb.LoadBalancerClass))
		}
		if a := cmp.Or(gw.Service.LoadBalancerIP, gw.Address); a != "" {
			d.p(", with %s in one of its address pools", code(a))
		}
		d.p(": a prerequisite of the east-west gateway's Service, which otherwise never gets an address (the cluster has no cloud controller).\n\n")
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// routedPorts are the gateway's ports a router delivers: all but the
// status port, which only health checks use.
func routedPorts(gw *model.EastWestGateway) []int {
	var out []int
	for _, p := range gw.Ports() {
		if p.Port != model.MeshPortStatus {
			out = append(out, p.Port)
		}
	}
	return out
}

func joinPorts(ps []int) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprint(p)
	}
	return strings.Join(out, ", ")
}

// CACertsDir is where the install steps expect a cluster's intermediate
// CA files, relative to the directory that holds out/ (where the steps
// run): outside out/'s generated files, never written by nodegen.
func CACertsDir(cluster string) string { return "cacerts/" + cluster }

// trustStep is the install step of the mesh's root of trust in this
// cluster, before istiod: the plugin CA's cacerts Secret, or the external
// CA as a prerequisite. "" when the mesh names none.
func trustStep(m *model.Mesh, src *model.Source, mc *model.MeshCluster) (string, []string) {
	t := m.Trust
	name := src.Cluster.Name
	switch {
	case t == nil:
		return "", nil
	case t.PluginCA != nil:
		if mc.Role == model.MeshRoleRemote {
			return "", nil // the primary's istiod signs for this cluster
		}
		dir := CACertsDir(name)
		var b strings.Builder
		fmt.Fprintf(&b, "The mesh's root of trust: this cluster's istiod signs with an intermediate CA of its own, made from the mesh's one root, which stays off the clusters. Make it into %s, outside the generated tree (Istio's `tools/certs` of release %s does it: `make -f Makefile.selfsigned.mk %s-cacerts`, after `root-ca` once for the mesh), then give it to istiod as the Secret %s in %s before istiod starts (istiod reads the Secret only at start). Its keys, all PEM:\n\n", code(dir+"/"), cmp.Or(m.IstioVersion, "the one you install"), name, code(model.CACertsSecret), code(model.IstioNamespace))
		for _, k := range model.CACertsKeys {
			fmt.Fprintf(&b, "   - %s: %s\n", code(k), caKeyDoc[k])
		}
		b.WriteString("\n   No key is in a file nodegen writes: the command reads them from that directory.")
		args := []string{fmt.Sprintf("kubectl --context=%s -n %s create secret generic %s", name, model.IstioNamespace, model.CACertsSecret)}
		for _, k := range model.CACertsKeys {
			args = append(args, fmt.Sprintf("--from-file=%s=%s/%s", k, dir, k))
		}
		return b.String(), []string{strings.Join(args, " ")}
	case t.ExternalCA != nil:
		if mc.Role == model.MeshRoleRemote {
			return "", nil
		}
		return fmt.Sprintf("The mesh's root of trust: %s issues this cluster's workload certificates from the mesh's one root. Install and configure it, as its own documentation says, before istiod: a prerequisite nodegen does not render.", mdText(t.ExternalCA.Name)), nil
	}
	return "", nil
}

var caKeyDoc = map[string]string{
	model.CACertFile:     "this cluster's intermediate CA certificate",
	model.CAKeyFile:      "its private key",
	model.CARootCertFile: "the mesh's root certificate, the same in every cluster",
	model.CACertChain:    "the chain from the intermediate to the root",
}
