//go:build linux

package vpnlab

import (
	"testing"
)

// TestRenderedVPNMSSClamp moves 8 MiB over TCP between a host on each
// side of the rendered VPN, each way, with both hosts dropping ICMP
// "fragmentation needed" as a host or site firewall that filters ICMP
// does, so path MTU discovery cannot shrink what their TCP sends (the
// on-prem host's NIC at 1500, the cloud VM's at the VPC's 1460, both over
// the tunnel's payload MTU).
//
// Without the gateway's MSS clamp the transfer stalls both ways: the
// on-prem host's full-size segments meet the gateway's tunnel interface
// (at the payload MTU) and the cloud VM's meet Cloud VPN's payload MTU,
// and the ICMP that says so is dropped. The test asserts the stall, so
// the lab is shown able to see it. With the rendered clamp
// (out/onprem/vpn/<gateway>/nftables/, loaded as written) both complete.
func TestRenderedVPNMSSClamp(t *testing.T) {
	t.Parallel()
	_, lab, _, _, _, _ := upLab(t)
	lab.DropFragNeeded(0)
	lab.DropFragNeeded(1)
	t.Logf("the gateway's tunnel interfaces at %v, Cloud VPN's at %v; the hosts' NICs at %d and %d; both hosts drop ICMP fragmentation needed",
		lab.TunnelMTUs(0), lab.TunnelMTUs(1), onpremNICMTU, vpcMTU)

	t.Run("without the clamp", func(t *testing.T) {
		lab.SetMSSClamp(0, false)
		lab.FlushPathMTUs()
		for _, from := range []int{0, 1} {
			before := lab.Dropped(1)
			x := lab.HostTransfer(from, podBytes, stallBound)
			after := lab.Dropped(1)
			t.Logf("host %s → host %s without the MSS clamp: %s; Cloud VPN stand-in dropped %v",
				lab.sides[from].Host, lab.sides[1-from].Host, x, droppedSince(before, after))
			if x.Bytes > stallMax {
				t.Errorf("host %s → host %s moved %s without the MSS clamp and with ICMP dropped: the lab does not see the black hole (want at most %d bytes)",
					lab.sides[from].Host, lab.sides[1-from].Host, x, stallMax)
			}
		}
	})

	t.Run("with the rendered clamp", func(t *testing.T) {
		lab.SetMSSClamp(0, true)
		lab.FlushPathMTUs()
		for _, from := range []int{0, 1} {
			x := lab.HostTransfer(from, podBytes, passBound)
			t.Logf("host %s → host %s with the rendered MSS clamp: %s", lab.sides[from].Host, lab.sides[1-from].Host, x)
			if !x.Done {
				t.Errorf("host %s → host %s with the rendered MSS clamp: %s within %s", lab.sides[from].Host, lab.sides[1-from].Host, x, passBound)
			}
		}
	})
}
