package rollout_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/model"
)

// A group whose drain a PodDisruptionBudget blocks is reported and left as
// it was; the rollout goes on with the next group (the autoscaler's own,
// last), replaces its node, and exits non-zero naming the blocked group.
func TestRolloutBlockedGroupDoesNotStopOthers(t *testing.T) {
	s := newSetupWith(t, 0, map[string]string{"rollout.cue": "cluster: rollout: drainTimeout: \"30s\"\n"}, true)
	var stdout, stderr bytes.Buffer
	code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr)
	t.Logf("rollout: exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want %d", code, cli.ExitFindings)
	}
	for _, want := range []string{
		"rollout stopped: 1 group not finished (the others were rolled)",
		"gpu-t4 (us-central1-a): the drain of " + s.oldNodes[0] + " did not finish in 30s",
		"PodDisruptionBudget shop/web allows 0 disruptions",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if !strings.Contains(stdout.String(), "rollout: gpu-t4/us-central1-a: blocked, going on with the other groups") {
		t.Errorf("the output does not say the rollout went on")
	}
	// The autoscaler's MIG in the second zone has no VM: Terraform no
	// longer sizes a gce-static MIG after creating it (a surge changes
	// the size), so the rollout says so; the first zone's, back at its
	// size after the surge, is not named.
	if want := "rollout: autoscaler/us-central1-b: MIG hybrid-ai-autoscaler-us-central1-b has target size 0, the group's size is 1: Terraform sets a gce-static MIG's size only when it creates it; grow it with gcloud compute instance-groups managed resize hybrid-ai-autoscaler-us-central1-b --zone us-central1-b --size 1"; !strings.Contains(stdout.String(), want) {
		t.Errorf("the output lacks %q", want)
	}
	if strings.Contains(stdout.String(), "MIG hybrid-ai-autoscaler-us-central1-a has target size") {
		t.Errorf("the output names the autoscaler's first MIG, which is at its size")
	}
	cl := &s.src.Cluster
	gpu, as := s.src.NodeGroups["gpu-t4"], s.src.NodeGroups["autoscaler"]
	a := gpu.Zones[0]
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(gpu, a))); !slices.Equal(got, s.oldNodes) {
		t.Errorf("gpu-t4's MIG holds %v, want its old nodes %v", got, s.oldNodes)
	}
	old := cl.BaseInstanceName(as) + "-old1"
	repl := rolloutReplacement(cl, as, old, s.cur["autoscaler"])
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(as, a))); !slices.Equal(got, []string{repl}) {
		t.Errorf("the autoscaler's MIG holds %v, want its replacement %s alone", got, repl)
	}
	nodes, err := s.admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Name == old {
			t.Errorf("the autoscaler's old node %s is still there", old)
		}
		if n.Spec.Unschedulable {
			t.Errorf("node %s left cordoned", n.Name)
		}
		if n.Labels[model.GroupLabel] == "autoscaler" && n.Labels[model.RevisionLabel] != s.cur["autoscaler"] {
			t.Errorf("autoscaler node %s at revision %s", n.Name, n.Labels[model.RevisionLabel])
		}
	}
}
