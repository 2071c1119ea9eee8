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
	// Health check timing: a VM is unhealthy after unhealthyThreshold
	// failed checks, healthCheckInterval apart; the threshold is the
	// largest the Compute API takes, the interval at most its largest.
	healthCheckTimeout = 5
	healthyThreshold   = 2
	unhealthyThreshold = gce.MaxUnhealthyThreshold
	minCheckInterval   = 10 // seconds
	maxCheckInterval   = gce.MaxCheckIntervalSec
	maxInitialDelaySec = 3600 // the Compute API's limit of initialDelaySec
)

// healthCheckInterval is the check interval of group g's health check:
// the shortest, at least 10 s, under which unhealthyThreshold − 1
// intervals cover the group's reboot time (the first failed check may
// come as the kubelet stops, so a VM is declared unhealthy between that
// many and unhealthyThreshold intervals after). vet keeps the reboot time
// within what 300 s allows (model.MaxRebootTime).
func healthCheckInterval(g *model.NodeGroup) int64 {
	reboot := int64((g.AutohealingRebootTime() + time.Second - 1) / time.Second)
	n := int64(unhealthyThreshold - 1)
	return min(max((reboot+n-1)/n, minCheckInterval), maxCheckInterval)
}

// autohealingInitialDelay is how long after a VM is created the MIG
// ignores its health: the group's maxNodeProvisionTime (the VM boots and
// joins within it, or the join script gives up), at most an hour.
func autohealingInitialDelay(c *model.Cluster, g *model.NodeGroup) time.Duration {
	return min(c.MaxNodeProvisionTime(g), maxInitialDelaySec*time.Second)
}

// autohealingPolicy adds an autohealed group's auto_healing_policies to
// the MIG block w is in.
func autohealingPolicy(w *hclText, c *model.Cluster, g *model.NodeGroup) {
	if !g.Autohealed() {
		return
	}
	delay := autohealingInitialDelay(c, g)
	w.blank()
	if g.AutohealingRepairs() {
		w.comment("The MIG recreates a VM whose kubelet stops answering its health",
			"endpoint, once the VM had its maxNodeProvisionTime to boot and join.")
	} else {
		w.comment("The health check reports each VM's health, and the MIG repairs",
			"none (autohealing.repair false): the VMs made before the group",
			"had autohealing would all fail it. Once nodegen rollout replaced",
			"them, set autohealing.repair to true.")
	}
	w.open("auto_healing_policies")
	w.attr("health_check", hclRef(gce.TFHealthCheck, terraformName(g.Name), "id"))
	w.attr("initial_delay_sec", hclInt(int64(delay/time.Second)))
	w.close()

	onHealth := gce.LifecycleActionRepair
	if !g.AutohealingRepairs() {
		onHealth = gce.LifecycleActionNothing
	}
	w.blank()
	w.comment("A repair recreates the VM from the group's current template, not",
		"the one it was made from, which may predate the health check.")
	w.open("instance_lifecycle_policy")
	w.attr("default_action_on_failure", hclString(gce.LifecycleActionRepair))
	w.attr("on_failed_health_check", hclString(onHealth))
	w.attr("force_update_on_repair", hclString(gce.LifecycleForceUpdateOnRepair))
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
	name := c.AutohealingName(g)
	w.blank()
	w.comment(fmt.Sprintf("Autohealing of group %s: the kubelet's health endpoint, http://<VM>:%d%s.", g.Name, model.KubeletHealthzPort, model.KubeletHealthzPath),
		fmt.Sprintf("A VM is unhealthy after %d failed checks %d s apart: %d s of them outlast", unhealthyThreshold, healthCheckInterval(g), (unhealthyThreshold-1)*healthCheckInterval(g)),
		fmt.Sprintf("a reboot (autohealing.rebootTime %s), which the initial delay does not cover.", model.FormatDuration(g.AutohealingRebootTime())))
	w.open("resource", gce.TFHealthCheck, terraformName(g.Name))
	w.attr("project", hclRef("local", "project"))
	w.attr("name", hclString(name))
	w.attr("description", hclString(fmt.Sprintf("kubelet health of nodegen node group %s of cluster %s", g.Name, c.Name)))
	w.attr("check_interval_sec", hclInt(healthCheckInterval(g)))
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
	w.open("resource", gce.TFFirewall, terraformName(g.Name, "health", "check"))
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
