package rollout_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/rollout"
)

// A surge the project's quota refuses: Compute keeps the replacement
// CREATING with QUOTA_EXCEEDED as its last attempt's error, and the
// rollout stops at once saying so, not at its ready timeout; no old node
// is cordoned, and the replacement that cannot be made is removed.
func TestRolloutStopsOnQuotaAtOnce(t *testing.T) {
	s := newSetup(t, 1, nil)
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	a := gpu.Zones[0]
	const quota = "Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally."
	s.compute.refuseCreates(a, cl.MIGName(gpu, a), "QUOTA_EXCEEDED", quota)
	ctx := context.Background()
	r, progress := s.runner(t, 10*time.Minute)
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	start := time.Now()
	err := r.Run(runCtx)
	took := time.Since(start)
	timedOut := runCtx.Err() != nil
	cancel()
	t.Logf("rollout after %s: %v\n%s", took.Round(time.Millisecond), err, progress.String())
	// Done right, the first poll after the create sees the error: well
	// within seconds; the bound is for a loaded machine.
	if timedOut || took > 30*time.Second {
		t.Fatalf("the rollout waited %s (its 60s deadline reached: %v) for a replacement Compute said at once it cannot create (%s); its ready timeout is 10m", took.Round(time.Second), timedOut, quota)
	}
	repl := rolloutReplacement(cl, gpu, s.oldNodes[0], s.cur["gpu-t4"])
	want := "the MIG could not create " + repl + " (QUOTA_EXCEEDED: " + quota + "); nothing was drained"
	if !errors.Is(err, rollout.ErrStopped) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want the rollout stopped with %q", err, want)
	}
	_, _, _, cordons, _ := s.obs.report()
	for _, o := range s.oldNodes {
		if cordons[o] > 0 {
			t.Errorf("old node %s was cordoned", o)
		}
	}
	if _, deleted := s.compute.record(); len(deleted) != 1 || deleted[0] != repl {
		t.Errorf("deleted %v, want the replacement that could not be made, %s", deleted, repl)
	}
}
