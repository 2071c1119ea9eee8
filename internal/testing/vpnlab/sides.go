//go:build linux

package vpnlab

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
)

// cloudVPNProposals are the proposals of the stand-in for Cloud VPN, in
// strongSwan's syntax: every IKEv2 cipher of Google's "Supported IKE
// ciphers" page for the phase, kept as data in the gce package
// (gce.CloudVPNCiphers), one proposal per table (AEAD or not), and in
// phase 2 always with a PFS group, which the page requires. An on-prem
// proposal outside them fails in the lab as it would against Cloud VPN.
func cloudVPNProposals(esp bool) string {
	phase := 1
	if esp {
		phase = 2
	}
	proposal := func(aead bool, roles ...string) string {
		var all []string
		for _, r := range roles {
			all = append(all, gce.CloudVPNKeywords(phase, r, aead)...)
		}
		return strings.Join(all, "-")
	}
	if esp {
		return proposal(true, "encryption", "pfs") + "," + proposal(false, "encryption", "integrity", "pfs")
	}
	return proposal(true, "encryption", "prf", "dh") + "," + proposal(false, "encryption", "integrity", "prf", "dh")
}

// cloudSide is the stand-in for Cloud VPN and the Cloud Router, built
// from the rendered Terraform's values: one tunnel per HA VPN interface,
// at the address Google gave that interface (addrs, by interface), which
// answers the on-prem gateway's IKE with any supported algorithm, and a
// BGP speaker with the router's ASN and keepalive that advertises its
// custom ranges to each peer with the peer's MED and uses every path it
// learns (as the VPC does with equal priorities). psk gives each tunnel's
// pre-shared key from its Secret Manager secret's name. The Cloud Router
// runs no BFD on HA VPN tunnels, and neither does the stand-in. Packets
// that do not fit meet what Cloud VPN does with them (Side.CloudVPN).
func cloudSide(v CloudVPN, addrs []netip.Addr, psk func(secret string) string, gateway netip.Prefix, host netip.Addr) (Side, error) {
	s := Side{Name: "cl", Gateway: gateway, Host: host, CloudVPN: true}
	if v.AdvertiseMode != "CUSTOM" {
		return s, fmt.Errorf("the Cloud Router advertises in %s mode: the stand-in knows only custom ranges", v.AdvertiseMode)
	}
	var frr strings.Builder
	frr.WriteString("frr defaults traditional\n!\n")
	for _, t := range v.Tunnels {
		fmt.Fprintf(&frr, "route-map med-%d permit 10\n set metric %d\nexit\n!\n", t.Interface, t.Priority)
	}
	fmt.Fprintf(&frr, "router bgp %d\n no bgp ebgp-requires-policy\n no bgp network import-check\n", v.ASN)
	for i, t := range v.Tunnels {
		if t.Interface < 0 || int(t.Interface) >= len(addrs) {
			return s, fmt.Errorf("%s: HA VPN interface %d has no address", t.Resource, t.Interface)
		}
		if t.IKEVersion != 2 {
			return s, fmt.Errorf("%s: IKE version %d; the stand-in speaks IKEv2", t.Resource, t.IKEVersion)
		}
		if i == 0 {
			fmt.Fprintf(&frr, " bgp router-id %s\n", t.Inside.Addr())
		}
		local := addrs[t.Interface]
		name := fmt.Sprintf("gcp%d", t.Interface)
		s.Tunnels = append(s.Tunnels, Tunnel{
			Conn: name, IfName: name, Inside: t.Inside, Local: local, Remote: t.PeerAddress,
			Swanctl: []byte(fmt.Sprintf(`connections {
	%[1]s {
		version = 2
		local_addrs = %[2]s
		remote_addrs = %[3]s
		proposals = %[4]s
		mobike = no
		local {
			auth = psk
			id = %[2]s
		}
		remote {
			auth = psk
			id = %[3]s
		}
		children {
			%[1]s {
				local_ts = 0.0.0.0/0
				remote_ts = 0.0.0.0/0
				esp_proposals = %[5]s
				start_action = none
			}
		}
	}
}
secrets {
	ike-%[1]s {
		id = %[3]s
		secret = %[6]q
	}
}
`, name, local, t.PeerAddress, cloudVPNProposals(false), cloudVPNProposals(true), psk(t.Secret))),
		})
		fmt.Fprintf(&frr, " neighbor %s remote-as %d\n neighbor %s timers %d %d\n", t.PeerInside, t.PeerASN, t.PeerInside, v.Keepalive, 3*v.Keepalive)
	}
	frr.WriteString(" address-family ipv4 unicast\n")
	for _, p := range v.Advertised {
		fmt.Fprintf(&frr, "  network %s\n", p)
	}
	fmt.Fprintf(&frr, "  maximum-paths %d\n", len(v.Tunnels))
	for _, t := range v.Tunnels {
		fmt.Fprintf(&frr, "  neighbor %s route-map med-%d out\n", t.PeerInside, t.Interface)
	}
	frr.WriteString(" exit-address-family\nexit\n")
	s.FRR = []byte(frr.String())
	return s, nil
}

var (
	swanRemote = regexp.MustCompile(`(?m)^\s*remote_addrs\s*=\s*(\S+)\s*$`)
	swanLocal  = regexp.MustCompile(`(?ms)^\s*local\s*\{[^}]*?^\s*id\s*=\s*(\S+)\s*$`)
	swanIfID   = regexp.MustCompile(`(?m)^\s*if_id_out\s*=\s*(\d+)\s*$`)
	swanConn   = regexp.MustCompile(`(?m)^connections\s*\{\s*\n\s*([A-Za-z0-9_-]+)\s*\{`)
)

