package terraform

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// vpnGatewayName, vpnPeerName, vpnRouterName and vpnTunnelName are the GCE
// names of the HA VPN's resources: the HA VPN gateway, the external VPN
// gateway that stands for the on-prem gateways, the Cloud Router, and
// tunnel i (its router interface and BGP peer share its name).
func vpnGatewayName(c *model.Cluster) string { return c.Name + "-vpn" }
func vpnPeerName(c *model.Cluster) string    { return c.Name + "-onprem" }
func vpnRouterName(c *model.Cluster) string  { return c.VPNRouterName() }
func vpnTunnelName(c *model.Cluster, i int) string {
	return c.VPNTunnelName(i)
}

// terraformVPN renders vpn.tf: the HA VPN gateway, the external VPN
// gateway of the on-prem gateways, the Cloud Router with its custom
// advertisements, and per tunnel the tunnel (its pre-shared key read from
// Secret Manager), the router interface and the BGP peer. It renders
// nothing without cluster.gcp.network.vpn.
func terraformVPN(src *model.Source, header string) ([]byte, error) {
	c := &src.Cluster
	n := c.GCP.Network
	if n == nil || n.VPN == nil {
		return nil, nil
	}
	v := n.VPN
	project := hclCall("coalesce", hclRef("var", "subnetwork_project"), hclRef("local", "project"))
	w := &hclText{b: make([]byte, 0, 4096)}
	w.comment(fmt.Sprintf("The HA VPN between the on-prem side and the cloud nodes of cluster %s", c.Name),
		"(cluster.gcp.network.vpn; docs/vpn.md): two tunnels, one from each interface",
		"of the HA VPN gateway, and a BGP session over each between the Cloud Router",
		"and the on-prem gateways (out/onprem/vpn/). Both sessions are active.")
	w.open("resource", gce.TFHAVPNGateway, "vpn")
	w.attr("project", project)
	w.attr("region", hclRef("local", "region"))
	w.attr("name", hclString(vpnGatewayName(c)))
	w.attr("network", hclRef("var", "network"))
	w.close()

	w.blank()
	w.comment("The on-prem gateways, as Cloud VPN sees them.")
	w.open("resource", gce.TFExternalVPNGateway, "onprem")
	w.attr("project", project)
	w.attr("name", hclString(vpnPeerName(c)))
	w.attr("description", hclString(fmt.Sprintf("the on-prem VPN gateways of cluster %s", c.Name)))
	w.attr("redundancy_type", hclString(v.RedundancyType()))
	for i, g := range v.PeerGateways {
		w.blank()
		w.comment(g.Name)
		w.open("interface")
		w.attr("id", hclInt(int64(i)))
		w.attr("ip_address", hclString(g.Address))
		w.close()
	}
	w.close()

	w.blank()
	w.comment("The Cloud Router of the VPN's BGP sessions, apart from the Cloud NAT's: it",
		"advertises only the prefixes the source lists (custom mode).")
	w.open("resource", gce.TFRouter, "vpn")
	w.attr("project", project)
	w.attr("region", hclRef("local", "region"))
	w.attr("name", hclString(vpnRouterName(c)))
	w.attr("network", hclRef("var", "network"))
	w.blank()
	w.open("bgp")
	w.attr("asn", hclInt(v.CloudRouterASN))
	w.attr("advertise_mode", hclString("CUSTOM"))
	w.attr("keepalive_interval", hclInt(int64(v.BGPKeepaliveInterval)))
	for _, p := range v.CloudPrefixes(n) {
		w.blank()
		w.open("advertised_ip_ranges")
		w.attr("range", hclString(p))
		w.close()
	}
	w.close()
	w.close()

	for i := range v.Tunnels {
		t := &v.Tunnels[i]
		name := model.TunnelName(i)
		cloudAddr, onpremAddr, _ := t.InsideAddresses()
		gw := v.PeerGatewayOf(i)

		w.blank()
		version := strconv.Itoa(t.SharedSecret.Version)
		w.comment(fmt.Sprintf("%s: HA VPN interface %d to %s. Its pre-shared key is read from", name, i, v.PeerGateways[gw].Name),
			"Secret Manager by an ephemeral resource into write-only arguments: it is in",
			"neither the plan nor the state. The version is the source's, pinned, as the",
			"on-prem gateway's install.sh reads it: a new version reaches the tunnel only",
			"through a change of the source.")
		w.open("ephemeral", gce.TFSecretVersion, name)
		w.attr("project", hclRef("local", "project"))
		w.attr("secret", hclString(t.SharedSecret.Secret))
		w.attr("version", hclString(version))
		w.close()
		w.blank()
		w.open("resource", gce.TFVPNTunnel, name)
		w.attr("project", project)
		w.attr("region", hclRef("local", "region"))
		w.attr("name", hclString(vpnTunnelName(c, i)))
		w.attr("vpn_gateway", hclRef(gce.TFHAVPNGateway, "vpn", "id"))
		w.attr("vpn_gateway_interface", hclInt(int64(i)))
		w.attr("peer_external_gateway", hclRef(gce.TFExternalVPNGateway, "onprem", "id"))
		w.attr("peer_external_gateway_interface", hclInt(int64(gw)))
		w.attr("router", hclRef(gce.TFRouter, "vpn", "id"))
		w.attr("ike_version", "2")
		w.attr("shared_secret_wo", hclRef("ephemeral", gce.TFSecretVersion, name, "secret_data"))
		w.attr("shared_secret_wo_version", hclString(version))
		w.close()
		w.blank()
		w.open("resource", gce.TFRouterInterface, name)
		w.attr("project", project)
		w.attr("region", hclRef("local", "region"))
		w.attr("name", hclString(vpnTunnelName(c, i)))
		w.attr("router", hclRef(gce.TFRouter, "vpn", "name"))
		w.attr("ip_range", hclString(fmt.Sprintf("%s/30", cloudAddr)))
		w.attr("vpn_tunnel", hclRef(gce.TFVPNTunnel, name, "name"))
		w.close()
		w.blank()
		w.open("resource", gce.TFRouterPeer, name)
		w.attr("project", project)
		w.attr("region", hclRef("local", "region"))
		w.attr("name", hclString(vpnTunnelName(c, i)))
		w.attr("router", hclRef(gce.TFRouter, "vpn", "name"))
		w.attr("interface", hclRef(gce.TFRouterInterface, name, "name"))
		w.attr("ip_address", hclString(cloudAddr.String()))
		w.attr("peer_ip_address", hclString(onpremAddr.String()))
		w.attr("peer_asn", hclInt(v.OnpremASN))
		w.attr("advertised_route_priority", hclInt(int64(t.AdvertisedRoutePriority)))
		w.blank()
		w.comment("Cloud Router runs no BFD on HA VPN tunnels: the BGP hold time",
			fmt.Sprintf("(%ds, three keepalives) detects a silent tunnel loss.", v.BGPHoldTime()))
		w.open("bfd")
		w.attr("session_initialization_mode", hclString("DISABLED"))
		w.close()
		w.close()
	}

	vpnAlertPolicies(w, c, v, project)

	w.blank()
	w.open("output", layout.VPNAddressesOutput)
	w.attr("description", hclString("The HA VPN gateway's public addresses, by interface: cluster.gcp.network.vpn.haVpnAddresses, which the on-prem gateways' files need."))
	w.attr("value", fmt.Sprintf("%s.vpn.vpn_interfaces[*].ip_address", gce.TFHAVPNGateway))
	w.close()
	return w.file(header)
}

