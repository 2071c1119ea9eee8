package terraform

import (
	"fmt"
	"strconv"

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

	w.blank()
	w.open("output", layout.VPNAddressesOutput)
	w.attr("description", hclString("The HA VPN gateway's public addresses, by interface: cluster.gcp.network.vpn.haVpnAddresses, which the on-prem gateways' files need."))
	w.attr("value", fmt.Sprintf("%s.vpn.vpn_interfaces[*].ip_address", gce.TFHAVPNGateway))
	w.close()
	return w.file(header)
}