// onpremSide is an on-prem gateway as its rendered folder
// (out/onprem/vpn/<gateway>/) configures it: a charon per conf.d/ file,
// loaded with that file as written plus its pre-shared key in the form
// docs/vpn.md writes to secrets.d/ (psk gives the key of a tunnel by its
// connection's name); each tunnel's interface and inside address from
// the systemd-networkd files whose InterfaceId is the connection's
// if_id, with the MTU of its .netdev (MTUBytes=, or the kernel's default
// without one); strongswan.conf.d/ added to charon's settings; frr.conf
// and the MSS clamp (nftables/) as written.
func onpremSide(dir string, psk func(conn string) string, gateway netip.Prefix, host netip.Addr) (Side, error) {
	s := Side{Name: "op", Gateway: gateway, Host: host}
	var err error
	if s.FRR, err = os.ReadFile(filepath.Join(dir, "frr.conf")); err != nil {
		return s, err
	}
	if s.MSSClamp, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(layout.MSSClampFile))); err != nil {
		return s, err
	}
	extra, _ := filepath.Glob(filepath.Join(dir, "strongswan.conf.d", "*.conf"))
	sort.Strings(extra)
	for _, f := range extra {
		b, err := os.ReadFile(f)
		if err != nil {
			return s, err
		}
		s.Charon = append(s.Charon, b...)
	}
	// systemd-networkd: InterfaceId → name, name → address and MTU.
	ifByID := map[string]string{}
	mtuByName := map[string]int{}
	addrByName := map[string]netip.Prefix{}
	units, _ := filepath.Glob(filepath.Join(dir, "systemd-network", "*"))
	for _, f := range units {
		kv, err := iniValues(f)
		if err != nil {
			return s, err
		}
		switch filepath.Ext(f) {
		case ".netdev":
			if kv["NetDev.Kind"] != "xfrm" {
				return s, fmt.Errorf("%s: Kind=%s, want xfrm", f, kv["NetDev.Kind"])
			}
			ifByID[kv["Xfrm.InterfaceId"]] = kv["NetDev.Name"]
			// No MTUBytes= leaves the kernel's default (xfrmDefaultMTU).
			if v, ok := kv["NetDev.MTUBytes"]; ok {
				mtu, err := strconv.Atoi(v)
				if err != nil || mtu < 576 || mtu > 65535 {
					return s, fmt.Errorf("%s: MTUBytes=%s: the lab reads a number of bytes from 576 to 65535", f, v)
				}
				mtuByName[kv["NetDev.Name"]] = mtu
			}
		case ".network":
			p, err := netip.ParsePrefix(kv["Network.Address"])
			if err != nil {
				return s, fmt.Errorf("%s: Address: %w", f, err)
			}
			addrByName[kv["Match.Name"]] = p
		}
	}
	confs, _ := filepath.Glob(filepath.Join(dir, "conf.d", "*.conf"))
	sort.Strings(confs)
	if len(confs) == 0 {
		return s, fmt.Errorf("%s: no conf.d/*.conf", dir)
	}
	for _, f := range confs {
		b, err := os.ReadFile(f)
		if err != nil {
			return s, err
		}
		conn, remote, local, ifid := swanConn.FindSubmatch(b), swanRemote.FindSubmatch(b), swanLocal.FindSubmatch(b), swanIfID.FindSubmatch(b)
		if conn == nil || remote == nil || local == nil || ifid == nil {
			return s, fmt.Errorf("%s: no connection with remote_addrs, a local id and if_id_out", f)
		}
		name := string(conn[1])
		ra, err := netip.ParseAddr(string(remote[1]))
		if err != nil {
			return s, fmt.Errorf("%s: remote_addrs: %w", f, err)
		}
		la, err := netip.ParseAddr(string(local[1]))
		if err != nil {
			return s, fmt.Errorf("%s: local id: %w", f, err)
		}
		ifName, ok := ifByID[string(ifid[1])]
		if !ok {
			return s, fmt.Errorf("%s: if_id %s: no systemd-network .netdev with that InterfaceId", f, ifid[1])
		}
		inside, ok := addrByName[ifName]
		if !ok {
			return s, fmt.Errorf("%s: interface %s: no systemd-network .network with its Address", f, ifName)
		}
		sw := append(append([]byte{}, b...), fmt.Sprintf("secrets {\n\tike-%s {\n\t\tid = %s\n\t\tsecret = %q\n\t}\n}\n", name, ra, psk(name))...)
		s.Tunnels = append(s.Tunnels, Tunnel{Conn: name, IfName: ifName, Inside: inside, Local: la, Remote: ra, Swanctl: sw, MTU: mtuByName[ifName]})
	}
	return s, nil
}

// iniValues reads a systemd unit file into "Section.Key" → value (the
// last one wins).
func iniValues(f string) (map[string]string, error) {
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	kv := map[string]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, fmt.Errorf("%s:%s: not key=value", f, strconv.Itoa(n))
			}
			kv[section+"."+strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return kv, sc.Err()
}

// itoa writes n in decimal.
func itoa[T int | int64](n T) string { return strconv.FormatInt(int64(n), 10) }