// The Cloud Monitoring metrics the VPN's alert policies read, as Google's
// metrics list names them (https://cloud.google.com/monitoring/api/metrics_gcp_p_z,
// sections "vpn" and "router"), with the monitored resource each is
// written against (https://cloud.google.com/monitoring/api/resources:
// vpn_gateway, gce_router) and the metric labels the policies select on.
// Both are gauges sampled every 60 s: tunnel_established is above 0 while
// the tunnel is established, bgp/session_up is 1 while the BGP session is
// up.
const (
	metricTunnelEstablished = "vpn.googleapis.com/tunnel_established"
	resourceVPNGateway      = "vpn_gateway"
	labelGatewayName        = "gateway_name"
	labelTunnelName         = "tunnel_name"

	metricBGPSessionUp = "router.googleapis.com/bgp/session_up"
	resourceRouter     = "gce_router"
	labelBGPPeerName   = "bgp_peer_name"
)

// The names of the VPN's alerts, as docs/monitoring.md's runbook sections
// are titled.
const (
	AlertVPNTunnelDown     = "NodegenVPNTunnelDown"
	AlertVPNBGPSessionDown = "NodegenVPNBGPSessionDown"
	AlertVPNDown           = "NodegenVPNDown"
)

// monitoringFilter is a Cloud Monitoring filter that selects the metric
// type on the resource type with the metric labels equal to the values
// (https://cloud.google.com/monitoring/api/v3/filters: selectors joined by
// AND, metric.labels.KEY = "value"); labels are in pairs, key then value.
// The values are GCE resource names (lower-case letters, digits and '-'),
// which need no escape in the filter's quoted strings.
func monitoringFilter(metric, resource string, labels ...string) string {
	f := fmt.Sprintf("metric.type = %q AND resource.type = %q", metric, resource)
	for i := 0; i+1 < len(labels); i += 2 {
		f += fmt.Sprintf(" AND metric.labels.%s = %q", labels[i], labels[i+1])
	}
	return f
}

