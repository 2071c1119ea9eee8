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
	frrFromSite       = "nodegen-from-site"
	frrToSite         = "nodegen-to-site"
)

// VPN renders the files of each on-prem VPN gateway host of
// cluster.gcp.network.vpn into out/onprem/vpn/<gateway>/: strongSwan's
// swanctl.conf and one connection file per tunnel that ends there, charon's
// settings, FRR's configuration, the XFRM interface of each tunnel as
// systemd-networkd files, and the MSS clamp of TCP through the tunnels
// with the systemd unit that loads it. It renders nothing without a VPN, or before the
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
		files[dir+layout.MSSClampFile] = mssClamp(src, g, tunnels, header)
		files[dir+layout.MSSClampUnitFile] = mssClampUnit(src, g, header)
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

// xfrmNetdev is tunnel i's XFRM interface, at the tunnel's payload MTU
// (model.VPN.TunnelPayloadMTU): a packet larger than the tunnel carries
// is fragmented, or refused with ICMP "fragmentation needed" when it
// forbids fragmenting, before it is encrypted, as Cloud VPN requires (it
// takes no ESP packet fragmented after encapsulation). The kernel's
// default for an XFRM interface is 1500 (net/xfrm/xfrm_interface_core.c,
// xfrmi_dev_setup), which lets a full-size packet be encrypted whole.
func xfrmNetdev(src *model.Source, i int, header string) []byte {
	v := src.Cluster.GCP.Network.VPN
	mtu := ""
	if m, ok := v.TunnelPayloadMTU(i); ok {
		mtu = fmt.Sprintf("# At %s's payload MTU through Cloud VPN (ESP %s): packets are\n# fragmented before they are encrypted, never after.\nMTUBytes=%d\n", model.TunnelName(i), v.ESPProposal, m)
	}
	return fmt.Appendf(nil, `%s#
# The XFRM interface of %s (strongSwan's if_id %d), not bound to another
# interface: /etc/systemd/network/%s.netdev.

[NetDev]
Name=%s
Kind=xfrm
%s
[Xfrm]
InterfaceId=%d
Independent=yes
`, header, model.TunnelName(i), model.TunnelInterfaceID(i), model.TunnelInterface(i), model.TunnelInterface(i), mtu, model.TunnelInterfaceID(i))
}

// The MSS clamp's nftables table, where install.sh puts it and the unit
// that loads it.
const (
	mssClampTable     = "nodegen_vpn_mss_clamp"
	mssClampInstalled = "/etc/nodegen/vpn-mss-clamp.nft"
	mssClampService   = "nodegen-vpn-mss-clamp.service"
)

// mssClamp is the gateway's nftables table that clamps the MSS of TCP
// connections through its tunnels to what a tunnel's payload MTU carries
// (model.TCPMSS): the SYN and SYN-ACK forwarded into a tunnel and those
// forwarded out of one, so that neither end sends a segment larger than
// the tunnel takes even where ICMP "fragmentation needed" never reaches
// the sender (a host or site firewall that drops it). Pod traffic is
// sized by the pod MTU instead (VXLAN and IP-in-IP packets are not TCP
// here). The file replaces the table whole in one transaction, so loading
// it again never leaves a moment without the clamp.
func mssClamp(src *model.Source, g int, tunnels []int, header string) []byte {
	v := src.Cluster.GCP.Network.VPN
	var b strings.Builder
	b.WriteString(header)
	fmt.Fprintf(&b, "#\n# %s of the on-prem VPN gateway %s of cluster\n", mssClampInstalled, v.PeerGateways[g].Name)
	fmt.Fprintf(&b, "# %s, loaded by %s: TCP through the tunnels\n", src.Cluster.Name, mssClampService)
	b.WriteString("# offers at most the MSS that the tunnel's payload MTU carries, both ways.\n\n")
	fmt.Fprintf(&b, "table inet %[1]s\ndelete table inet %[1]s\n\ntable inet %[1]s {\n", mssClampTable)
	b.WriteString("  chain forward {\n    type filter hook forward priority mangle; policy accept;\n")
	for _, i := range tunnels {
		mtu, ok := v.TunnelPayloadMTU(i)
		if !ok {
			fmt.Fprintf(&b, "    # %s: the payload MTU of ESP %s is not known; not clamped.\n", model.TunnelName(i), v.ESPProposal)
			continue
		}
		mss := model.TCPMSS(mtu)
		fmt.Fprintf(&b, "    # %s: payload MTU %d (ESP %s), MSS %d.\n", model.TunnelName(i), mtu, v.ESPProposal, mss)
		for _, dir := range []string{"oifname", "iifname"} {
			fmt.Fprintf(&b, "    %s %q meta nfproto ipv4 tcp flags & (syn | rst) == syn tcp option maxseg size > %d tcp option maxseg size set %d\n", dir, model.TunnelInterface(i), mss, mss)
		}
	}
	b.WriteString("  }\n}\n")
	return []byte(b.String())
}

