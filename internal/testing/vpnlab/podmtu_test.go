//go:build linux

package vpnlab

import (
	"net/netip"
	"testing"
	"time"
)

// vxlanOverhead is what Calico takes from the NIC's MTU for VXLAN over
// IPv4, and what its auto-detection gives pods: the NIC's MTU less 50
// (docs.tigera.io, Calico "Configure MTU to maximize network
// performance").
const vxlanOverhead = 50

// podBytes is the size of each bulk transfer.
const podBytes = 8 << 20

// TestRenderedVPNPodMTU runs pods behind VXLAN on a node on each side of
// the rendered VPN (Pods), the cloud side's gateway a stand-in that
// treats packets that do not fit as Cloud VPN does, and moves 8 MiB over
// TCP between the pods, each way.
//
// With the MTUs an install gets when nothing sets them (Calico
// auto-detects the NIC's MTU less VXLAN's 50: 1450 on-prem, 1410 on GCE;
// an XFRM interface without an MTU has 1500), the transfer stalls both
// ways: on-prem, a full-size VXLAN packet fits the gateway's interface,
// is encrypted whole and its ESP fragmented after encapsulation, which
// Cloud VPN drops; from the cloud, a full-size VXLAN packet (DF clear) is
// over Cloud VPN's payload MTU and dropped. The test asserts the stall,
// so the lab is shown able to see it. With the rendered MTUs (the
// gateway's .netdev files, the pod MTU and pool of out/calico/) it
// completes both ways, and a sender of DF packets too large for the
// tunnel hears so from ICMP on either side.
func TestRenderedVPNPodMTU(t *testing.T) {
	t.Parallel()
	r, lab, _, _, _, _ := upLab(t)
	pn, err := renderedPodNetwork(r.out)
	if err != nil {
		t.Fatal(err)
	}
	first := pn.Pool.Masked().Addr()
	if !first.Is4() || pn.Pool.Bits() > 25 {
		t.Fatalf("pod pool %s: the lab takes two /26 blocks of an IPv4 pool", pn.Pool)
	}
	second := first.As4()
	second[3] += 64
	blocks := [2]netip.Prefix{netip.PrefixFrom(first, 26), netip.PrefixFrom(netip.AddrFrom4(second), 26)}
	auto := [2]int{onpremNICMTU - vxlanOverhead, vpcMTU - vxlanOverhead}
	pods := Pods{Blocks: blocks, MTU: auto}
	lab.StartPods(pods)
	rendered := lab.TunnelMTUs(0)
	t.Logf("rendered: the gateway's tunnel interfaces at %v, the pods at %d in %s; the Cloud VPN stand-in's tunnels at %v (the negotiated ESP's payload MTU)",
		rendered, pn.MTU, pn.Pool, lab.TunnelMTUs(1))

	t.Run("auto-detected MTUs stall", func(t *testing.T) {
		lab.SetTunnelMTU(0, xfrmDefaultMTU)
		lab.SetPodMTU(auto)
		// A DF sender on-prem hears nothing: its packet fits the
		// gateway's interface and is lost after encapsulation.
		if mtu, arrived := lab.PathMTU(0, onpremNICMTU, 3*time.Second); mtu != onpremNICMTU || arrived != 0 {
			t.Errorf("with the gateway at %d, a %d-byte DF datagram on-prem: path MTU %d, %d arrived; want no ICMP and none arrived", xfrmDefaultMTU, onpremNICMTU, mtu, arrived)
		} else {
			t.Logf("with the gateway at %d, %d-byte DF datagrams from the on-prem host are lost, and no ICMP comes back", xfrmDefaultMTU, onpremNICMTU)
		}
		for _, from := range []int{0, 1} {
			before := lab.Dropped(1)
			x := lab.PodTransfer(pods, from, podBytes, stallBound)
			after := lab.Dropped(1)
			t.Logf("pod %s (MTU %d) → pod %s (MTU %d), gateway interfaces at %d: %s; Cloud VPN stand-in dropped %v",
				pods.PodAddr(from), auto[from], pods.PodAddr(1-from), auto[1-from], xfrmDefaultMTU, x, droppedSince(before, after))
			if x.Bytes > stallMax {
				t.Errorf("pod %s → pod %s moved %s with auto-detected MTUs and the gateway at %d: the lab does not see the black hole (want at most %d bytes)",
					pods.PodAddr(from), pods.PodAddr(1-from), x, xfrmDefaultMTU, stallMax)
			}
		}
	})

	t.Run("rendered MTUs complete", func(t *testing.T) {
		lab.SetTunnelMTU(0, 0)
		pod := [2]int{pn.MTU, pn.MTU}
		lab.SetPodMTU(pod)
		for _, from := range []int{0, 1} {
			before := lab.Dropped(1)
			x := lab.PodTransfer(pods, from, podBytes, passBound)
			after := lab.Dropped(1)
			t.Logf("pod %s (MTU %d) → pod %s (MTU %d), gateway interfaces at %v: %s; Cloud VPN stand-in dropped %v",
				pods.PodAddr(from), pod[from], pods.PodAddr(1-from), pod[1-from], rendered, x, droppedSince(before, after))
			if !x.Done {
				t.Errorf("pod %s → pod %s with the rendered MTUs: %s within %s", pods.PodAddr(from), pods.PodAddr(1-from), x, passBound)
			}
		}
	})

	t.Run("ICMP fragmentation needed reaches a DF sender", func(t *testing.T) {
		lab.SetTunnelMTU(0, 0)
		// Either way the sender learns the tunnel's payload MTU: on-prem
		// from the gateway's interface at the rendered MTU, in the cloud
		// from Cloud VPN.
		want := lab.TunnelMTUs(1)[0]
		for from := range []int{0, 1} {
			size := []int{onpremNICMTU, vpcMTU}[from]
			mtu, arrived := lab.PathMTU(from, size, 5*time.Second)
			t.Logf("host %s sends %d-byte datagrams with DF set: path MTU %d, %d arrived", lab.sides[from].Host, size, mtu, arrived)
			if mtu != want {
				t.Errorf("host %s sending %d bytes with DF set learned a path MTU of %d, want %d from ICMP \"fragmentation needed\"", lab.sides[from].Host, size, mtu, want)
			}
		}
	})
}

const passBound = 60 * time.Second

// A stalled transfer moves at most stallMax bytes in stallBound: every
// full-size segment is lost, and TCP without MTU probing never sends a
// smaller one.
const (
	stallBound = 10 * time.Second
	stallMax   = 64 << 10
)

func droppedSince(before, after map[string]int) map[string]int {
	d := map[string]int{}
	for k, v := range after {
		if v-before[k] != 0 {
			d[k] = v - before[k]
		}
	}
	return d
}