// vpnAlertDuration is how long, in seconds, a tunnel or a BGP session must
// be down before its alert policy opens an incident: the BGP hold time,
// the longest a silently lost tunnel keeps its routes and so the longest
// loss the VPN rides out by design (docs/vpn.md, "Measured failover"),
// rounded up to the whole minute Cloud Monitoring's threshold conditions
// take (google_monitoring_alert_policy's condition_threshold.duration).
// A Cloud Router's maintenance restarts its BGP sessions for a few seconds
// and keeps the routes for the timers
// (https://cloud.google.com/network-connectivity/docs/router/how-to/identifying-router-events):
// shorter than that, it opens no incident. It is at most
// tunnelLossToleration in whole minutes (rounded down): with every tunnel
// down the alerts must not wait longer than nodegen's pods on the cloud
// nodes are tolerated there (vet holds the hold time itself below
// tunnelLossToleration, but the hold time rounded up may reach it, as 135
// s does 150 s). Cloud Monitoring's own delay in showing a sample comes on
// top.
func vpnAlertDuration(v *model.VPN) int {
	d := (v.BGPHoldTime() + 59) / 60 * 60
	if t := int(v.TunnelLossToleration.Duration()/time.Minute) * 60; t > 0 && d > t {
		d = t
	}
	return d
}

// vpnAlertCondition writes a condition block: the series the filter
// selects below 1 (down) in every 60-second sample for the duration, or
// absent that long (a tunnel or peer that stopped reporting carries
// nothing either).
func vpnAlertCondition(w *hclText, display, filter string, duration int) {
	w.blank()
	w.open("conditions")
	w.attr("display_name", hclString(display))
	w.blank()
	w.open("condition_threshold")
	w.attr("filter", hclString(filter))
	w.attr("comparison", hclString("COMPARISON_LT"))
	w.attr("threshold_value", "1")
	w.attr("duration", hclString(fmt.Sprintf("%ds", duration)))
	w.attr("evaluation_missing_data", hclString("EVALUATION_MISSING_DATA_ACTIVE"))
	w.blank()
	w.open("aggregations")
	w.attr("alignment_period", hclString("60s"))
	w.attr("per_series_aligner", hclString("ALIGN_MAX"))
	w.close()
	w.close()
	w.close()
}

// vpnAlertPolicy opens an alert policy block with its project, name,
// severity, labels and notification channels.
func vpnAlertPolicy(w *hclText, c *model.Cluster, v *model.VPN, project, label, alert, subject, combiner, severity string) {
	w.open("resource", gce.TFAlertPolicy, label)
	w.attr("project", project)
	w.attr("display_name", hclString(alert+": "+subject))
	w.attr("combiner", hclString(combiner))
	w.attr("severity", hclString(severity))
	if len(v.NotificationChannels) > 0 {
		w.attr("notification_channels", hclStrings(v.NotificationChannels))
	}
	w.object("user_labels", []hclLine{{"nodegen_cluster", hclString(c.Name)}, {"nodegen_alert", hclString(strings.ToLower(alert))}})
}

