package terraform

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// firewallFromOnpremName and firewallNodeToNodeName are the GCE names of
// the network's firewall rules.
func firewallFromOnpremName(c *model.Cluster) string { return c.Name + "-from-onprem" }
func firewallNodeToNodeName(c *model.Cluster) string { return c.Name + "-node-to-node" }
func firewallMetricsName(c *model.Cluster) string    { return c.Name + "-onprem-metrics" }

// needsNetwork reports whether a rendered resource names var.network: the
// health checks' firewall rule of an autohealed group, or network.tf.
func needsNetwork(src *model.Source) bool {
	if src.Cluster.GCP.Network != nil {
		return true
	}
	return slices.ContainsFunc(src.CloudGroups(), (*model.NodeGroup).Autohealed)
}

// firewallAllow groups "proto/port" entries into one allow block per
// protocol, in the order the protocols first appear; an entry without a
// port ("ipip", "icmp") admits the whole protocol.
func firewallAllow(w *hclText, ports []string) {
	var protos []string
	byProto := map[string][]string{}
	for _, p := range ports {
		proto, port, _ := strings.Cut(p, "/")
		if _, ok := byProto[proto]; !ok {
			protos = append(protos, proto)
		}
		if !slices.Contains(byProto[proto], port) {
			byProto[proto] = append(byProto[proto], port)
		}
	}
	for _, proto := range protos {
		w.blank()
		w.open("allow")
		w.attr("protocol", hclString(proto))
		if ports := slices.DeleteFunc(byProto[proto], func(p string) bool { return p == "" }); len(ports) > 0 {
			w.attr("ports", hclStrings(ports))
		}
		w.close()
	}
}

// icmpAllow admits ICMP, for its "fragmentation needed" (type 3, code 4):
// Cloud VPN answers a packet that forbids fragmenting and is over the
// tunnel's payload MTU with one, and a node's kernel one too larger than
// its route's MTU, and it reaches a VM only through an ingress allow rule
// (Google, Cloud VPN "MTU considerations"). Without it, path MTU discovery
// from the cloud nodes never ends. A VPC firewall rule matches a protocol
// and ports, never an ICMP type (google_compute_firewall's allow block:
// protocol and ports only), so the rule admits all of ICMP from the
// on-prem ranges and between the nodes.
const icmpAllow = "icmp"

// nodeAccounts is the list of both roles' service accounts, which the
// firewall rules target: every cloud node runs as one of them.
func nodeAccounts() string {
	return hclList(hclRef("local", serviceAccountLocal(model.RoleNodes)), hclRef("local", serviceAccountLocal(model.RoleAutoscaler)))
}

