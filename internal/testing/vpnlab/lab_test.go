//go:build linux

package vpnlab_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/testing/vpnlab"
)

// swanctl is a route-based IKEv2 connection with a pre-shared key, in
// the form of strongSwan's swanctl.conf(5).
func swanctl(name string, local, remote netip.Addr, start string) []byte {
	return []byte(fmt.Sprintf(`connections {
	%[1]s {
		version = 2
		local_addrs = %[2]s
		remote_addrs = %[3]s
		proposals = aes256-sha256-modp2048
		dpd_delay = 1s
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
				esp_proposals = aes256-sha256-modp2048
				start_action = %[4]s
				dpd_action = restart
			}
		}
	}
}
secrets {
	ike-%[1]s {
		id-1 = %[2]s
		id-2 = %[3]s
		secret = "lab-only-key"
	}
}
`, name, local, remote, start))
}

func frr(asn, peerASN int, network string, peers ...string) []byte {
	s := "frr defaults traditional\n!\nbfd\n"
	for i, p := range peers {
		s += fmt.Sprintf(" peer %s interface t%d\n  receive-interval 300\n  transmit-interval 300\n  detect-multiplier 3\n exit\n", p, i)
	}
	s += fmt.Sprintf("exit\n!\nrouter bgp %d\n no bgp ebgp-requires-policy\n no bgp network import-check\n", asn)
	for _, p := range peers {
		s += fmt.Sprintf(" neighbor %s remote-as %d\n neighbor %s bfd\n neighbor %s timers 3 9\n", p, peerASN, p, p)
	}
	s += fmt.Sprintf(" address-family ipv4 unicast\n  network %s\n exit-address-family\nexit\n", network)
	return []byte(s)
}

// TestLab runs two tunnels between two gateways with hand-written
// configurations: both come up, the hosts reach each other, a cut tunnel
// fails over to the other within BFD's detection time, and with both cut
// the routes are withdrawn.
func TestLab(t *testing.T) {
	vpnlab.Require(t)
	op, c0, c1 := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	onprem := vpnlab.Side{
		Name: "op",
		Tunnels: []vpnlab.Tunnel{
			{Conn: "t0", IfName: "t0", Inside: netip.MustParsePrefix("169.254.0.2/30"), Local: op, Remote: c0, Swanctl: swanctl("t0", op, c0, "start")},
			{Conn: "t1", IfName: "t1", Inside: netip.MustParsePrefix("169.254.1.2/30"), Local: op, Remote: c1, Swanctl: swanctl("t1", op, c1, "start")},
		},
		FRR:     frr(65010, 64512, "10.20.0.0/16", "169.254.0.1", "169.254.1.1"),
		Gateway: netip.MustParsePrefix("10.20.0.1/16"),
		Host:    netip.MustParseAddr("10.20.0.10"),
	}
	cloud := vpnlab.Side{
		Name: "cl",
		Tunnels: []vpnlab.Tunnel{
			{Conn: "t0", IfName: "t0", Inside: netip.MustParsePrefix("169.254.0.1/30"), Local: c0, Remote: op, Swanctl: swanctl("t0", c0, op, "none")},
			{Conn: "t1", IfName: "t1", Inside: netip.MustParsePrefix("169.254.1.1/30"), Local: c1, Remote: op, Swanctl: swanctl("t1", c1, op, "none")},
		},
		FRR:     frr(64512, 65010, "10.128.0.0/20", "169.254.0.2", "169.254.1.2"),
		Gateway: netip.MustParsePrefix("10.128.0.1/20"),
		Host:    netip.MustParseAddr("10.128.0.5"),
	}
	lab := vpnlab.Start(t, onprem, cloud)
	if err := lab.WaitUp(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitRoutes(0, netip.MustParsePrefix("10.128.0.0/20"), 2, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitRoutes(1, netip.MustParsePrefix("10.20.0.0/16"), 2, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	probe := lab.StartProbe(20 * time.Millisecond)
	defer probe.Stop()
	time.Sleep(500 * time.Millisecond)
	if n, gap := probe.Replies(time.Now().Add(-400 * time.Millisecond)); n == 0 {
		t.Fatalf("no echo through the VPN (longest gap %s)", gap)
	}
	used := lab.PathOf(1, onprem.Host)
	j := map[string]int{"t0": 0, "t1": 1}[used]
	cut := time.Now()
	lab.Cut(j)
	time.Sleep(3 * time.Second)
	n, gap := probe.Replies(cut)
	t.Logf("tunnel %s cut: %d echoes in 3 s, longest gap %s", used, n, gap)
	if gap > 1500*time.Millisecond || n == 0 {
		t.Errorf("failover took %s (BFD detects in 900 ms)", gap)
	}
	lab.Cut(1 - j)
	time.Sleep(2 * time.Second)
	if devs := lab.RouteDevs(0, netip.MustParsePrefix("10.128.0.0/20")); len(devs) != 0 {
		t.Errorf("both tunnels cut, the on-prem gateway still routes the cloud range through %v", devs)
	}
}