// vpnAlertDoc writes the policy's documentation: what is down, what it
// means, and its runbook section.
func vpnAlertDoc(w *hclText, alert, text string) {
	w.blank()
	w.open("documentation")
	w.attr("mime_type", hclString("text/markdown"))
	w.attr("content", hclString(text+" Runbook: nodegen's docs/monitoring.md, section "+alert+"."))
	w.close()
}

// vpnAlertPolicies writes the VPN's Cloud Monitoring alert policies: one
// per tunnel (NodegenVPNTunnelDown) and one per BGP session
// (NodegenVPNBGPSessionDown), each naming its tunnel or peer as vpn.tf
// names it, so that an incident names what is down and each can be
// muted or snoozed alone; and one for every BGP session down at once
// (NodegenVPNDown), when the cloud nodes have no route to the on-prem
// side. They live in the VPN's project, whose metrics they read.
func vpnAlertPolicies(w *hclText, c *model.Cluster, v *model.VPN, project string) {
	d := vpnAlertDuration(v)
	hold := fmt.Sprintf("%ds", d)
	gateway := vpnGatewayName(c)
	w.blank()
	w.comment("Cloud Monitoring alert policies (docs/monitoring.md): each tunnel and each BGP",
		fmt.Sprintf("session down for %s (the BGP hold time, %ds, in whole minutes, at most", hold, v.BGPHoldTime()),
		fmt.Sprintf("tunnelLossToleration %s), and every session down at once. The metrics and", v.TunnelLossToleration),
		"their resources are those of Google's metrics list",
		"(https://cloud.google.com/monitoring/api/metrics_gcp_p_z, \"vpn\", \"router\").",
		"Incidents open with or without notification channels",
		"(cluster.gcp.network.vpn.notificationChannels); the console lists them.")
	var sessions []struct{ display, filter string }
	for i := range v.Tunnels {
		name := model.TunnelName(i)
		tunnel := vpnTunnelName(c, i)
		peer := v.PeerGateways[v.PeerGatewayOf(i)].Name

		w.blank()
		vpnAlertPolicy(w, c, v, project, name+"_down", AlertVPNTunnelDown, tunnel, "OR", "WARNING")
		vpnAlertCondition(w, fmt.Sprintf("%s not established for %s", tunnel, hold),
			monitoringFilter(metricTunnelEstablished, resourceVPNGateway, labelGatewayName, gateway, labelTunnelName, tunnel), d)
		vpnAlertDoc(w, AlertVPNTunnelDown, fmt.Sprintf("The VPN tunnel %s of cluster %s (HA VPN gateway %s, interface %d, to the on-prem gateway %s) has not been established for %s. "+
			"The other tunnel carries the traffic; the VPN has lost its redundancy.", tunnel, c.Name, gateway, i, peer, hold))
		w.close()

		session := struct{ display, filter string }{
			fmt.Sprintf("BGP session %s down for %s", tunnel, hold),
			monitoringFilter(metricBGPSessionUp, resourceRouter, labelBGPPeerName, tunnel),
		}
		sessions = append(sessions, session)
		w.blank()
		vpnAlertPolicy(w, c, v, project, name+"_bgp_down", AlertVPNBGPSessionDown, tunnel, "OR", "WARNING")
		vpnAlertCondition(w, session.display, session.filter, d)
		vpnAlertDoc(w, AlertVPNBGPSessionDown, fmt.Sprintf("The BGP session %s of cluster %s between the Cloud Router %s and the on-prem gateway %s has been down for %s: "+
			"no route of either side goes through the tunnel %s. The other tunnel carries the traffic; the VPN has lost its redundancy.", tunnel, c.Name, vpnRouterName(c), peer, hold, tunnel))
		w.close()
	}

	w.blank()
	vpnAlertPolicy(w, c, v, project, "vpn_down", AlertVPNDown, c.Name, "AND", "CRITICAL")
	for _, s := range sessions {
		vpnAlertCondition(w, s.display, s.filter, d)
	}
	vpnAlertDoc(w, AlertVPNDown, fmt.Sprintf("Every BGP session of cluster %s's VPN has been down for %s: the cloud nodes and the control plane cannot reach each other. "+
		"The pods nodegen renders for the cloud nodes are evicted after tunnelLossToleration (%s) of it.", c.Name, hold, v.TunnelLossToleration))
	w.close()
}