// terraformNetwork renders network.tf: the firewall rule from the on-prem
// ranges to the kubelet, the CNI's ports and ICMP, the rule between the
// cloud nodes for the CNI's ports and ICMP, and a Cloud NAT when the
// source chooses it.
// It renders nothing without cluster.gcp.network.
func terraformNetwork(src *model.Source, header string) ([]byte, error) {
	c := &src.Cluster
	n := c.GCP.Network
	if n == nil {
		return nil, nil
	}
	project := hclCall("coalesce", hclRef("var", "subnetwork_project"), hclRef("local", "project"))
	w := &hclText{b: make([]byte, 0, 2048)}
	w.comment(fmt.Sprintf("The network the cloud nodes of cluster %s need (cluster.gcp.network).", c.Name),
		"The firewall rules target the nodes' two service accounts (iam.tf): every",
		"cloud node runs as one of them. Google's health checkers are admitted",
		"per autohealed group, in its nodegroup file. Both rules admit ICMP for its",
		"\"fragmentation needed\", which Cloud VPN and the nodes send to a sender of",
		"packets too large for the path: a VPC rule cannot match an ICMP type.")
	w.open("resource", gce.TFFirewall, "from_onprem")
	w.attr("project", project)
	w.attr("name", hclString(firewallFromOnpremName(c)))
	w.attr("description", hclString(fmt.Sprintf("the on-prem control plane and nodes to the kubelet and the CNI of the cloud nodes of cluster %s", c.Name)))
	w.attr("network", hclRef("var", "network"))
	w.attr("direction", hclString("INGRESS"))
	w.attr("source_ranges", hclStrings(n.OnpremRanges))
	w.attr("target_service_accounts", nodeAccounts())
	firewallAllow(w, append(append([]string{fmt.Sprintf("tcp/%d", model.KubeletPort)}, n.CNIPorts...), icmpAllow))
	w.close()

	w.blank()
	w.comment("The CNI between the cloud nodes, and ICMP as from the on-prem side.")
	w.open("resource", gce.TFFirewall, "node_to_node")
	w.attr("project", project)
	w.attr("name", hclString(firewallNodeToNodeName(c)))
	w.attr("description", hclString(fmt.Sprintf("the CNI between the cloud nodes of cluster %s", c.Name)))
	w.attr("network", hclRef("var", "network"))
	w.attr("direction", hclString("INGRESS"))
	w.attr("source_service_accounts", nodeAccounts())
	w.attr("target_service_accounts", nodeAccounts())
	firewallAllow(w, append(slices.Clone(n.CNIPorts), icmpAllow))
	w.close()

	if len(n.MetricsPorts) > 0 {
		w.blank()
		w.comment("The on-prem side's Prometheus to the exporters on the cloud nodes' own",
			"network (cluster.gcp.network.metricsPorts).")
		w.open("resource", gce.TFFirewall, "metrics_from_onprem")
		w.attr("project", project)
		w.attr("name", hclString(firewallMetricsName(c)))
		w.attr("description", hclString(fmt.Sprintf("the on-prem Prometheus to the host-network exporters of the cloud nodes of cluster %s", c.Name)))
		w.attr("network", hclRef("var", "network"))
		w.attr("direction", hclString("INGRESS"))
		w.attr("source_ranges", hclStrings(n.OnpremRanges))
		w.attr("target_service_accounts", nodeAccounts())
		firewallAllow(w, n.MetricsPorts)
		w.close()
	}

	if ims, _ := model.BuildableImages(src.NodeImages()); len(ims) > 0 {
		w.blank()
		w.comment("SSH to the builder VMs of out/images, which have no external IP, from",
			"Identity-Aware Proxy's TCP forwarding (gcloud compute ssh",
			"--tunnel-through-iap), which connects from this range: each family's",
			"build script runs there.")
		w.open("resource", gce.TFFirewall, layout.TerraformImageBuilderFirewall)
		w.attr("project", project)
		w.attr("name", hclString(c.ImageBuilderFirewallName()))
		w.attr("description", hclString(fmt.Sprintf("SSH from Identity-Aware Proxy's TCP forwarding to the image builder VMs of cluster %s", c.Name)))
		w.attr("network", hclRef("var", "network"))
		w.attr("direction", hclString("INGRESS"))
		w.attr("source_ranges", hclStrings([]string{model.IAPTCPForwardingRange}))
		w.attr("target_tags", hclStrings([]string{c.ImageBuilderTag()}))
		firewallAllow(w, []string{"tcp/22"})
		w.close()
	}

	if n.Egress == model.EgressCloudNAT {
		w.blank()
		w.comment("The nodes have no external IP: they reach image registries and Google",
			"APIs through this Cloud NAT, for the subnetwork's ranges only.")
		w.open("resource", gce.TFRouter, layout.TerraformNAT)
		w.attr("project", project)
		w.attr("region", hclRef("local", "region"))
		w.attr("name", hclString(c.NATName()))
		w.attr("network", hclRef("var", "network"))
		w.close()
		w.blank()
		w.open("resource", gce.TFRouterNAT, layout.TerraformNAT)
		w.attr("project", project)
		w.attr("region", hclRef("local", "region"))
		w.attr("name", hclString(c.NATName()))
		w.attr("router", hclRef(gce.TFRouter, layout.TerraformNAT, "name"))
		w.attr("nat_ip_allocate_option", hclString("AUTO_ONLY"))
		w.attr("source_subnetwork_ip_ranges_to_nat", hclString("LIST_OF_SUBNETWORKS"))
		w.blank()
		w.open("subnetwork")
		w.attr("name", hclRef("var", "subnetwork"))
		w.attr("source_ip_ranges_to_nat", hclStrings([]string{"ALL_IP_RANGES"}))
		w.close()
		w.close()
	}
	return w.file(header)
}
