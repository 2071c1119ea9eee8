package rollout_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2/google"

	"github.com/nodegen/nodegen/internal/kube"
	"github.com/nodegen/nodegen/internal/rollout"
)

// A replacement the project's quota refuses: the MIG reports the error of
// its last attempt at once (listManagedInstances, lastAttempt.errors), and
// the batch stops then, not at the ready timeout: nothing drained, the
// replacement removed, the error named.
func TestRolloutStopsAtQuotaError(t *testing.T) {
	s := newSetup(t, 1, nil)
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	a := gpu.Zones[0]
	repl := rolloutReplacement(cl, gpu, s.oldNodes[0], s.cur["gpu-t4"])
	s.compute.mu.Lock()
	s.compute.quota[repl] = true
	s.compute.mu.Unlock()
	ctx := context.Background()
	k, err := kube.FromKubeconfig(s.user.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := google.DefaultClient(ctx, rollout.ComputeScope)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	const timeout = 40 * time.Second
	r := &rollout.Runner{Src: s.src, Revisions: s.cur, Kube: k,
		Compute:  &rollout.Compute{Endpoint: s.compute.Endpoint(), HTTP: httpClient},
		Progress: &rollout.Progress{W: &progress}, Poll: 100 * time.Millisecond, ReadyTimeout: timeout}
	start := time.Now()
	err = r.Run(ctx)
	took := time.Since(start)
	t.Logf("rollout (%s): %v\n%s", took.Round(time.Millisecond), err, progress.String())
	want := "MIG " + cl.MIGName(gpu, a) + " could not create " + repl + " (QUOTA_EXCEEDED: Quota 'NVIDIA_T4_GPUS' exceeded."
	if !errors.Is(err, rollout.ErrStopped) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	if took > timeout/2 {
		t.Errorf("the rollout took %s to stop: it waited for the ready timeout (%s)", took, timeout)
	}
	if _, deleted := s.compute.record(); !slices.Equal(deleted, []string{repl}) {
		t.Errorf("deleted %v, want the refused replacement %s alone", deleted, repl)
	}
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(gpu, a))); !slices.Equal(got, s.oldNodes) {
		t.Errorf("the MIG holds %v, want its old nodes %v", got, s.oldNodes)
	}
	if _, _, _, cordons, _ := s.obs.report(); len(cordons) > 0 {
		t.Errorf("cordoned %v", cordons)
	}
	s.noRolloutMarks(t)
}
