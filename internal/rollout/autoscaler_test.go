package rollout_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
)

// A replacement the autoscaler has marked for deletion
// (ToBeDeletedByClusterAutoscaler) is not a usable node: no old node is
// cordoned until the taint is gone.
func TestRolloutWaitsOutAutoscalerDeletionTaint(t *testing.T) {
	s := newSetup(t, 1, nil)
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	first := rolloutReplacement(cl, gpu, s.oldNodes[0], s.cur["gpu-t4"])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The autoscaler marked the first replacement for deletion as soon as
	// it registered, and lifts the mark 3 s later (it gave up removing it).
	s.world.mu.Lock()
	s.world.marked[first] = []corev1.Taint{{Key: "ToBeDeletedByClusterAutoscaler", Value: "1700000000", Effect: corev1.TaintEffectNoSchedule}}
	s.world.mu.Unlock()
	lifted := make(chan time.Time, 1)
	go func() {
		var seenAt time.Time
		for ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			n, err := s.admin.CoreV1().Nodes().Get(ctx, first, metav1.GetOptions{})
			if err != nil {
				continue
			}
			if seenAt.IsZero() {
				seenAt = time.Now()
			}
			if time.Since(seenAt) < 3*time.Second {
				continue
			}
			var keep []corev1.Taint
			for _, tt := range n.Spec.Taints {
				if tt.Key != "ToBeDeletedByClusterAutoscaler" {
					keep = append(keep, tt)
				}
			}
			n.Spec.Taints = keep
			if _, err := s.admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err == nil {
				lifted <- time.Now()
				return
			} else if !apierrors.IsConflict(err) {
				t.Errorf("untainting %s: %v", first, err)
				return
			}
		}
	}()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("rollout exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("rollout:\n%s", stdout.String())
	var liftedAt time.Time
	select {
	case liftedAt = <-lifted:
	default:
		t.Fatalf("the taint was never lifted")
	}
	// The order of the API server's watch events, not the clocks of two
	// goroutines, says which came first.
	time.Sleep(300 * time.Millisecond) // the last watch events
	s.obs.mu.Lock()
	cordoned, cordonedOK := s.obs.cordonedSeq[s.oldNodes[0]]
	untainted, untaintedOK := s.obs.untaintedSeq[first]
	cordonedAt := s.obs.cordonedAt[s.oldNodes[0]]
	s.obs.mu.Unlock()
	if !cordonedOK || !untaintedOK || cordoned <= untainted {
		t.Errorf("%s was cordoned at event %d (%v, %s), the autoscaler's taint left its replacement %s at event %d (%v, lifted %s): the cordon must come after", s.oldNodes[0], cordoned, cordonedOK, cordonedAt.Format(time.StampMilli), first, untainted, untaintedOK, liftedAt.Format(time.StampMilli))
	}
	s.checkDone(t)
}

// A surge never takes an autoscaled MIG past its group's max: with surge
// 3 and three old nodes in a MIG of max 4, each batch gets one
// replacement; the plan says so.
func TestRolloutSurgeWithinMax(t *testing.T) {
	s := newSetup(t, 1, map[string]string{"rollout.cue": "cluster: rollout: surge: 3\n"})
	var stdout, stderr bytes.Buffer
	if code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("rollout exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("rollout:\n%s", stdout.String())
	for _, want := range []string{
		"     surge limited to 1: the group's max is 4 nodes per MIG",
		"rollout: gpu-t4/us-central1-a: surge limited to 1 by the group's max of 4 nodes (target size 3)",
		"the autoscaler " + s.src.Cluster.AutoscalerImageTag() + " adds no node anywhere: each batch holds every scale-up",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	if got := s.compute.largest(gpu.Zones[0], cl.MIGName(gpu, gpu.Zones[0])); got > gpu.Max {
		t.Errorf("the MIG held %d instances at once, more than the group's max %d", got, gpu.Max)
	}
	s.checkDone(t)
}

// The surge stays within the autoscaler's cluster-wide caps: with
// maxNodesTotal at the cluster's node count, no replacement fits, so the
// group is skipped and reported (exit 1), its MIG never grows and its
// nodes are left as they were.
func TestRolloutSurgeWithinCaps(t *testing.T) {
	s := newSetup(t, 1, map[string]string{"caps.cue": "cluster: autoscaler: caps: maxNodesTotal: 4\n"})
	var stdout, stderr bytes.Buffer
	code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr)
	t.Logf("rollout: exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want %d", code, cli.ExitFindings)
	}
	want := "gpu-t4/us-central1-a: the autoscaler's caps leave no room for a surge: cluster.autoscaler.caps.maxNodesTotal (4 in use of 4), so the group is skipped"
	if !strings.Contains(stderr.String(), want) && !strings.Contains(stdout.String(), want) {
		t.Errorf("the output lacks %q", want)
	}
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	a := gpu.Zones[0]
	if got := s.compute.largest(a, cl.MIGName(gpu, a)); got > len(s.oldNodes) {
		t.Errorf("the MIG held %d instances at once: a surge past the cap of 4 nodes", got)
	}
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(gpu, a))); !slices.Equal(got, s.oldNodes) {
		t.Errorf("gpu-t4's MIG holds %v, want its old nodes %v", got, s.oldNodes)
	}
}

// The autoscaler scales the MIG up between the rollout's read of its
// target size and its createInstances (Compute has no conditional
// create): three old nodes in a MIG of max 4, and the autoscaler's VM
// takes the last place just before the replacement is made, so the MIG
// holds 5. The rollout reads the target size again after the create,
// removes its own replacement (never the autoscaler's VM) before it
// cordons any old node, and skips the group as at its max (exit 1).
func TestRolloutMaxRecheckedAfterRacingScaleUp(t *testing.T) {
	s := newSetup(t, 1, nil)
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	a := gpu.Zones[0]
	mig := cl.MIGName(gpu, a)
	if gpu.Max != len(s.oldNodes)+1 {
		t.Fatalf("gpu-t4's max is %d: the test needs room for exactly one more than its %d old nodes", gpu.Max, len(s.oldNodes))
	}
	scaledUp := cl.BaseInstanceName(gpu) + "-as01"
	s.compute.raceCreate(a, mig, scaledUp)
	var stdout, stderr bytes.Buffer
	code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr)
	out := stdout.String() + stderr.String()
	t.Logf("rollout: exit %d\n%s", code, out)
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want %d", code, cli.ExitFindings)
	}
	repl := rolloutReplacement(cl, gpu, s.oldNodes[0], s.cur["gpu-t4"])
	for _, want := range []string{
		"gpu-t4/" + a + ": MIG " + mig + " has target size 5, past the group's max of 4: the autoscaler scaled it up while the replacements were being created; removing " + repl + " again",
		"MIG " + mig + " is at the group's max of 4 nodes (target size 4): a surge would exceed it, so the group is skipped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	want := append(slices.Clone(s.oldNodes), scaledUp)
	slices.Sort(want)
	if got := sortedKeys(s.compute.instances(a, mig)); !slices.Equal(got, want) {
		t.Errorf("MIG %s holds %v, want its old nodes and the autoscaler's VM %v", mig, got, want)
	}
	if created, deleted := s.compute.record(); !slices.Equal(created, []string{repl}) || !slices.Equal(deleted, []string{repl}) {
		t.Errorf("created %v, deleted %v: want the one replacement created and removed again", created, deleted)
	}
	_, _, _, cordons, _ := s.obs.report()
	for _, o := range s.oldNodes {
		if cordons[o] > 0 {
			t.Errorf("old node %s was cordoned while the MIG was past its max", o)
		}
	}
}
