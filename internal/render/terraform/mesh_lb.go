package terraform

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/model"
)

// The GCP internal passthrough load balancer in front of a cloud
// cluster's east-west gateway (reachedThrough.internalLoadBalancer), in
// its own file of the cluster's Terraform module (layout.MeshLBPath).
//
// The load balancer delivers packets to the gateway group's VMs with the
// forwarding rule's address as their destination. The gateway's Service
// lists that address in externalIPs, so kube-proxy on every node forwards
// them to the gateway's pods, and istiod reads it as the network's gateway
// address: no cloud controller is involved. Google's health checks probe
// the forwarding rule's address on the status port 15021 (the gateway's
// /healthz/ready), from 35.191.0.0/16 and 130.211.0.0/22.

// Terraform names of the load balancer's resources.
const (
	meshLBTFName         = "eastwest_gateway"
	meshLBHealthFirewall = "eastwest_gateway_health_checks"
	meshLBClientFirewall = "eastwest_gateway_clients"
)

// internalLB returns the gateway's load balancer settings, or nil when
// nodegen renders none for it.
func internalLB(mc *model.MeshCluster) *model.InternalLoadBalancer {
	if r := mc.EastWestGateway.ReachedThrough; r != nil {
		return r.InternalLoadBalancer
	}
	return nil
}

// meshLBName is a GCP resource name of the load balancer (model.MeshLBName).
func meshLBName(src *model.Source, what string) string {
	return model.MeshLBName(src.Cluster.Name, what)
}

// exprTokens parses a Terraform expression nodegen writes (never one with
// user text: that goes in as cty values).
func exprTokens(expr string) hclwrite.Tokens {
	f, diags := hclwrite.ParseConfig([]byte("x = "+expr+"\n"), "expr", hcl.InitialPos)
	if diags.HasErrors() {
		panic(fmt.Sprintf("render: expression %q: %s", expr, diags.Error()))
	}
	return f.Body().GetAttribute("x").Expr().BuildTokens(nil)
}

func ints(ns []int) cty.Value {
	vals := make([]cty.Value, len(ns))
	for i, n := range ns {
		vals[i] = cty.StringVal(fmt.Sprint(n))
	}
	return cty.ListVal(vals)
}

// MeshLoadBalancer renders the cluster's internal load balancer for its
// east-west gateway; nil when the gateway is not reached through one.
func MeshLoadBalancer(f *model.Fleet, src *model.Source, header string) ([]byte, error) {
	mc := f.MeshCluster(src)
	if mc == nil {
		return nil, fmt.Errorf("cluster %q is not in the mesh", src.Cluster.Name)
	}
	lb := internalLB(mc)
	if lb == nil {
		return nil, nil
	}
	gw := &mc.EastWestGateway
	g := src.NodeGroups[gw.NodeGroup]
	if g == nil || g.Kind != model.KindGCEStatic {
		return nil, fmt.Errorf("east-west gateway group %q: an internal load balancer needs a gce-static group", gw.NodeGroup)
	}
	if gw.Address == "" {
		return nil, fmt.Errorf("east-west gateway: an internal load balancer needs its address")
	}
	ports := gw.LoadBalancerPorts()

	hf := hclwrite.NewEmptyFile()
	body := hf.Body()
	meshLBAddress(body, src, mc)
	meshLBBackend(body, src, g)
	meshLBForwardingRule(body, src, ports)
	meshLBFirewall(body, src, meshLBHealthFirewall, "Google's health-check probes, to the status port.", gce.HealthCheckRanges, []int{model.MeshPortStatus})
	if len(lb.SourceRanges) > 0 {
		meshLBFirewall(body, src, meshLBClientFirewall, "The other clusters' traffic, from the source's sourceRanges, to the forwarded ports.", lb.SourceRanges, ports)
	}
	return hclFile(header, hf), nil
}

// meshLBAddress writes what the load balancer is, the subnetwork it is
// in, and its reserved address.
func meshLBAddress(body *hclwrite.Body, src *model.Source, mc *model.MeshCluster) {
	gw := &mc.EastWestGateway
	comment(body,
		fmt.Sprintf("The internal passthrough load balancer of the east-west gateway of cluster %s", src.Cluster.Name),
		fmt.Sprintf("(mesh network %s), at %s: what the other clusters of the mesh reach the", mc.Network, gw.Address),
		"gateway at. It delivers packets addressed to it to the gateway group's VMs;",
		"the gateway's Service lists the address in externalIPs, so kube-proxy",
		"forwards them to the gateway's pods and istiod announces the address.")

	body.AppendNewline()
	loc := body.AppendNewBlock("locals", nil).Body()
	comment(loc, "The subnetwork as a path in its project (a Shared VPC's too).")
	loc.SetAttributeRaw("eastwest_gateway_subnetwork", exprTokens(
		`startswith(var.subnetwork, "projects/") || startswith(var.subnetwork, "https://") ? var.subnetwork : "projects/${coalesce(var.subnetwork_project, local.project)}/regions/${local.region}/subnetworks/${var.subnetwork}"`))

	body.AppendNewline()
	comment(body, "The reserved address: the remotes' remotePilotAddress and the gateway Service's externalIPs.")
	a := body.AppendNewBlock("resource", []string{gce.TFAddress, meshLBTFName}).Body()
	a.SetAttributeRaw("project", ref("local", "project"))
	a.SetAttributeRaw("region", ref("local", "region"))
	a.SetAttributeValue("name", cty.StringVal(meshLBName(src, "")))
	a.SetAttributeValue("description", cty.StringVal(fmt.Sprintf("nodegen: east-west gateway of cluster %s", src.Cluster.Name)))
	a.SetAttributeValue("address_type", cty.StringVal("INTERNAL"))
	a.SetAttributeValue("address", cty.StringVal(gw.Address))
	a.SetAttributeRaw("subnetwork", ref("local", "eastwest_gateway_subnetwork"))
}

