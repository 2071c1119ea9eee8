package render

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/nodegen/nodegen/internal/model"
)

// Autohealing of the fixed-size (gce-static) groups' MIGs: the autoscaler
// replaces neither their VMs nor a VM whose kubelet died, so the MIG does,
// when the VM stops answering the kubelet's health endpoint.
const (
	// TFHealthCheck is the Terraform resource type of the health check
	// (the firewall rule that lets it reach the nodes is a TFFirewall).
	TFHealthCheck = "google_compute_health_check"
	// KubeletHealthzPort and KubeletHealthzPath are the kubelet's own
	// health endpoint (KubeletConfiguration healthzPort, default 10248;
	// plain HTTP, no authentication, body "ok"). Its default bind address
	// is 127.0.0.1; fixed-size groups bind it to every address
	// (KubeletHealthzBindAddress) so that the health checker reaches it.
	KubeletHealthzPort        = 10248
	KubeletHealthzPath        = "/healthz"
	KubeletHealthzBindAddress = "0.0.0.0"
	// Health check timing: a VM is recreated after unhealthyThreshold
	// failed checks checkInterval apart (a minute without a kubelet).
	healthCheckInterval  = 10
	healthCheckTimeout   = 5
	healthyThreshold     = 2
	unhealthyThreshold   = 6
	maxInitialDelaySec   = 3600 // the Compute API's limit of initialDelaySec
	autohealingTagSuffix = "-hc"
)

// Autohealed reports whether group g's MIGs recreate a VM whose kubelet
// stops answering: the cloud groups the autoscaler does not size.
func Autohealed(g *model.NodeGroup) bool { return g.Cloud() && !g.Autoscaled() }

// AutohealingName is the name of group g's health check and firewall rule,
// and the network tag its VMs carry for that rule: the MIGs' base instance
// name plus "-hc" (at most 61 characters, as the base leaves room for the
// MIG's 5-character instance suffix).
func AutohealingName(c *model.Cluster, g *model.NodeGroup) string {
	return c.BaseInstanceName(g) + autohealingTagSuffix
}

// AutohealingInitialDelay is how long after a VM is created the MIG
// ignores its health: the group's maxNodeProvisionTime (the VM boots and
// joins within it, or the join script gives up), at most an hour.
func AutohealingInitialDelay(c *model.Cluster, g *model.NodeGroup) (time.Duration, error) {
	d, err := c.MaxNodeProvisionTime(g)
	if err != nil {
		return 0, err
	}
	return min(d, maxInitialDelaySec*time.Second), nil
}

// templateTags is the instance template's tags: the module's network tags,
// plus, for an autohealed group, the tag its health check's firewall rule
// targets.
func templateTags(c *model.Cluster, g *model.NodeGroup) hclwrite.Tokens {
	if !Autohealed(g) {
		return ref("var", "network_tags")
	}
	return hclwrite.TokensForFunctionCall("concat", ref("var", "network_tags"),
		hclwrite.TokensForValue(cty.ListVal([]cty.Value{cty.StringVal(AutohealingName(c, g))})))
}

// autohealingPolicy adds an autohealed group's auto_healing_policies to
// its MIG m.
func autohealingPolicy(m *hclwrite.Body, c *model.Cluster, g *model.NodeGroup) error {
	if !Autohealed(g) {
		return nil
	}
	delay, err := AutohealingInitialDelay(c, g)
	if err != nil {
		return err
	}
	m.AppendNewline()
	comment(m, "The MIG recreates a VM whose kubelet stops answering its health",
		"endpoint, once the VM had its maxNodeProvisionTime to boot and join.")
	p := m.AppendNewBlock("auto_healing_policies", nil).Body()
	p.SetAttributeRaw("health_check", ref(TFHealthCheck, TFName(g.Name), "id"))
	p.SetAttributeValue("initial_delay_sec", cty.NumberIntVal(int64(delay/time.Second)))
	return nil
}

// autohealingResources appends an autohealed group's health check and the
// firewall rule that admits Google's health checkers
// (GoogleHealthCheckRanges, the same probes as for load balancers) to its
// VMs' kubelet health port, and nothing else.
func autohealingResources(body *hclwrite.Body, c *model.Cluster, g *model.NodeGroup) {
	if !Autohealed(g) {
		return
	}
	name := AutohealingName(c, g)
	body.AppendNewline()
	comment(body, fmt.Sprintf("Autohealing of group %s: the kubelet's health endpoint, http://<VM>:%d%s.", g.Name, KubeletHealthzPort, KubeletHealthzPath))
	hc := body.AppendNewBlock("resource", []string{TFHealthCheck, TFName(g.Name)}).Body()
	hc.SetAttributeRaw("project", ref("local", "project"))
	hc.SetAttributeValue("name", cty.StringVal(name))
	hc.SetAttributeValue("description", cty.StringVal(fmt.Sprintf("kubelet health of nodegen node group %s of cluster %s", g.Name, c.Name)))
	hc.SetAttributeValue("check_interval_sec", cty.NumberIntVal(healthCheckInterval))
	hc.SetAttributeValue("timeout_sec", cty.NumberIntVal(healthCheckTimeout))
	hc.SetAttributeValue("healthy_threshold", cty.NumberIntVal(healthyThreshold))
	hc.SetAttributeValue("unhealthy_threshold", cty.NumberIntVal(unhealthyThreshold))
	hc.AppendNewline()
	h := hc.AppendNewBlock("http_health_check", nil).Body()
	h.SetAttributeValue("port", cty.NumberIntVal(KubeletHealthzPort))
	h.SetAttributeValue("request_path", cty.StringVal(KubeletHealthzPath))

	body.AppendNewline()
	comment(body, "Only Google's health checkers reach the kubelet's health port.")
	fw := body.AppendNewBlock("resource", []string{TFFirewall, TFName(g.Name, "health", "check")}).Body()
	fw.SetAttributeRaw("project", hclwrite.TokensForFunctionCall("coalesce", ref("var", "subnetwork_project"), ref("local", "project")))
	fw.SetAttributeValue("name", cty.StringVal(name))
	fw.SetAttributeValue("description", cty.StringVal(fmt.Sprintf("Google health checks of the kubelet of nodegen node group %s of cluster %s", g.Name, c.Name)))
	fw.SetAttributeRaw("network", ref("var", "network"))
	fw.SetAttributeValue("direction", cty.StringVal("INGRESS"))
	fw.SetAttributeValue("source_ranges", strs(GoogleHealthCheckRanges))
	fw.SetAttributeValue("target_tags", strs([]string{name}))
	fw.AppendNewline()
	a := fw.AppendNewBlock("allow", nil).Body()
	a.SetAttributeValue("protocol", cty.StringVal("tcp"))
	a.SetAttributeValue("ports", strs([]string{fmt.Sprint(KubeletHealthzPort)}))
	fw.AppendNewline()
	lc := fw.AppendNewBlock("lifecycle", nil).Body()
	pc := lc.AppendNewBlock("precondition", nil).Body()
	pc.SetAttributeRaw("condition", append(ref("var", "network"),
		&hclwrite.Token{Type: hclsyntax.TokenNotEqual, Bytes: []byte("!=")},
		&hclwrite.Token{Type: hclsyntax.TokenIdent, Bytes: []byte("null")}))
	pc.SetAttributeValue("error_message", cty.StringVal("Set var.network: the firewall rule that lets Google's health checkers reach the kubelet of group "+g.Name+" needs it."))
}