// mssClampUnit loads the MSS clamp at boot, before the network is up, and
// again whenever nftables.service loads its ruleset (Debian's
// /etc/nftables.conf begins with "flush ruleset", which removes it).
func mssClampUnit(src *model.Source, g int, header string) []byte {
	v := src.Cluster.GCP.Network.VPN
	return fmt.Appendf(nil, `%[1]s#
# /etc/systemd/system/%[2]s: loads
# %[3]s, the MSS clamp of the VPN tunnels of the
# on-prem gateway %[4]s of cluster %[5]s.

[Unit]
Description=MSS clamp of the VPN tunnels to Google Cloud (nodegen)
DefaultDependencies=no
Wants=network-pre.target
Before=network-pre.target shutdown.target
After=nftables.service
PartOf=nftables.service
ReloadPropagatedFrom=nftables.service
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/nft -f %[3]s
ExecReload=/usr/sbin/nft -f %[3]s
ExecStop=/usr/sbin/nft delete table inet %[6]s

[Install]
WantedBy=multi-user.target
`, header, mssClampService, mssClampInstalled, v.PeerGateways[g].Name, src.Cluster.Name, mssClampTable)
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
// ones; both tunnels used at once when both end here. With siteBGP, a
// session with each of the site's routers that sends them the cloud
// prefixes (only those: the gateway has them from the Cloud Router only
// while a tunnel's session is up, so a gateway that has lost its tunnels,
// or is lost, leaves the site's routing at the hold time) and takes
// nothing from them.
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
	site := v.SiteBGP
	if site != nil {
		b.WriteString("! The site's routers: the cloud prefixes while this gateway has them,\n! nothing taken from them.\n")
		fmt.Fprintf(&b, "route-map %s permit 10\n match ip address prefix-list %s\nexit\n!\n", frrToSite, frrCloudPrefixes)
		fmt.Fprintf(&b, "route-map %s deny 10\nexit\n!\n", frrFromSite)
	}
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
	if site != nil {
		for _, r := range site.Routers {
			fmt.Fprintf(&b, " neighbor %s remote-as %d\n", r, site.ASN)
			fmt.Fprintf(&b, " neighbor %s description site router\n", r)
			fmt.Fprintf(&b, " neighbor %s timers %d %d\n", r, model.SiteBGPKeepalive, model.SiteBGPHoldTime)
			fmt.Fprintf(&b, " neighbor %s timers connect %d\n", r, model.SiteBGPConnectRetry)
		}
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
	if site != nil {
		for _, r := range site.Routers {
			if v.SiteIBGP() {
				// An iBGP peer keeps the next hop it is sent (RFC 4271,
				// 5.1.3): the Cloud Router's inside address, which the
				// site cannot reach.
				fmt.Fprintf(&b, "  neighbor %s next-hop-self\n", r)
			}
			fmt.Fprintf(&b, "  neighbor %s route-map %s in\n", r, frrFromSite)
			fmt.Fprintf(&b, "  neighbor %s route-map %s out\n", r, frrToSite)
		}
	}
	b.WriteString(" exit-address-family\nexit\n!\n")
	return []byte(b.String())
}

// vpnInstallScript is the gateway's install.sh. It changes nothing until
// every prerequisite is there and every tunnel's key is read and FRR's
// configuration parses: it reads the keys from Secret Manager into a
// staging directory (as hexadecimal, so that no byte of a key needs
// quoting) and checks frr.conf with vtysh's dry run and the MSS clamp
// with nft's there. Then it installs charon's and FRR's settings (FRR
// reloaded, not restarted, once bgpd runs) and the MSS clamp, and then
// the tunnels whose files or key changed, one at a
// time: each tunnel's files, loaded into the running charon, the tunnel
// re-initiated, and the next one only once this one's CHILD_SA is
// installed and its BGP session Established. A tunnel whose files and
// key are unchanged is not touched; an established tunnel is touched only
// while every other tunnel of the host is established. With ROOT set it
// installs every file into that directory and starts nothing.
func vpnInstallScript(src *model.Source, g int, tunnels []int) []byte {
	v := src.Cluster.GCP.Network.VPN
	gw := v.PeerGateways[g]
	names := make([]string, len(tunnels))
	ifnames := make([]string, len(tunnels))
	neighbors := make([]string, len(tunnels))
	devs := make([]string, len(tunnels))
	for k, i := range tunnels {
		names[k] = model.TunnelName(i)
		ifnames[k] = fmt.Sprintf("[%s]=%s", model.TunnelName(i), model.TunnelInterface(i))
		devs[k] = model.TunnelInterface(i)
		cloudAddr, _, _ := v.Tunnels[i].InsideAddresses()
		neighbors[k] = fmt.Sprintf("[%s]=%s", model.TunnelName(i), cloudAddr)
	}
	var b strings.Builder
	b.WriteString("#!/usr/bin/env bash\n")
	b.WriteString(layout.HashHeader(src.Name))
	fmt.Fprintf(&b, `#
# Installs the on-prem VPN gateway %[1]s of cluster %[2]s from this
# directory (docs/vpn.md): run it as root on the gateway, with gcloud
# logged in as an account that may read the tunnels' secrets in project
# %[3]s. It changes nothing until every prerequisite is there, every
# tunnel's pre-shared key is read and frr.conf and the MSS clamp parse.
# Then it installs charon's and FRR's settings (FRR reloaded, not
# restarted) and loads the MSS clamp, and then each
# tunnel whose files or key changed, one at a time: it loads the tunnel
# into the running charon, re-initiates it and waits until its BGP session
# is Established before it touches the next. A tunnel whose files and key
# are unchanged is left alone. With ROOT set, it installs every file into
# that directory instead of / and starts nothing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${ROOT:-}
project=%[3]s
tunnels=(%[4]s)
declare -A ifname=(%[5]s)
declare -A neighbor=(%[6]s)
# How long a re-initiated tunnel may take to be back with its BGP session
# Established: polls of 2 s.
polls=60

fail() {
  echo "install.sh: $*" >&2
  exit 1
}

# 1. Prerequisites, before anything changes.
need() {
  command -v "$1" >/dev/null || fail "$1 is missing: $2; nothing was changed"
}
for cmd in cmp cp install mktemp od sed tr; do
  need "$cmd" "apt-get install coreutils diffutils sed"
done
need gcloud "it is not a Debian package: install the Google Cloud CLI (https://cloud.google.com/sdk/docs/install#deb) and log in as an account that may read the tunnels' secrets in project $project"
if [[ -z $(gcloud auth list --filter=status:ACTIVE --format='value(account)' 2>/dev/null) ]]; then
  fail "gcloud has no active account: log in (gcloud auth login, or gcloud auth activate-service-account --key-file=KEY) as an account with secretmanager.versions.access on the tunnels' secrets in project $project; nothing was changed"
fi
if [[ -z $root ]]; then
  [[ $EUID -eq 0 ]] || fail "run it as root; nothing was changed"
  need systemctl "install.sh needs systemd"
  need networkctl "apt-get install systemd"
  need ip "apt-get install iproute2"
  need nft "apt-get install nftables"
  need swanctl "apt-get install strongswan-swanctl charon-systemd"
  systemctl cat strongswan.service >/dev/null 2>&1 || fail "strongSwan's service strongswan.service is missing: apt-get install charon-systemd; nothing was changed"
  need vtysh "apt-get install frr frr-pythontools"
  systemctl cat frr.service >/dev/null 2>&1 || fail "FRR's service frr.service is missing: apt-get install frr frr-pythontools; nothing was changed"
  # systemctl reload frr runs frr-reload.py, which Debian ships apart
  # (frr's frrinit.sh, reload).
  [[ -x /usr/lib/frr/frr-reload.py ]] || fail "FRR's reload script /usr/lib/frr/frr-reload.py is missing (install.sh reloads FRR instead of restarting it): apt-get install frr-pythontools; nothing was changed"
  # The XFRM interfaces are systemd-networkd's netdevs: without networkd
  # enabled they are not there after a reboot. Debian 12 leaves it off, and
  # turning it on is the host's choice (it also enables
  # systemd-networkd-wait-online.service), so install.sh asks for it.
  if ! systemctl is-enabled --quiet systemd-networkd.service; then
    fail "systemd-networkd is not enabled: it creates the tunnels' XFRM interfaces (%[7]s), now and at every boot. Enable it (it manages only the interfaces its .network files match): systemctl enable --now systemd-networkd; then run install.sh again. Nothing was changed"
  fi
  systemctl is-active --quiet systemd-networkd.service || fail "systemd-networkd is enabled but not running: systemctl start systemd-networkd; then run install.sh again. Nothing was changed"
fi

# 2. Stage every file, with the keys, and check what can be checked.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -R "$here/conf.d" "$here/systemd-network" "$here/strongswan.conf.d" "$here/swanctl.conf" "$here/frr.conf" "$here/nftables" "$here/systemd-system" "$stage/"
mkdir -m 0700 "$stage/secrets.d"

# stage_secret TUNNEL SECRET VERSION LOCAL_ID REMOTE_ID
stage_secret() {
  local hex
  if ! hex=$(gcloud secrets versions access "$3" --secret="$2" --project="$project" | od -An -v -tx1 | tr -d ' \n'); then
    fail "reading secret $2 (version $3) failed; nothing was changed"
  fi
  if [[ -z $hex ]]; then
    fail "secret $2 (version $3) is empty; nothing was changed"
  fi
  (
    umask 077
    printf 'secrets {\n  ike-%%s {\n    id-local = %%s\n    id-remote = %%s\n    secret = 0x%%s\n  }\n}\n' "$1" "$4" "$5" "$hex" >"$stage/secrets.d/$1.conf"
  )
}
`, gw.Name, src.Cluster.Name, src.Cluster.GCP.Project, strings.Join(names, " "), strings.Join(ifnames, " "), strings.Join(neighbors, " "), strings.Join(devs, " "))
	for _, i := range tunnels {
		t := &v.Tunnels[i]
		fmt.Fprintf(&b, "stage_secret %s %s %d %s %s\n", model.TunnelName(i), t.SharedSecret.Secret, t.SharedSecret.Version, gw.Address, v.HAVPNAddresses[i])
	}
	b.WriteString(installSwitch)
	return []byte(b.String())
}

// installSwitch is the part of install.sh that changes the host, once
// everything is staged.
const installSwitch = `
if [[ -f $root/etc/frr/daemons ]]; then
  cp "$root/etc/frr/daemons" "$stage/daemons"
  sed -i 's/^bgpd=no$/bgpd=yes/' "$stage/daemons"
fi

# differs STAGED INSTALLED: whether installing STAGED changes INSTALLED.
differs() {
  ! cmp -s "$1" "$2"
}

if [[ -n $root ]]; then
  install -d -m 0755 "$root/etc/systemd/network" "$root/etc/strongswan.d" "$root/etc/swanctl/conf.d" "$root/etc/frr"
  install -d -m 0700 "$root/etc/swanctl/secrets.d"
  install -m 0644 "$stage"/systemd-network/* "$root/etc/systemd/network/"
  install -m 0644 "$stage/strongswan.conf.d/nodegen.conf" "$root/etc/strongswan.d/nodegen.conf"
  install -m 0644 "$stage/swanctl.conf" "$root/etc/swanctl/swanctl.conf"
  install -m 0644 "$stage"/conf.d/*.conf "$root/etc/swanctl/conf.d/"
  install -m 0600 "$stage"/secrets.d/*.conf "$root/etc/swanctl/secrets.d/"
  install -m 0640 "$stage/frr.conf" "$root/etc/frr/frr.conf"
  install -d -m 0755 "$root/etc/nodegen" "$root/etc/systemd/system"
  install -m 0644 "$stage/` + layout.MSSClampFile + `" "$root` + mssClampInstalled + `"
  install -m 0644 "$stage/` + layout.MSSClampUnitFile + `" "$root/etc/systemd/system/` + mssClampService + `"
  if [[ -f $stage/daemons ]]; then
    install -m 0644 "$stage/daemons" "$root/etc/frr/daemons"
  fi
  exit 0
fi

out=$(vtysh --dryrun -f "$stage/frr.conf" 2>&1) || fail "vtysh refuses frr.conf: $out; nothing was changed"
out=$(nft --check -f "$stage/` + layout.MSSClampFile + `" 2>&1) || fail "nft refuses the MSS clamp (` + layout.MSSClampFile + `): $out; nothing was changed"

# established TUNNEL: its CHILD_SA is installed and its BGP session is
# Established (the state bgpd reports as bgpState).
# (Read whole: grep -q in a pipe would end the reader early, a failure
# under pipefail.)
established() {
  local sas bgp
  sas=$(swanctl --list-sas --ike "$1" --noblock 2>/dev/null) || return 1
  [[ $sas == *", INSTALLED, "* ]] || return 1
  bgp=$(vtysh -c "show bgp neighbors ${neighbor[$1]} json" 2>/dev/null) || return 1
  [[ $bgp =~ \"bgpState\":\ *\"Established\" ]]
}

# tunnel_differs TUNNEL: whether any of its files or its key changes.
tunnel_differs() {
  differs "$stage/conf.d/$1.conf" "/etc/swanctl/conf.d/$1.conf" ||
    differs "$stage/secrets.d/$1.conf" "/etc/swanctl/secrets.d/$1.conf" ||
    differs "$stage/systemd-network/${ifname[$1]}.netdev" "/etc/systemd/network/${ifname[$1]}.netdev" ||
    differs "$stage/systemd-network/${ifname[$1]}.network" "/etc/systemd/network/${ifname[$1]}.network"
}

# charon reads install_routes when it starts (strongswan 5.9.8,
# kernel_netlink_ipsec.c): a change of its settings takes a restart, which
# takes every tunnel of the host down, so only while none is up.
restart_charon=no
if differs "$stage/strongswan.conf.d/nodegen.conf" /etc/strongswan.d/nodegen.conf; then
  for t in "${tunnels[@]}"; do
    if established "$t"; then
      fail "charon's settings (/etc/strongswan.d/nodegen.conf) change, which takes a restart of strongSwan, and $t is up: the restart would take every tunnel of this host down. When that is acceptable: install -m 0644 $here/strongswan.conf.d/nodegen.conf /etc/strongswan.d/ && systemctl restart strongswan; then run install.sh again. Nothing was changed"
    fi
  done
  restart_charon=yes
fi

# 3. Switch: charon's and FRR's settings.
install -d -m 0755 /etc/systemd/network /etc/strongswan.d /etc/swanctl/conf.d /etc/frr
install -d -m 0700 /etc/swanctl/secrets.d
install -m 0644 "$stage/swanctl.conf" /etc/swanctl/swanctl.conf
if [[ $restart_charon == yes ]]; then
  install -m 0644 "$stage/strongswan.conf.d/nodegen.conf" /etc/strongswan.d/nodegen.conf
  echo "install.sh: charon's settings changed and no tunnel of this host is up: restarting strongSwan"
  systemctl restart strongswan.service
elif ! systemctl is-active --quiet strongswan.service; then
  systemctl start strongswan.service
fi

frr_reload=no
frr_restart=no
if [[ -f $stage/daemons ]] && differs "$stage/daemons" /etc/frr/daemons; then
  # bgpd was off: no BGP session, no route through the tunnels to lose.
  install -m 0644 "$stage/daemons" /etc/frr/daemons
  frr_restart=yes
fi
if differs "$stage/frr.conf" /etc/frr/frr.conf; then
  install -m 0640 -o frr -g frr "$stage/frr.conf" /etc/frr/frr.conf
  frr_reload=yes
fi
if [[ $frr_restart == yes ]] || ! systemctl is-active --quiet frr.service; then
  echo "install.sh: starting FRR with bgpd"
  systemctl restart frr.service
elif [[ $frr_reload == yes ]]; then
  # frr-reload.py applies the difference to the running daemons.
  echo "install.sh: reloading FRR's configuration"
  systemctl reload frr.service
fi

# The MSS clamp, before any tunnel is (re)initiated: loading it replaces
# its table in one transaction, which disturbs no connection.
clamp=` + mssClampService + `
if differs "$stage/` + layout.MSSClampUnitFile + `" /etc/systemd/system/$clamp ||
  differs "$stage/` + layout.MSSClampFile + `" ` + mssClampInstalled + `; then
  install -d -m 0755 /etc/nodegen /etc/systemd/system
  install -m 0644 "$stage/` + layout.MSSClampFile + `" ` + mssClampInstalled + `
  install -m 0644 "$stage/` + layout.MSSClampUnitFile + `" /etc/systemd/system/$clamp
  systemctl daemon-reload
  echo "install.sh: loading the MSS clamp of the tunnels ($clamp)"
  systemctl restart "$clamp"
elif ! systemctl is-active --quiet "$clamp"; then
  systemctl start "$clamp"
fi
systemctl is-enabled --quiet "$clamp" || systemctl enable --quiet "$clamp"

# 4. The tunnels, one at a time: first those that are down (they carry
# nothing), then the established ones.
order=()
for t in "${tunnels[@]}"; do
  established "$t" || order+=("$t")
done
for t in "${tunnels[@]}"; do
  established "$t" && order+=("$t")
done
for t in "${order[@]}"; do
  if ! tunnel_differs "$t"; then
    echo "install.sh: $t: unchanged, not touched"
    continue
  fi
  if established "$t"; then
    for o in "${tunnels[@]}"; do
      if [[ $o != "$t" ]] && ! established "$o"; then
        fail "$t is up and $o is not: re-initiating $t now would leave this host without a tunnel. Bring $o back first (swanctl --list-sas; vtysh -c 'show bgp summary'), then run install.sh again; $t's new settings are not installed"
      fi
    done
  fi
  echo "install.sh: $t: installing its settings and re-initiating it"
  i=${ifname[$t]}
  # networkd does not change a netdev that exists (systemd.netdev(5)): a
  # changed one is made anew.
  if differs "$stage/systemd-network/$i.netdev" "/etc/systemd/network/$i.netdev" && ip link show dev "$i" >/dev/null 2>&1; then
    ip link delete dev "$i"
  fi
  install -m 0644 "$stage/systemd-network/$i.netdev" "$stage/systemd-network/$i.network" /etc/systemd/network/
  networkctl reload
  install -m 0600 "$stage/secrets.d/$t.conf" /etc/swanctl/secrets.d/
  install -m 0644 "$stage/conf.d/$t.conf" /etc/swanctl/conf.d/
  # Loading leaves the unchanged connections' SAs as they are (strongswan
  # 5.9.8, vici_config.c merge_config); a new key takes a new IKE_SA.
  swanctl --load-all --noprompt
  sas=$(swanctl --list-sas --ike "$t" --noblock 2>/dev/null) || true
  if [[ $sas == "$t: "* ]]; then
    swanctl --terminate --ike "$t" --force --timeout 10 >/dev/null
  fi
  swanctl --initiate --child "$t" --timeout 30 >/dev/null || echo "install.sh: $t: not up yet, charon keeps trying"
  n=0
  until established "$t"; do
    if ((++n > polls)); then
      fail "$t is not back $((2 * polls)) s after its re-initiation (CHILD_SA installed, BGP session with ${neighbor[$t]} Established); the tunnels after it were not touched. See swanctl --list-sas --ike $t; vtysh -c 'show bgp neighbors ${neighbor[$t]}'"
    fi
    sleep 2
  done
  echo "install.sh: $t: up, BGP session with ${neighbor[$t]} Established"
done
`