// meshLBBackend writes the health check and the backend service of the
// gateway group's MIGs.
func meshLBBackend(body *hclwrite.Body, src *model.Source, g *model.NodeGroup) {
	body.AppendNewline()
	comment(body, fmt.Sprintf("Ready when the gateway is: its status port %d, %s.", model.MeshPortStatus, model.MeshHealthPath))
	h := body.AppendNewBlock("resource", []string{gce.TFRegionHealthCheck, meshLBTFName}).Body()
	h.SetAttributeRaw("project", ref("local", "project"))
	h.SetAttributeRaw("region", ref("local", "region"))
	h.SetAttributeValue("name", cty.StringVal(meshLBName(src, "")))
	h.SetAttributeValue("check_interval_sec", cty.NumberIntVal(5))
	h.SetAttributeValue("timeout_sec", cty.NumberIntVal(5))
	h.AppendNewline()
	hc := h.AppendNewBlock("http_health_check", nil).Body()
	hc.SetAttributeValue("port", cty.NumberIntVal(model.MeshPortStatus))
	hc.SetAttributeValue("request_path", cty.StringVal(model.MeshHealthPath))

	body.AppendNewline()
	comment(body, fmt.Sprintf("The gateway group's MIGs (node group %s), one per zone.", g.Name))
	bs := body.AppendNewBlock("resource", []string{gce.TFRegionBackend, meshLBTFName}).Body()
	bs.SetAttributeRaw("project", ref("local", "project"))
	bs.SetAttributeRaw("region", ref("local", "region"))
	bs.SetAttributeValue("name", cty.StringVal(meshLBName(src, "")))
	bs.SetAttributeValue("load_balancing_scheme", cty.StringVal("INTERNAL"))
	bs.SetAttributeValue("protocol", cty.StringVal("TCP"))
	bs.SetAttributeRaw("health_checks", hclwrite.TokensForTuple([]hclwrite.Tokens{ref(gce.TFRegionHealthCheck, meshLBTFName, "id")}))
	for _, z := range g.Zones {
		bs.AppendNewline()
		b := bs.AppendNewBlock("backend", nil).Body()
		b.SetAttributeRaw("group", ref(gce.TFGroupManager, terraformName(g.Name, z), "instance_group"))
		b.SetAttributeValue("balancing_mode", cty.StringVal("CONNECTION"))
	}
}

// meshLBForwardingRule writes the forwarding rule of the address to the
// backend service, for ports.
func meshLBForwardingRule(body *hclwrite.Body, src *model.Source, ports []int) {
	body.AppendNewline()
	fr := body.AppendNewBlock("resource", []string{gce.TFForwardingRule, meshLBTFName}).Body()
	fr.SetAttributeRaw("project", ref("local", "project"))
	fr.SetAttributeRaw("region", ref("local", "region"))
	fr.SetAttributeValue("name", cty.StringVal(meshLBName(src, "")))
	fr.SetAttributeValue("load_balancing_scheme", cty.StringVal("INTERNAL"))
	fr.SetAttributeRaw("backend_service", ref(gce.TFRegionBackend, meshLBTFName, "id"))
	fr.SetAttributeRaw("ip_address", ref(gce.TFAddress, meshLBTFName, "address"))
	fr.SetAttributeValue("ip_protocol", cty.StringVal("TCP"))
	fr.SetAttributeValue("ports", ints(ports))
	fr.SetAttributeRaw("subnetwork", ref("local", "eastwest_gateway_subnetwork"))
	fr.SetAttributeValue("allow_global_access", cty.True)
}

// meshLBFirewall writes the firewall rule name (documented by doc) that
// lets ranges reach the load balancer's address on fwPorts.
func meshLBFirewall(body *hclwrite.Body, src *model.Source, name, doc string, ranges []string, fwPorts []int) {
	body.AppendNewline()
	comment(body, doc)
	fw := body.AppendNewBlock("resource", []string{gce.TFFirewall, name}).Body()
	fw.SetAttributeRaw("project", exprTokens("coalesce(var.subnetwork_project, local.project)"))
	fw.SetAttributeValue("name", cty.StringVal(meshLBName(src, map[string]string{meshLBHealthFirewall: model.MeshLBHealthChecksSuffix, meshLBClientFirewall: model.MeshLBClientsSuffix}[name])))
	fw.SetAttributeRaw("network", ref("var", "network"))
	fw.SetAttributeValue("direction", cty.StringVal("INGRESS"))
	fw.SetAttributeValue("source_ranges", strs(ranges))
	comment(fw, "Only packets to the load balancer's address: no other port of the nodes opens.")
	fw.SetAttributeRaw("destination_ranges", hclwrite.TokensForTuple([]hclwrite.Tokens{exprTokens(`"${` + gce.TFAddress + "." + meshLBTFName + `.address}/32"`)}))
	fw.AppendNewline()
	al := fw.AppendNewBlock("allow", nil).Body()
	al.SetAttributeValue("protocol", cty.StringVal("tcp"))
	al.SetAttributeValue("ports", ints(fwPorts))
	fw.AppendNewline()
	lc := fw.AppendNewBlock("lifecycle", nil).Body()
	pc := lc.AppendNewBlock("precondition", nil).Body()
	pc.SetAttributeRaw("condition", exprTokens("var.network != null"))
	pc.SetAttributeValue("error_message", cty.StringVal("The east-west gateway's firewall rules need var.network: set it to the network of var.subnetwork."))
}
