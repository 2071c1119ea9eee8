package rollout_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/rollout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// noRolloutMarks fails for each node left unschedulable (but those in
// cordoned) or carrying an annotation of the rollout's.
func (s *setup) noRolloutMarks(t *testing.T, cordoned ...string) {
	t.Helper()
	nodes, err := s.admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable != slices.Contains(cordoned, n.Name) {
			t.Errorf("node %s: unschedulable %v", n.Name, n.Spec.Unschedulable)
		}
		for k := range n.Annotations {
			if strings.HasPrefix(k, "nodegen.dev/") || k == "cluster-autoscaler.kubernetes.io/scale-down-disabled" {
				t.Errorf("node %s still carries %s", n.Name, k)
			}
		}
	}
}

func (s *setup) writeSource(t *testing.T, file, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An admin's cordon survives a drain that gives up; a transient Compute
// error (HTTP 503) while the stopped batch removes its replacement leaves
// the replacement marked, and the next run removes it, even with the
// group excluded.
func TestRolloutAdminCordonAndUndoRetried(t *testing.T) {
	s := newSetup(t, 0, map[string]string{"rollout.cue": "cluster: rollout: drainTimeout: \"30s\"\n"})
	ctx := context.Background()
	old1 := s.oldNodes[0]
	n, err := s.admin.CoreV1().Nodes().Get(ctx, old1, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true // the admin's kubectl cordon
	if _, err := s.admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.compute.failNext("deleteInstances", 1)
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	a := gpu.Zones[0]
	repl := rolloutReplacement(cl, gpu, old1, s.cur["gpu-t4"])

	var stdout, stderr bytes.Buffer
	code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr)
	t.Logf("first run: exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want %d", code, cli.ExitFindings)
	}
	for _, want := range []string{"did not finish in 30s", "HTTP 503", "the next run tries again"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if !strings.Contains(stdout.String(), old1+" stays cordoned: it was cordoned before the rollout") {
		t.Errorf("the output does not say the admin's cordon stays")
	}
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(gpu, a))); !slices.Contains(got, repl) {
		t.Fatalf("the MIG holds %v: the failed removal of %s should have left it", got, repl)
	}
	old, err := s.admin.CoreV1().Nodes().Get(ctx, old1, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !old.Spec.Unschedulable {
		t.Errorf("the admin's cordon of %s was lifted by the stopped drain", old1)
	}

	// The group is excluded now; the next run still removes the replacement.
	s.writeSource(t, "rollout.cue", "cluster: rollout: {drainTimeout: \"30s\", exclude: [\"gpu-t4\"]}\n")
	stdout.Reset()
	stderr.Reset()
	code = cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr)
	t.Logf("second run: exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(gpu, a))); !slices.Equal(got, s.oldNodes) {
		t.Errorf("the MIG holds %v, want its old nodes alone %v", got, s.oldNodes)
	}
	if _, err := s.admin.CoreV1().Nodes().Get(ctx, repl, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Node of the removed replacement %s: %v, want it gone", repl, err)
	}
	s.noRolloutMarks(t, old1)
}

// Killed while a PodDisruptionBudget holds a drain, the rollout leaves the
// node cordoned; after the change is reverted in the source, the next run
// makes it schedulable again.
func TestRolloutRevertAfterStoppedDrain(t *testing.T) {
	bin := nodegenBinary(t)
	s := newSetup(t, 0, nil)
	old1 := s.oldNodes[0]
	cmd := exec.Command(bin, s.args("--yes")...)
	cmd.Env = append(os.Environ(), "GOOGLE_APPLICATION_CREDENTIALS="+s.creds)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "cordoned "+old1+"; draining it") {
			time.Sleep(500 * time.Millisecond) // a refused eviction or two
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	_ = cmd.Wait()
	t.Logf("killed run:\n%s", strings.Join(lines, "\n"))
	n, err := s.admin.CoreV1().Nodes().Get(context.Background(), old1, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !n.Spec.Unschedulable {
		t.Fatalf("%s is not cordoned after the kill", old1)
	}

	// The change is reverted: gpu-t4's label is the old one again.
	b, err := os.ReadFile(filepath.Join(testsrc.Dir(), "gpu-t4.cue"))
	if err != nil {
		t.Fatal(err)
	}
	s.writeSource(t, "gpu-t4.cue", string(b))
	var stdout, stderr bytes.Buffer
	// The killed run holds the lock until it expires: wait for it.
	code := cli.Main(s.args("--yes", "--wait", "1m"), strings.NewReader(""), &stdout, &stderr)
	t.Logf("after the revert: exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	if !strings.Contains(stdout.String(), "rollout: "+old1+": no longer replaced (at its group's revision again)") {
		t.Errorf("the output does not say %s is let go", old1)
	}
	// The replacement the killed run made is of the reverted revision
	// now, and the MIG's template is not applied yet: the rollout stops
	// at gpu-t4, saying so. No node stays cordoned.
	if code != cli.ExitFindings || !strings.Contains(stderr.String(), "apply out/terraform first") {
		t.Errorf("exit %d, want %d with the template check's message", code, cli.ExitFindings)
	}
	s.noRolloutMarks(t)
}

// A replacement that never registers is removed from its MIG when the
// batch gives up waiting for it; nothing is drained.
func TestRolloutRemovesNeverReadyReplacement(t *testing.T) {
	s := newSetup(t, 1, nil)
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	a := gpu.Zones[0]
	repl := rolloutReplacement(cl, gpu, s.oldNodes[0], s.cur["gpu-t4"])
	s.world.mu.Lock()
	s.world.dead[repl] = true
	s.world.mu.Unlock()

	ctx := context.Background()
	r, progress := s.runner(t, 3*time.Second)
	err := r.Run(ctx)
	t.Logf("rollout: %v\n%s", err, progress.String())
	if !errors.Is(err, rollout.ErrStopped) || !strings.Contains(err.Error(), repl+" (not registered)") {
		t.Errorf("error %v, want the rollout stopped waiting for %s", err, repl)
	}
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(gpu, a))); !slices.Equal(got, s.oldNodes) {
		t.Errorf("the MIG holds %v, want its old nodes alone %v: the replacement that never came up stays", got, s.oldNodes)
	}
	if _, deleted := s.compute.record(); !slices.Equal(deleted, []string{repl}) {
		t.Errorf("deleted %v, want %s alone", deleted, repl)
	}
	s.noRolloutMarks(t)
}
