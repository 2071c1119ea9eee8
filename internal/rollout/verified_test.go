package rollout_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/rollout"
)

// A replacement is capacity only once the node CSR approver verified it
// (the verified group label, which the workload selects): while the
// approver does not label the replacements, no old node is cordoned and
// no pod evicted towards nowhere; the batch stops at the ready timeout
// and its replacements go. Once the approver labels them, the rollout
// finishes.
func TestRolloutWaitsForVerifiedReplacement(t *testing.T) {
	s := newSetup(t, 1, nil)
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	a := gpu.Zones[0]
	var repls []string
	s.world.mu.Lock()
	for _, o := range s.oldNodes {
		r := rolloutReplacement(cl, gpu, o, s.cur["gpu-t4"])
		repls = append(repls, r)
		s.world.unverified[r] = true
	}
	s.world.mu.Unlock()
	ctx := context.Background()
	before, err := s.admin.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, progress := s.runner(t, 5*time.Second)
	// Done right, the run stops at the 5 s ready timeout; one that takes
	// an unverified replacement for capacity drains towards it, and the
	// budget then blocks its drain for the drain timeout: bound the wait.
	runCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	err = r.Run(runCtx)
	timedOut := runCtx.Err() != nil
	cancel()
	t.Logf("rollout: %v\n%s", err, progress.String())
	if timedOut {
		_, _, _, cordons, _ := s.obs.report()
		t.Fatalf("the rollout still ran after 90s, cancelled (%v); it should have stopped at its 5s ready timeout with no old node cordoned; cordons %v", err, cordons)
	}
	want := repls[0] + " (not yet verified: no label node-restriction.kubernetes.io/nodegen-node-group=gpu-t4 from the node CSR approver)"
	if !errors.Is(err, rollout.ErrStopped) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want the rollout stopped waiting for %s", err, want)
	}
	if strings.Contains(progress.String(), "cordoned ") || strings.Contains(progress.String(), "evicted ") {
		t.Errorf("an old node was cordoned or a pod evicted before a replacement was verified")
	}
	// The unverified replacement is cordoned by its own removal; no old
	// node may be.
	_, _, _, cordons, _ := s.obs.report()
	for _, o := range s.oldNodes {
		if cordons[o] > 0 {
			t.Errorf("old node %s was cordoned (cordons %v)", o, cordons)
		}
	}
	after, err := s.admin.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b, aft []string
	for _, p := range before.Items {
		b = append(b, p.Name+"@"+p.Spec.NodeName)
	}
	for _, p := range after.Items {
		aft = append(aft, p.Name+"@"+p.Spec.NodeName)
	}
	if !slices.Equal(b, aft) {
		t.Errorf("pods before %v, after %v", b, aft)
	}
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(gpu, a))); !slices.Equal(got, s.oldNodes) {
		t.Errorf("the MIG holds %v, want its old nodes alone %v (the unverified replacement removed)", got, s.oldNodes)
	}

	// The approver verifies them from now on. The removed replacement's
	// cordon (its removal's) is not the next run's: checkDone judges
	// that run's cordons alone.
	s.obs.mu.Lock()
	for _, r := range repls {
		delete(s.obs.cordons, r)
	}
	s.obs.mu.Unlock()
	s.world.mu.Lock()
	clear(s.world.unverified)
	s.world.mu.Unlock()
	s.compute.resetRecord()
	res := s.runCLI("--yes")
	t.Logf("once verified: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	if res.code != 0 {
		t.Fatalf("exit %d", res.code)
	}
	s.checkDone(t)
}

// resetRecord forgets the instances created and deleted so far.
func (f *fakeCompute) resetRecord() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created, f.deleted = nil, nil
}
