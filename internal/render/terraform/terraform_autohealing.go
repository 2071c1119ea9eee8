package terraform

import (
	"fmt"
	"time"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/model"
)

// Autohealing of the fixed-size (gce-static) groups' MIGs: the autoscaler
// replaces neither their VMs nor a VM whose kubelet died, so the MIG does,
// when the VM stops answering the kubelet's health endpoint.
const (
	// TFHealthCheck is the Terraform resource type of the health check
	// (the firewall rule that lets it reach the nodes is a TFFirewall).
	TFHealthCheck = "google_compute_health_check"
	// Health check timing: a VM is recreated after unhealthyThreshold
	// failed checks checkInterval apart (a minute without a kubelet).
	healthCheckInterval  = 10
	healthCheckTimeout   = 5
	healthyThreshold     = 2
	unhealthyThreshold   = 6
	maxInitialDelaySec   = 3600 // the Compute API's limit of initialDelaySec
	autohealingTagSuffix = "-hc"
)

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
func AutohealingInitialDelay(c *model.Cluster, g *model.NodeGroup) time.Duration {
	return min(c.MaxNodeProvisionTime(g), maxInitialDelaySec*time.Second)
}

// templateTags is the instance template's tags: the module's network tags,
// plus, for an autohealed group, the tag its health check's firewall rule
// targets.
func templateTags(c *model.Cluster, g *model.NodeGroup) string {
	if !g.Autohealed() {
		return hclRef("var", "network_tags")
	}
	return hclCall("concat", hclRef("var", "network_tags"), hclStrings([]string{AutohealingName(c, g)}))
}

// autohealingPolicy adds an autohealed group's auto_healing_policies to
// the MIG block w is in.
func autohealingPolicy(w *hclText, c *model.Cluster, g *model.NodeGroup) {
	if !g.Autohealed() {
		return
	}
	delay := AutohealingInitialDelay(c, g)
	w.blank()
	w.comment("The MIG recreates a VM whose kubelet stops answering its health",
		"endpoint, once the VM had its maxNodeProvisionTime to boot and join.")
	w.open("auto_healing_policies")
	w.attr("health_check", hclRef(TFHealthCheck, TFName(g.Name), "id"))
	w.attr("initial_delay_sec", hclInt(int64(delay/time.Second)))
	w.close()
}

// autohealingResources appends an autohealed group's health check and the
// firewall rule that admits Google's health checkers
// (gce.HealthCheckRanges, the same probes as for load balancers) to its
// VMs' kubelet health port, and nothing else.
func autohealingResources(w *hclText, c *model.Cluster, g *model.NodeGroup) {
	if !g.Autohealed() {
		return
	}
	name := AutohealingName(c, g)
	w.blank()
	w.comment(fmt.Sprintf("Autohealing of group %s: the kubelet's health endpoint, http://<VM>:%d%s.", g.Name, model.KubeletHealthzPort, model.KubeletHealthzPath))
	w.open("resource", TFHealthCheck, TFName(g.Name))
	w.attr("project", hclRef("local", "project"))
	w.attr("name", hclString(name))
	w.attr("description", hclString(fmt.Sprintf("kubelet health of nodegen node group %s of cluster %s", g.Name, c.Name)))
	w.attr("check_interval_sec", hclInt(healthCheckInterval))
	w.attr("timeout_sec", hclInt(healthCheckTimeout))
	w.attr("healthy_threshold", hclInt(healthyThreshold))
	w.attr("unhealthy_threshold", hclInt(unhealthyThreshold))
	w.blank()
	w.open("http_health_check")
	w.attr("port", hclInt(model.KubeletHealthzPort))
	w.attr("request_path", hclString(model.KubeletHealthzPath))
	w.close()
	w.close()

	w.blank()
	w.comment("Only Google's health checkers reach the kubelet's health port.")
	w.open("resource", TFFirewall, TFName(g.Name, "health", "check"))
	w.attr("project", hclCall("coalesce", hclRef("var", "subnetwork_project"), hclRef("local", "project")))
	w.attr("name", hclString(name))
	w.attr("description", hclString(fmt.Sprintf("Google health checks of the kubelet of nodegen node group %s of cluster %s", g.Name, c.Name)))
	w.attr("network", hclRef("var", "network"))
	w.attr("direction", hclString("INGRESS"))
	w.attr("source_ranges", hclStrings(gce.HealthCheckRanges))
	w.attr("target_tags", hclStrings([]string{name}))
	w.blank()
	w.open("allow")
	w.attr("protocol", hclString("tcp"))
	w.attr("ports", hclStrings([]string{fmt.Sprint(model.KubeletHealthzPort)}))
	w.close()
	w.close()
}
