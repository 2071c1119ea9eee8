package rollout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// One rollout at a time. Every run that changes the cluster (Run: its
// resume and undo of what earlier runs left included) first takes a lock
// held in the cluster, the coordination.k8s.io/v1 Lease LockName in
// LockNamespace, renews it while it runs and lets it go when it ends. A
// second run finds it held and refuses, naming the holder and when the
// lock expires, or with LockWait waits for it. A run that crashed or was
// killed renews it no more: once its LeaseDurationSeconds have passed
// since its last renewTime, the next run takes it over.
//
// The lease is taken and renewed as client-go's leader election does it
// (k8s.io/client-go v0.37.2, tools/leaderelection/leaderelection.go,
// tryAcquireOrRenew: created if missing, taken over only when its holder
// is empty or its renewTime plus leaseDurationSeconds is past, every
// write conditional on the resourceVersion read), with the timing
// kube-controller-manager's leader election has by default (lease 15s,
// renew deadline 10s, retry 2s: k8s.io/component-base v0.37.2,
// config/v1alpha1/defaults.go). That package needs the typed clientset,
// which this binary does not link (internal/kube).
const (
	LockNamespace = "kube-system"
	LockName      = "nodegen-rollout"
)

// LockTiming is how long the lock lasts without a renewal, how often the
// holder renews it, and how long the holder goes on without a
// successful renewal before it stops (less than Duration, so that it
// stops before another run may take the lock over).
type LockTiming struct {
	Duration, RenewEvery, RenewDeadline time.Duration
}

// DefaultLockTiming is kube-controller-manager's: lease 15s, renewed
// every 2s, given up after 10s without a renewal.
var DefaultLockTiming = LockTiming{Duration: 15 * time.Second, RenewEvery: 2 * time.Second, RenewDeadline: 10 * time.Second}

// LockHeldError is the refusal of a run that found the lock held.
type LockHeldError struct {
	Holder           string
	Renewed, Expires time.Time
}

func (e *LockHeldError) Error() string {
	return fmt.Sprintf("another rollout holds the lock (Lease %s/%s): %s, last renewed %s; it expires at %s (in %s) unless renewed. "+
		"Nothing was changed: run again once that rollout is done, or with --wait DURATION to wait for the lock (a run that crashed or was killed renews it no more, so it expires)",
		LockNamespace, LockName, e.Holder, e.Renewed.UTC().Format(time.RFC3339), e.Expires.UTC().Format(time.RFC3339), max(0, time.Until(e.Expires)).Round(time.Second))
}

// ErrLockLost is the cause of a run's stop when it could not keep the
// lock: another run took it over, or the renewals failed for the renew
// deadline.
var ErrLockLost = errors.New("the rollout lost its lock")

// LockHolder is the identity a run holds the lock with: host, pid and
// start time, unique to the run.
func LockHolder() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("nodegen rollout on %s, pid %d, started %s", host, os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano))
}

// lock is a lock a run holds.
type lock struct {
	kube     Cluster
	holder   string
	timing   LockTiming
	progress *Progress

	mu    sync.Mutex
	lease *coordinationv1.Lease // as last written
}

// held says whether a lease is held by someone now: a holder whose
// renewal has not expired.
func held(l *coordinationv1.Lease, now time.Time) (bool, time.Time) {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false, time.Time{}
	}
	expires := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	return now.Before(expires), expires
}

