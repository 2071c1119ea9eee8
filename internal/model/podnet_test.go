package model

import (
	"fmt"
	"testing"
)

// googlePayloadMTU is Google's payload-MTU table (Cloud VPN, "MTU
// considerations"), written out row by row as the page gives it: the
// payload MTU on an IPv4 gateway interface by ESP authentication, 20
// bytes less on an IPv6 one, 8 less with NAT-T. It is the test's own
// copy, independent of espPayloadMTUv4.
var googlePayloadMTU = []struct {
	auth      string // the page's name
	ipv4      int
	proposals []string // every ESP proposal vet accepts with that authentication
}{
	{"AES-GCM (AEAD)", 1406, []string{"aes128gcm16", "aes192gcm16", "aes256gcm16", "aes256gcm16-modp2048", "aes128gcm16-ecp256", "aes256gcm16-curve25519"}},
	{"HMAC-SHA2-256-128", 1390, []string{"aes128-sha256", "aes192-sha256", "aes256-sha256-modp2048", "aes256-sha256-ecp384"}},
	{"HMAC-SHA2-512-256", 1374, []string{"aes128-sha512", "aes256-sha512-modp4096"}},
}

// TestPodMTUTable: the pod MTU for every ESP proposal nodegen takes, each
// gateway interface family, with and without NAT-T, and each
// encapsulation and node family, against Google's table and Calico's
// overheads, with NICs that never bind (9000).
func TestPodMTUTable(t *testing.T) {
	overhead := []struct {
		encap  string
		family IPFamily
		bytes  int
	}{{EncapVXLAN, IPv4, 50}, {EncapVXLAN, IPv6, 70}, {EncapIPIP, IPv4, 20}}
	n := 0
	for _, row := range googlePayloadMTU {
		for _, prop := range row.proposals {
			for _, fam := range []IPFamily{IPv4, IPv6} {
				for _, nat := range []bool{false, true} {
					want := row.ipv4
					if fam == IPv6 {
						want -= 20
					}
					if nat {
						want -= 8
					}
					got, ok := ESPPayloadMTU(prop, fam, nat)
					if !ok || got != want {
						t.Errorf("ESPPayloadMTU(%q, %v, NAT-T %v) = %d, %v; Google's table (%s): %d", prop, fam, nat, got, ok, row.auth, want)
					}
					for _, o := range overhead {
						ov, ok := EncapOverhead(o.encap, o.family)
						if !ok || ov != o.bytes {
							t.Errorf("EncapOverhead(%s, %v) = %d, %v; Calico: %d", o.encap, o.family, ov, ok, o.bytes)
						}
						n++
						if got-ov != want-o.bytes {
							t.Errorf("pod MTU %s, %v tunnel, NAT-T %v, %s over %v: %d, want %d", prop, fam, nat, o.encap, o.family, got-ov, want-o.bytes)
						}
					}
				}
			}
		}
	}
	if n != 12*2*2*3 {
		t.Fatalf("%d combinations checked", n)
	}
	for _, prop := range []string{"aes256-sha384", "aes256-sha384-modp2048", "aes128-md5", "chacha20poly1305", ""} {
		if got, ok := ESPPayloadMTU(prop, IPv4, false); ok {
			t.Errorf("ESPPayloadMTU(%q) = %d; Google's table has no entry for it", prop, got)
		}
	}
	if _, ok := EncapOverhead(EncapIPIP, IPv6); ok {
		t.Error("IP in IP over IPv6: Calico has none (its IPPool CRD refuses ipipMode on IPv6 pools)")
	}
}

// TestClusterPodMTU: the model takes the smallest path, the NICs
// included, and the tunnels of a gateway behind NAT; the source's MTU
// replaces the computed one.
func TestClusterPodMTU(t *testing.T) {
	cluster := func(vpc, onprem int, esp string, nat bool, encap string, mtu int) *Cluster {
		return &Cluster{
			GCP: GCP{Network: &GCPNetwork{MTU: vpc, OnpremNodeMTU: onprem, VPN: &VPN{
				ESPProposal:  esp,
				PeerGateways: []VPNPeerGateway{{Name: "a"}, {Name: "b", NATTraversal: nat}},
				Tunnels:      []VPNTunnel{{}, {}},
			}}},
			PodNetwork: &PodNetwork{Encapsulation: encap, MTU: mtu},
		}
	}
	for _, tc := range []struct {
		c                 *Cluster
		computed, mtu     int
		derivation, paths string
	}{
		{cluster(1460, 1500, "aes256gcm16-modp2048", false, EncapVXLAN, 0), 1356, 1356, "1356 = min(1460, 1500, 1406, 1406) - 50 (VXLAN over IPv4)", "4"},
		{cluster(1460, 1500, "aes256gcm16-modp2048", true, EncapVXLAN, 0), 1348, 1348, "1348 = min(1460, 1500, 1406, 1398) - 50 (VXLAN over IPv4)", "4"},
		{cluster(1460, 1500, "aes256-sha512", false, EncapIPIP, 0), 1354, 1354, "1354 = min(1460, 1500, 1374, 1374) - 20 (IPIP over IPv4)", "4"},
		{cluster(1460, 1300, "aes256gcm16", false, EncapVXLAN, 1200), 1250, 1200, "1250 = min(1460, 1300, 1406, 1406) - 50 (VXLAN over IPv4)", "4"},
		{cluster(1300, 1500, "aes256-sha256", false, EncapVXLAN, 0), 1250, 1250, "1250 = min(1300, 1500, 1390, 1390) - 50 (VXLAN over IPv4)", "4"},
	} {
		m := tc.c.PodMTU()
		if m.Computed != tc.computed || m.MTU != tc.mtu || m.Derivation() != tc.derivation || fmt.Sprint(len(m.Paths)) != tc.paths || len(m.Unknown) != 0 {
			t.Errorf("PodMTU = %d (rendered %d), %q, %d paths, unknown %v; want %d (%d), %q", m.Computed, m.MTU, m.Derivation(), len(m.Paths), m.Unknown, tc.computed, tc.mtu, tc.derivation)
		}
	}
	// The on-prem gateways' interfaces: each tunnel at its own payload MTU.
	c := cluster(1460, 1500, "aes256gcm16", true, EncapVXLAN, 0)
	if a, _ := c.GCP.Network.VPN.TunnelPayloadMTU(0); a != 1406 {
		t.Errorf("tunnel0 (no NAT) %d, want 1406", a)
	}
	if b, _ := c.GCP.Network.VPN.TunnelPayloadMTU(1); b != 1398 {
		t.Errorf("tunnel1 (NAT-T) %d, want 1398", b)
	}
	// Unknown: no pod MTU.
	if m := cluster(1460, 1500, "aes256-sha384", false, EncapVXLAN, 0).PodMTU(); m.Computed != 0 || len(m.Unknown) != 1 {
		t.Errorf("sha384: computed %d, unknown %v; want 0 and one", m.Computed, m.Unknown)
	}
	if m := cluster(1460, 1500, "aes256gcm16", false, "VXLANCrossSubnet", 0).PodMTU(); m.Computed != 0 || len(m.Unknown) != 1 {
		t.Errorf("CrossSubnet: computed %d, unknown %v; want 0 and one", m.Computed, m.Unknown)
	}
}
