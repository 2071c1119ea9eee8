//go:build linux

package vpnlab

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// What Cloud VPN does with packets that do not fit, from Google's "MTU
// considerations"
// (https://cloud.google.com/network-connectivity/docs/vpn/concepts/mtu-considerations):
// the gateway MTU, the largest ESP packet it sends or takes, is 1460; it
// does not take ESP fragmented after encapsulation (the peer must
// fragment before it encrypts); the largest inner packet a tunnel carries,
// its payload MTU, depends on the ESP algorithm (payloadMTU); an inner
// packet over it with DF set is answered with ICMP "fragmentation needed",
// one with DF clear "might be dropped", which the stand-in does.
const cloudVPNGatewayMTU = 1460

// udpEncap is what the lab's ESP costs beyond what Cloud VPN counts:
// kernel-libipsec sends ESP in UDP always (an 8-byte header), where the
// gateways, with no NAT between them, would send plain ESP. The stand-in
// enforces its gateway MTU on the ESP packet without that header.
const udpEncap = 8

// cloudVPNWire is the stand-in's nftables table for ESP from the wire. Its
// chain runs before conntrack reassembles fragments (priority -400,
// NF_IP_PRI_CONNTRACK_DEFRAG), which the port maps' NAT loads.
var cloudVPNWire = fmt.Sprintf(`table ip vpnlab_cloudvpn {
	counter fragmented {}
	counter oversize {}
	chain wire {
		type filter hook prerouting priority -450; policy accept;
		iifname "wan*" ip frag-off & 0x3fff != 0 counter name "fragmented" drop
		iifname "wan*" ip length > %d counter name "oversize" drop
	}
}
`, cloudVPNGatewayMTU+udpEncap)

// payloadMTU is Google's payload MTU on an IPv4 gateway interface without
// NAT-T for an ESP algorithm as swanctl --list-sas names it
// ("AES_GCM_16-256", "AES_CBC-256/HMAC_SHA2_256_128"): 1406 for AEAD
// ciphers, 1390 for HMAC-SHA2-256-128 and HMAC-SHA1-96, 1374 for
// HMAC-SHA2-512-256 (the page's table).
func payloadMTU(esp string) (int, error) {
	parts := strings.Split(esp, "/")
	if strings.HasPrefix(parts[0], "AES_GCM_") {
		return 1406, nil
	}
	if len(parts) > 1 {
		switch parts[1] {
		case "HMAC_SHA2_256_128", "HMAC_SHA1_96":
			return 1390, nil
		case "HMAC_SHA2_512_256":
			return 1374, nil
		}
	}
	return 0, fmt.Errorf("Google's MTU table gives no payload MTU for ESP %s", esp)
}

// espAlgorithm finds an installed CHILD_SA's ESP algorithm in swanctl
// --list-sas ("tunnel0: #1, reqid 1, INSTALLED, TUNNEL-in-UDP,
// ESP:AES_GCM_16-256/MODP_2048").
var espAlgorithm = regexp.MustCompile(`INSTALLED, [A-Za-z-]+, ESP:([A-Z0-9_/-]+)`)

// payloadLimits writes the stand-in's table for inner packets into its
// tunnels: one over the tunnel's payload MTU with DF clear is dropped. The
// kernel itself answers one with DF set with ICMP "fragmentation needed"
// (the tunnel device has the payload MTU; ip_forward checks it before the
// forward hook, linux v6.18 net/ipv4/ip_forward.c).
func (l *Lab) payloadLimits(s *side) {
	var nft strings.Builder
	nft.WriteString("table ip vpnlab_payload\ndelete table ip vpnlab_payload\ntable ip vpnlab_payload {\n\tcounter dfclear {}\n")
	nft.WriteString("\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n")
	for i, tn := range s.Tunnels {
		fmt.Fprintf(&nft, "\t\toifname %q ip length > %d ip frag-off & 0x4000 == 0 counter name \"dfclear\" drop\n", tn.IfName, s.mtus[i])
	}
	nft.WriteString("\t}\n}\n")
	f := filepath.Join(l.dir, s.Name+"-payload-mtu.nft")
	l.write(f, []byte(nft.String()))
	l.run(s.gw, "nft", "-f", f)
}

// TunnelMTUs returns the MTU of each tunnel device of side i.
func (l *Lab) TunnelMTUs(i int) []int {
	return append([]int(nil), l.sides[i].mtus...)
}

// SetTunnelMTU sets the MTU of every tunnel device of side i, which must
// not be a CloudVPN side (Cloud VPN's are Google's), to mtu, or with 0 to
// the tunnel's own (Tunnel.MTU), and forgets the path MTUs every
// namespace of the lab learned.
func (l *Lab) SetTunnelMTU(i, mtu int) {
	l.t.Helper()
	s := l.sides[i]
	if s.CloudVPN {
		l.t.Fatalf("vpnlab: side %s stands in for Cloud VPN: its tunnels' MTUs are Google's", s.Name)
	}
	for j, tn := range s.Tunnels {
		m := mtu
		if m == 0 {
			m = tn.MTU
		}
		if m == 0 {
			m = xfrmDefaultMTU
		}
		if m > tunRead {
			l.t.Fatalf("vpnlab: MTU %d, over the %d bytes charon reads whole", m, tunRead)
		}
		l.run(s.gw, "ip", "link", "set", tn.IfName, "mtu", itoa(m))
		s.mtus[j] = m
	}
	l.FlushPathMTUs()
}

// FlushPathMTUs forgets the path MTUs learned from ICMP in every
// namespace of the lab (ip route flush cache also flushes the next-hop
// exceptions that hold them).
func (l *Lab) FlushPathMTUs() {
	l.t.Helper()
	for _, s := range l.sides {
		for _, ns := range []string{s.gw, s.host, s.pod} {
			if ns != "" {
				l.run(ns, "ip", "route", "flush", "cache")
			}
		}
	}
}

// Dropped returns what side i's Cloud VPN stand-in dropped: ESP
// fragmented after encapsulation, ESP over the gateway MTU, inner packets
// with DF clear over a tunnel's payload MTU (packets, by counter name).
func (l *Lab) Dropped(i int) map[string]int {
	l.t.Helper()
	s := l.sides[i]
	got := map[string]int{}
	if !s.CloudVPN {
		return got
	}
	for _, table := range []string{"vpnlab_cloudvpn", "vpnlab_payload"} {
		out := l.run(s.gw, "nft", "-j", "list", "counters", "table", "ip", table)
		var list struct {
			Nftables []struct {
				Counter *struct {
					Name    string `json:"name"`
					Packets int    `json:"packets"`
				} `json:"counter"`
			} `json:"nftables"`
		}
		if err := json.Unmarshal(out, &list); err != nil {
			l.t.Fatalf("vpnlab: nft -j list counters: %v\n%s", err, out)
		}
		for _, e := range list.Nftables {
			if e.Counter != nil {
				got[e.Counter.Name] = e.Counter.Packets
			}
		}
	}
	return got
}
