package rollout_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/rollout"
)

// runResult is what one in-process run of the CLI gave.
type runResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func (s *setup) runCLI(args ...string) runResult {
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := cli.Main(s.args(args...), strings.NewReader(""), &stdout, &stderr)
	return runResult{code, stdout.String(), stderr.String(), time.Since(start)}
}

// lease reads the rollout's lock as the admin; nil when there is none.
func (s *setup) lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l, err := s.admin.CoordinationV1().Leases(rollout.LockNamespace).Get(context.Background(), rollout.LockName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func holderOf(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// Three rollouts at once: the first takes the lock; a second without
// --wait refuses, naming the holder and when the lock expires, and
// changes nothing; a third with --wait waits for the first to finish and
// then finds nothing left. The group never has fewer usable nodes than
// before, and each replacement is made once (checkDone).
func TestRolloutOneAtATime(t *testing.T) {
	s := newSetup(t, 1, nil)
	first := make(chan runResult, 1)
	go func() { first <- s.runCLI("--yes") }()
	deadline := time.Now().Add(60 * time.Second)
	var holder string
	for holder == "" {
		if time.Now().After(deadline) {
			t.Fatal("the first run took no lock in 60s")
		}
		holder = holderOf(s.lease(t))
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the first run holds the lock as %q", holder)
	waiting := make(chan runResult, 1)
	go func() { waiting <- s.runCLI("--yes", "--wait", "5m") }()
	refused := s.runCLI("--yes")
	t.Logf("the run without --wait: exit %d\nstdout:\n%s\nstderr:\n%s", refused.code, refused.stdout, refused.stderr)
	if refused.code != cli.ExitFindings {
		t.Errorf("the second run exited %d, want %d (refused)", refused.code, cli.ExitFindings)
	}
	for _, want := range []string{"another rollout holds the lock (Lease kube-system/nodegen-rollout): " + holder, "it expires at ", "Nothing was changed", "--wait DURATION"} {
		if !strings.Contains(refused.stderr, want) {
			t.Errorf("the refusal lacks %q", want)
		}
	}
	if strings.Contains(refused.stdout, "rollout: ") {
		t.Errorf("the refused run took steps:\n%s", refused.stdout)
	}
	if holderOf(s.lease(t)) != holder {
		t.Errorf("the refused run changed the lock's holder to %q", holderOf(s.lease(t)))
	}
	r1 := <-first
	t.Logf("the first run: exit %d\n%s%s", r1.code, r1.stdout, r1.stderr)
	if r1.code != 0 || !strings.Contains(r1.stdout, "rollout done") {
		t.Fatalf("the first run did not finish: exit %d", r1.code)
	}
	r3 := <-waiting
	t.Logf("the run with --wait (%s): exit %d\n%s%s", r3.took.Round(time.Second), r3.code, r3.stdout, r3.stderr)
	if r3.code != 0 || !strings.Contains(r3.stdout, "waiting for the lock") || !strings.Contains(r3.stdout, "rollout done") {
		t.Errorf("the run with --wait: exit %d, want 0 after waiting for the lock", r3.code)
	}
	for _, step := range []string{"creating ", "cordoned ", "deleting "} {
		if strings.Contains(r3.stdout, "rollout: "+step) || strings.Contains(refused.stdout, "rollout: "+step) {
			t.Errorf("a run that did not hold the lock first made the step %q", step)
		}
	}
	s.checkDone(t)
	if l := s.lease(t); holderOf(l) != "" {
		t.Errorf("the lock is still held by %q after every run ended", holderOf(l))
	}
}

// A lock whose holder crashed: while its lease runs, --yes refuses and
// changes nothing; with --wait it waits for the lease to expire, takes
// it over, says so, and rolls out.
func TestRolloutTakesOverExpiredLock(t *testing.T) {
	s := newSetup(t, 1, nil)
	ctx := context.Background()
	ghost := "nodegen rollout on ghost, pid 1, started 2026-01-01T00:00:00Z"
	secs := int32(15)
	now := metav1.NowMicro()
	if _, err := s.admin.CoordinationV1().Leases(rollout.LockNamespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: rollout.LockName, Namespace: rollout.LockNamespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &ghost, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expires := now.Add(15 * time.Second)
	refused := s.runCLI("--yes")
	t.Logf("while the lease runs: exit %d\n%s%s", refused.code, refused.stdout, refused.stderr)
	if refused.code != cli.ExitFindings || !strings.Contains(refused.stderr, "holds the lock (Lease kube-system/nodegen-rollout): "+ghost) ||
		!strings.Contains(refused.stderr, "it expires at "+expires.UTC().Format(time.RFC3339)) {
		t.Errorf("exit %d, want a refusal naming %q and its expiry %s", refused.code, ghost, expires.UTC().Format(time.RFC3339))
	}
	if created, deleted := s.compute.record(); len(created)+len(deleted) > 0 {
		t.Errorf("the refused run changed the MIGs: created %v, deleted %v", created, deleted)
	}
	r := s.runCLI("--yes", "--wait", "1m")
	t.Logf("with --wait (%s): exit %d\n%s%s", r.took.Round(time.Second), r.code, r.stdout, r.stderr)
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	for _, want := range []string{"waiting for the lock", "took over the lock (Lease kube-system/nodegen-rollout) of " + ghost + ", which expired at " + expires.UTC().Format(time.RFC3339), "rollout done"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if i, j := strings.Index(r.stdout, "took over the lock"), strings.Index(r.stdout, "rollout: creating"); i < 0 || j >= 0 && j < i {
		t.Errorf("the run changed something before it took the lock over")
	}
	s.checkDone(t)
	l := s.lease(t)
	if holderOf(l) != "" || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 {
		t.Errorf("the lease after the run: holder %q, transitions %v; want no holder, one transition", holderOf(l), l.Spec.LeaseTransitions)
	}
}

// A run whose lock another takes (here the admin, as a run that took over
// after a long pause of this one would) stops at its next renewal.
func TestRolloutStopsWhenLockLost(t *testing.T) {
	s := newSetup(t, 0, map[string]string{"rollout.cue": "cluster: rollout: drainTimeout: \"30s\"\n"})
	ctx := context.Background()
	done := make(chan runResult, 1)
	go func() { done <- s.runCLI("--yes") }()
	// The drain waits on the budget (maxUnavailable 0): take the lock
	// from the run while it does.
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := s.admin.CoreV1().Nodes().Get(ctx, s.oldNodes[0], metav1.GetOptions{})
		if err == nil && n.Spec.Unschedulable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not begin a drain in 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	intruder := "someone else"
	for {
		l := s.lease(t)
		l.Spec.HolderIdentity = &intruder
		_, err := s.admin.CoordinationV1().Leases(rollout.LockNamespace).Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	took := time.Now()
	r := <-done
	t.Logf("exit %d after %s\n%s%s", r.code, time.Since(took).Round(time.Millisecond), r.stdout, r.stderr)
	if r.code != cli.ExitFindings || !strings.Contains(r.stderr, "the rollout lost its lock: Lease kube-system/nodegen-rollout is now held by someone else") {
		t.Errorf("exit %d, want the run stopped for its lost lock", r.code)
	}
	if since := time.Since(took); since > 20*time.Second {
		t.Errorf("the run went on %s after it lost the lock (the drain timeout is 30s)", since)
	}
	if holderOf(s.lease(t)) != intruder {
		t.Errorf("the stopped run let go of a lock it no longer held: holder %q", holderOf(s.lease(t)))
	}
	if _, deleted := s.compute.record(); len(deleted) > 0 {
		t.Errorf("deleted %v", deleted)
	}
}
