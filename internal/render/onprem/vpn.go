package onprem

import (
	"fmt"
	"strings"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// The names the on-prem gateway's FRR configuration gives its filters.
const (
	frrCloudPrefixes  = "nodegen-cloud"
	frrOnpremPrefixes = "nodegen-onprem"
	frrFromCloud      = "nodegen-from-cloud"
	frrToCloud        = "nodegen-to-cloud"
)

// VPN renders the files of each on-prem VPN gateway host of
// cluster.gcp.network.vpn into out/onprem/vpn/<gateway>/: strongSwan's
// swanctl.conf and one connection file per tunnel that ends there, charon's
// settings, FRR's configuration and the XFRM interface of each tunnel as
// systemd-networkd files. It renders nothing without a VPN, or before the
// source has the HA VPN gateway's addresses (the tunnels' remote ends).
func VPN(src *model.Source, files layout.Files) error {
	n := src.Cluster.GCP.Network
	if n == nil || n.VPN == nil {
		return nil
	}
	v := n.VPN
	if len(v.HAVPNAddresses) != len(v.Tunnels) {
		return nil
	}
	header := layout.HashHeader(src.Name)
	for g, gw := range v.PeerGateways {
		dir := layout.OnpremVPNGatewayDir(gw.Name) + "/"
		tunnels := v.TunnelsOf(g)
		files[dir+layout.SwanctlConfFile] = swanctlConf(src, g, tunnels, header)
		for _, i := range tunnels {
			files[dir+layout.SwanctlConnDir+"/"+model.TunnelName(i)+".conf"] = swanctlConnection(src, g, i, header)
			ifname := model.TunnelInterface(i)
			files[dir+layout.SystemdNetworkDir+"/"+ifname+".netdev"] = xfrmNetdev(src, i, header)
			files[dir+layout.SystemdNetworkDir+"/"+ifname+".network"] = xfrmNetwork(src, i, header)
		}
		files[dir+layout.StrongswanConfFile] = charonConf(header)
		files[dir+layout.FRRConfFile] = frrConf(src, g, tunnels, header)
		files[dir+layout.OnpremVPNInstallFile] = vpnInstallScript(src, g, tunnels)
	}
	return nil
}

func swanctlConf(src *model.Source, g int, tunnels []int, header string) []byte {
	v := src.Cluster.GCP.Network.VPN
	var b strings.Builder
	b.WriteString(header)
	names := make([]string, len(tunnels))
	for k, i := range tunnels {
		names[k] = model.TunnelName(i)
	}
	fmt.Fprintf(&b, "#\n# /etc/swanctl/swanctl.conf of the on-prem VPN gateway %s of cluster\n", v.PeerGateways[g].Name)
	fmt.Fprintf(&b, "# %s: its tunnels to the HA VPN gateway (%s), one connection a\n", src.Cluster.Name, strings.Join(names, ", "))
	b.WriteString("# file in conf.d/; their pre-shared keys in secrets.d/, written from Secret\n")
	b.WriteString("# Manager when the gateway is installed (docs/vpn.md), never in out/.\n\n")
	b.WriteString("include conf.d/*.conf\ninclude secrets.d/*.conf\n")
	return []byte(b.String())
}

// swanctlConnection is tunnel i's connection: route-based (traffic
// selectors 0.0.0.0/0 both ways, the XFRM interface's ID on both
// directions' SAs), IKEv2 with a pre-shared key, the source's proposals,
// started at once and restarted when dead peer detection finds the peer
// gone.
func swanctlConnection(src *model.Source, g, i int, header string) []byte {
	v := src.Cluster.GCP.Network.VPN
	t := &v.Tunnels[i]
	name := model.TunnelName(i)
	cloudAddr, onpremAddr, _ := t.InsideAddresses()
	remote := v.HAVPNAddresses[i]
	local := v.PeerGateways[g].Address
	id := model.TunnelInterfaceID(i)
	var b strings.Builder
	b.WriteString(header)
	fmt.Fprintf(&b, "#\n# /etc/swanctl/conf.d/%s.conf: %s, from HA VPN interface %d (%s)\n", name, name, i, remote)
	fmt.Fprintf(&b, "# to %s (%s). Route-based: its SAs carry any address, into and\n", v.PeerGateways[g].Name, local)
	fmt.Fprintf(&b, "# out of the XFRM interface %s (ID %d), where FRR's BGP session\n", model.TunnelInterface(i), id)
	fmt.Fprintf(&b, "# runs between %s (Cloud Router) and %s (here).\n\n", cloudAddr, onpremAddr)
	fmt.Fprintf(&b, `connections {
  %[1]s {
    version = 2
    remote_addrs = %[2]s
    proposals = %[3]s
    mobike = no
    dpd_delay = 10s
    keyingtries = 0
    local {
      auth = psk
      id = %[4]s
    }
    remote {
      auth = psk
      id = %[2]s
    }
    children {
      %[1]s {
        local_ts = 0.0.0.0/0
        remote_ts = 0.0.0.0/0
        esp_proposals = %[5]s
        if_id_in = %[6]d
        if_id_out = %[6]d
        dpd_action = restart
        start_action = start
      }
    }
  }
}
`, name, remote, v.IKEProposal, local, v.ESPProposal, id)
	return []byte(b.String())
}

// charonConf is charon's setting for route-based tunnels whose routes FRR
// installs: charon installs none of its own.
func charonConf(header string) []byte {
	return []byte(header + `#
# /etc/strongswan.d/nodegen.conf: FRR installs the routes through the
# tunnels (learned over BGP), so charon installs none of its own.

charon {
  install_routes = no
}
`)
}

func xfrmNetdev(src *model.Source, i int, header string) []byte {
	return fmt.Appendf(nil, `%s#
# The XFRM interface of %s (strongSwan's if_id %d), not bound to another
# interface: /etc/systemd/network/%s.netdev.

[NetDev]
Name=%s
Kind=xfrm

[Xfrm]
InterfaceId=%d
Independent=yes
`, header, model.TunnelName(i), model.TunnelInterfaceID(i), model.TunnelInterface(i), model.TunnelInterface(i), model.TunnelInterfaceID(i))
}

func xfrmNetwork(src *model.Source, i int, header string) []byte {
	t := &src.Cluster.GCP.Network.VPN.Tunnels[i]
	cloudAddr, onpremAddr, _ := t.InsideAddresses()
	return fmt.Appendf(nil, `%s#
# The on-prem end of %s's BGP session (the Cloud Router is %s):
# /etc/systemd/network/%s.network.

[Match]
Name=%s

[Network]
Address=%s/30
`, header, model.TunnelName(i), cloudAddr, model.TunnelInterface(i), model.TunnelInterface(i), onpremAddr)
}

// frrConf is FRR's configuration of gateway g: one eBGP neighbor per
// tunnel that ends on it (the Cloud Router's address), with the source's
// keepalive and hold time; the on-prem prefixes advertised; route maps
// that accept only the cloud side's prefixes and send only the on-prem
// ones; both tunnels used at once when both end here.
func frrConf(src *model.Source, g int, tunnels []int, header string) []byte {
	n := src.Cluster.GCP.Network
	v := n.VPN
	var b strings.Builder
	b.WriteString(header)
	fmt.Fprintf(&b, "#\n# /etc/frr/frr.conf of the on-prem VPN gateway %s of cluster %s\n", v.PeerGateways[g].Name, src.Cluster.Name)
	b.WriteString("# (bgpd on in /etc/frr/daemons). One BGP session per tunnel with the Cloud\n")
	b.WriteString("# Router; it accepts only the cloud side's prefixes and sends only the\n# on-prem ones.\n")
	b.WriteString("frr defaults traditional\nlog syslog informational\n!\n")
	for k, p := range v.CloudPrefixes(n) {
		fmt.Fprintf(&b, "ip prefix-list %s seq %d permit %s\n", frrCloudPrefixes, 5*(k+1), p)
	}
	for k, p := range v.OnpremPrefixes(n) {
		fmt.Fprintf(&b, "ip prefix-list %s seq %d permit %s\n", frrOnpremPrefixes, 5*(k+1), p)
	}
	fmt.Fprintf(&b, "!\nroute-map %s permit 10\n match ip address prefix-list %s\nexit\n", frrFromCloud, frrCloudPrefixes)
	fmt.Fprintf(&b, "!\nroute-map %s permit 10\n match ip address prefix-list %s\nexit\n!\n", frrToCloud, frrOnpremPrefixes)
	fmt.Fprintf(&b, "router bgp %d\n", v.OnpremASN)
	fmt.Fprintf(&b, " bgp router-id %s\n", v.PeerGateways[g].Address)
	b.WriteString(" no bgp network import-check\n")
	for _, i := range tunnels {
		cloudAddr, _, _ := v.Tunnels[i].InsideAddresses()
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n", cloudAddr, v.CloudRouterASN)
		fmt.Fprintf(&b, " neighbor %s description %s\n", cloudAddr, model.TunnelName(i))
		fmt.Fprintf(&b, " neighbor %s timers %d %d\n", cloudAddr, v.BGPKeepaliveInterval, v.BGPHoldTime())
		fmt.Fprintf(&b, " neighbor %s timers connect 10\n", cloudAddr)
	}
	b.WriteString(" !\n address-family ipv4 unicast\n")
	for _, p := range v.OnpremPrefixes(n) {
		fmt.Fprintf(&b, "  network %s\n", p)
	}
	if len(tunnels) > 1 {
		fmt.Fprintf(&b, "  maximum-paths %d\n", len(tunnels))
	}
	for _, i := range tunnels {
		cloudAddr, _, _ := v.Tunnels[i].InsideAddresses()
		fmt.Fprintf(&b, "  neighbor %s route-map %s in\n", cloudAddr, frrFromCloud)
		fmt.Fprintf(&b, "  neighbor %s route-map %s out\n", cloudAddr, frrToCloud)
	}
	b.WriteString(" exit-address-family\nexit\n!\n")
	return []byte(b.String())
}

// vpnInstallScript is the gateway's install.sh: it copies the files of its
// directory where the services read them, writes each tunnel's
// pre-shared key from Secret Manager into swanctl's secrets.d (as
// hexadecimal, so that no byte of the key needs quoting; readable by root
// only), turns on FRR's bgpd and (re)starts the services. With ROOT set it
// installs into that directory and starts nothing.
func vpnInstallScript(src *model.Source, g int, tunnels []int) []byte {
	v := src.Cluster.GCP.Network.VPN
	gw := v.PeerGateways[g]
	var b strings.Builder
	b.WriteString("#!/usr/bin/env bash\n")
	b.WriteString(layout.HashHeader(src.Name))
	fmt.Fprintf(&b, `#
# Installs the on-prem VPN gateway %[1]s of cluster %[2]s from this
# directory (docs/vpn.md): run it as root on the gateway, with gcloud
# allowed to read the tunnels' secrets in project %[3]s. It writes each
# tunnel's pre-shared key into /etc/swanctl/secrets.d/ (root only), then
# reloads systemd-networkd and restarts FRR and strongSwan. With ROOT set,
# it installs into that directory instead of / and starts nothing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${ROOT:-}
project=%[3]s

for cmd in gcloud od install sed; do
  if ! command -v "$cmd" >/dev/null; then
    echo "install.sh: $cmd is missing" >&2
    exit 1
  fi
done

install -d -m 0755 "$root/etc/systemd/network" "$root/etc/strongswan.d" "$root/etc/swanctl/conf.d" "$root/etc/frr"
install -d -m 0700 "$root/etc/swanctl/secrets.d"
install -m 0644 "$here"/systemd-network/* "$root/etc/systemd/network/"
install -m 0644 "$here/strongswan.conf.d/nodegen.conf" "$root/etc/strongswan.d/nodegen.conf"
install -m 0644 "$here/swanctl.conf" "$root/etc/swanctl/swanctl.conf"
install -m 0644 "$here"/conf.d/*.conf "$root/etc/swanctl/conf.d/"

# write_secret TUNNEL SECRET VERSION LOCAL_ID REMOTE_ID
write_secret() {
  local hex file="$root/etc/swanctl/secrets.d/$1.conf"
  hex=$(gcloud secrets versions access "$3" --secret="$2" --project="$project" | od -An -v -tx1 | tr -d ' \n')
  if [[ -z $hex ]]; then
    echo "install.sh: secret $2 (version $3) is empty" >&2
    exit 1
  fi
  (
    umask 077
    printf 'secrets {\n  ike-%%s {\n    id-local = %%s\n    id-remote = %%s\n    secret = 0x%%s\n  }\n}\n' "$1" "$4" "$5" "$hex" >"$file.tmp"
  )
  mv "$file.tmp" "$file"
}
`, gw.Name, src.Cluster.Name, src.Cluster.GCP.Project)
	for _, i := range tunnels {
		t := &v.Tunnels[i]
		fmt.Fprintf(&b, "write_secret %s %s %s %s %s\n", model.TunnelName(i), t.SharedSecret.Secret, t.SharedSecret.Version, gw.Address, v.HAVPNAddresses[i])
	}
	b.WriteString(`
install -m 0640 "$here/frr.conf" "$root/etc/frr/frr.conf"
if [[ -f $root/etc/frr/daemons ]]; then
  sed -i 's/^bgpd=no$/bgpd=yes/' "$root/etc/frr/daemons"
fi

if [[ -n $root ]]; then
  exit 0
fi
chown frr:frr /etc/frr/frr.conf
networkctl reload
systemctl restart frr
systemctl restart strongswan
swanctl --load-all
`)
	return []byte(b.String())
}
