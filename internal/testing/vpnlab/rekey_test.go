//go:build linux

package vpnlab

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"
)

// TestRenderedVPNRekey rotates tunnel0's pre-shared key as a new pinned
// key version does: Cloud VPN takes the new key first (terraform apply
// re-keys the tunnel, which stays down until the on-prem side has it),
// then the on-prem gateway loads it and re-initiates that tunnel alone,
// as its install.sh does. tunnel1 is untouched throughout. Both tunnels
// and both BGP sessions come back, both sides route over both, and the
// cloud node reaches the control plane's address; the test prints how
// long tunnel0 was down and the longest gap of the flow.
func TestRenderedVPNRekey(t *testing.T) {
	t.Parallel()
	r, lab, _, v, cloudRange, onpremRange := upLab(t)
	probe := flow(t, lab, r)
	defer probe.Stop()
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	key := hex.EncodeToString(b)

	start := time.Now()
	lab.Rekey(1, 0, key, false)
	// Until the on-prem side has the new key, tunnel0 stays down: the BGP
	// session over it ends when its hold time runs out, and its routes
	// with it.
	hold := time.Duration(3*v.Keepalive) * time.Second
	deadline := time.Now().Add(hold + 20*time.Second)
	for {
		st := lab.State(0)
		if len(st.Installed) < 2 && len(st.Established) < 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tunnel0 still up %s after Cloud VPN took a new key: %+v", time.Since(start).Round(100*time.Millisecond), st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	down := time.Since(start)
	// Each side's hold timer runs on its own, from the last keepalive it
	// had over tunnel0: the flow's replies cross tunnel1 once both sides
	// have withdrawn tunnel0's routes and their kernels have the change.
	if err := lab.WaitRoutes(1, onpremRange, 1, 30*time.Second); err != nil {
		t.Fatalf("with tunnel0 down: %v", err)
	}
	if err := lab.WaitRoutes(0, cloudRange, 1, 30*time.Second); err != nil {
		t.Fatalf("with tunnel0 down: %v", err)
	}
	withdrawn := time.Now()
	for {
		if n, _ := probe.Replies(withdrawn); n > 0 {
			break
		}
		if time.Since(withdrawn) > 5*time.Second {
			t.Errorf("with tunnel0 down and tunnel1 up, the cloud node does not reach the control plane's address %s in the 5s after both sides withdrew tunnel0's routes", r.cp)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	rekeyed := time.Now()
	lab.Rekey(0, 0, key, true)
	if err := lab.WaitUp(90 * time.Second); err != nil {
		t.Fatalf("after the on-prem gateway took the new key: %v", err)
	}
	if err := lab.WaitRoutes(0, cloudRange, 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitRoutes(1, onpremRange, 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	back := time.Since(rekeyed)
	time.Sleep(2 * time.Second)
	n, gap := probe.Replies(start)
	t.Logf("tunnel0 re-keyed: down %s after Cloud VPN took the new key (BGP hold time %s); back with BGP established and routing over both tunnels %s after the on-prem gateway took it; the flow's longest gap %s, %d echoes since",
		down.Round(100*time.Millisecond), hold, back.Round(100*time.Millisecond), gap.Round(10*time.Millisecond), n)
	if gap > hold+5*time.Second {
		t.Errorf("the flow was interrupted for %s, longer than the BGP hold time %s: tunnel1 did not carry it", gap.Round(10*time.Millisecond), hold)
	}
	if recent, _ := probe.Replies(time.Now().Add(-time.Second)); recent == 0 {
		t.Errorf("after the re-key, the cloud node does not reach the control plane's address %s", r.cp)
	}
}