// acquireLock takes the lock, waiting up to wait (0: not at all) while
// another holds it.
func acquireLock(ctx context.Context, k Cluster, holder string, timing LockTiming, wait, poll time.Duration, progress *Progress) (*lock, error) {
	deadline := time.Now().Add(wait)
	lk := &lock{kube: k, holder: holder, timing: timing, progress: progress}
	for {
		now := metav1.NowMicro()
		seconds := int32(timing.Duration / time.Second)
		spec := coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now}
		cur, err := k.GetLease(ctx, LockNamespace, LockName)
		if apierrors.IsNotFound(err) {
			created, err := k.CreateLease(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LockName, Namespace: LockNamespace}, Spec: spec})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("taking the rollout's lock (creating Lease %s/%s): %w", LockNamespace, LockName, err)
			}
			lk.lease = created
			return lk, nil
		}
		if err != nil {
			return nil, fmt.Errorf("taking the rollout's lock (reading Lease %s/%s): %w", LockNamespace, LockName, err)
		}
		if h, expires := held(cur, now.Time); h {
			if !time.Now().Before(deadline) {
				progress.Done()
				return nil, fmt.Errorf("%w: %w", ErrStopped, &LockHeldError{Holder: *cur.Spec.HolderIdentity, Renewed: cur.Spec.RenewTime.Time, Expires: expires})
			}
			progress.Wait("waiting for the lock (Lease %s/%s), held by %s until %s unless renewed", LockNamespace, LockName, *cur.Spec.HolderIdentity, expires.UTC().Format(time.RFC3339))
			if err := sleep(ctx, poll); err != nil {
				return nil, err
			}
			continue
		}
		progress.Done()
		stale := ""
		if cur.Spec.HolderIdentity != nil && *cur.Spec.HolderIdentity != "" {
			stale = *cur.Spec.HolderIdentity
		}
		next := cur.DeepCopy()
		transitions := int32(1)
		if cur.Spec.LeaseTransitions != nil {
			transitions += *cur.Spec.LeaseTransitions
		}
		spec.LeaseTransitions = &transitions
		next.Spec = spec
		updated, err := k.UpdateLease(ctx, next)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("taking the rollout's lock (updating Lease %s/%s): %w", LockNamespace, LockName, err)
		}
		if stale != "" {
			_, expired := held(cur, now.Time)
			progress.Step("took over the lock (Lease %s/%s) of %s, which expired at %s without a renewal: that run crashed or was killed", LockNamespace, LockName, stale, expired.UTC().Format(time.RFC3339))
		}
		lk.lease = updated
		return lk, nil
	}
}

// renew writes a new renewTime; it fails with ErrLockLost when the lease
// is no longer the holder's.
func (lk *lock) renew(ctx context.Context) error {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	for try := 0; ; try++ {
		next := lk.lease.DeepCopy()
		now := metav1.NowMicro()
		next.Spec.RenewTime = &now
		updated, err := lk.kube.UpdateLease(ctx, next)
		if err == nil {
			lk.lease = updated
			return nil
		}
		if !apierrors.IsConflict(err) || try > 3 {
			return err
		}
		// Changed by someone else: still the holder's (a label, an
		// annotation), or taken.
		cur, err := lk.kube.GetLease(ctx, LockNamespace, LockName)
		if err != nil {
			return err
		}
		if cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != lk.holder {
			who := "nobody"
			if cur.Spec.HolderIdentity != nil && *cur.Spec.HolderIdentity != "" {
				who = *cur.Spec.HolderIdentity
			}
			return fmt.Errorf("%w: Lease %s/%s is now held by %s", ErrLockLost, LockNamespace, LockName, who)
		}
		lk.lease = cur
	}
}

// hold renews the lock until the returned stop is called, and returns a
// context that ends, with the cause ErrLockLost, when the lock is lost.
// stop lets the lock go (it empties the holder, as leader election's
// release does) and reports what went wrong doing so.
func (lk *lock) hold(ctx context.Context) (context.Context, func() error) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := time.Now()
		tick := time.NewTicker(lk.timing.RenewEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			start := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, lk.timing.RenewDeadline)
			err := lk.renew(rctx)
			rcancel()
			switch {
			case err == nil:
				last = start
			case errors.Is(err, ErrLockLost):
				cancel(err)
				return
			case time.Since(last) >= lk.timing.RenewDeadline:
				cancel(fmt.Errorf("%w: no renewal of Lease %s/%s succeeded for %s (the last error: %v), and another run may take it over after %s", ErrLockLost, LockNamespace, LockName, lk.timing.RenewDeadline, err, lk.timing.Duration))
				return
			}
		}
	}()
	stop := func() error {
		close(done)
		wg.Wait()
		lost := context.Cause(ctx)
		cancel(nil)
		if lost != nil && errors.Is(lost, ErrLockLost) {
			return nil
		}
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), lk.timing.RenewDeadline)
		defer rcancel()
		lk.mu.Lock()
		defer lk.mu.Unlock()
		next := lk.lease.DeepCopy()
		now := metav1.NowMicro()
		empty := ""
		next.Spec.HolderIdentity, next.Spec.RenewTime = &empty, &now
		if _, err := lk.kube.UpdateLease(rctx, next); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("letting the rollout's lock go (Lease %s/%s; it expires by itself %s after its last renewal): %w", LockNamespace, LockName, lk.timing.Duration, err)
		}
		return nil
	}
	return ctx, stop
}
