//go:build linux

package vpnlab

import (
	"testing"
	"time"
)

// TestRenderedVPNRestart restarts the on-prem gateway's daemons, charon
// and FRR, as systemctl restart does: both tunnels come back, both BGP
// sessions establish again, both sides route over both tunnels, and the
// cloud node reaches the control plane's address again. It prints how
// long that took and how long the flow was interrupted.
func TestRenderedVPNRestart(t *testing.T) {
	t.Parallel()
	r, lab, _, _, cloudRange, onpremRange := upLab(t)
	probe := flow(t, lab, r)
	defer probe.Stop()
	start := time.Now()
	if err := lab.Restart(0, 30*time.Second); err != nil {
		t.Fatalf("the restarted gateway: %v", err)
	}
	if err := lab.WaitUp(90 * time.Second); err != nil {
		t.Fatalf("the restarted gateway: %v", err)
	}
	if err := lab.WaitRoutes(0, cloudRange, 2, 30*time.Second); err != nil {
		t.Fatalf("the restarted gateway: %v", err)
	}
	if err := lab.WaitRoutes(1, onpremRange, 2, 30*time.Second); err != nil {
		t.Fatalf("the restarted gateway: %v", err)
	}
	up := time.Since(start)
	probe.AwaitFlowing(10 * time.Second)
	n, gap := probe.Replies(start)
	t.Logf("the on-prem gateway's charon and FRR restarted: both tunnels up and BGP established on both, routing over both, after %s; the control plane unreachable from the cloud node for %s; %d echoes since",
		up.Round(100*time.Millisecond), gap.Round(10*time.Millisecond), n)
	if recent, _ := probe.Replies(time.Now().Add(-time.Second)); recent == 0 {
		t.Errorf("after the restart, the cloud node does not reach the control plane's address %s", r.cp)
	}
}
