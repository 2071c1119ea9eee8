package rollout_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/rollout"
)

// A zone removed from a group: its nodes are in the rollout's plan, and
// --yes cordons and drains each (the PodDisruptionBudget respected: never
// more than one pod unavailable), deletes it through its MIG, and deletes
// the emptied MIG, which terraform apply refuses to delete (the MIGs'
// deletion_policy). No replacement is made; the rest is untouched.
func TestRolloutDrainsRemovedZone(t *testing.T) {
	s := newSetupOf(t, 1, nil, false, zoneRemoved)
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	mig := cl.MIGName(gpu, "us-central1-b")

	s.planSays(t,
		"leaving the source, first",
		"us-central1-b (MIG "+mig+"): zone us-central1-b is no longer in gpu-t4's zones",
		"drain and delete, one at a time, no replacement: "+strings.Join(s.oldNodes, ", "),
		"2 nodes leaving the source to drain and delete",
	)
	out := s.rolloutYes(t)
	created, deleted := s.compute.record()
	if len(created) > 0 {
		t.Errorf("created %v: a removed zone's nodes get no replacement", created)
	}
	if !slices.Equal(deleted, s.oldNodes) {
		t.Errorf("deleted %v, want the removed zone's nodes, each once: %v", deleted, s.oldNodes)
	}
	deletedMIGs := s.compute.migsDeleted()
	// gpu-t4's once emptied; cpu-burst's, which had no node, too; not the
	// empty MIGs that are not the cluster's.
	cpuMIG := cl.MIGName(s.src.NodeGroups["cpu-burst"], "us-central1-b")
	if !slices.Equal(deletedMIGs, []string{"us-central1-b/" + mig, "us-central1-b/" + cpuMIG}) {
		t.Errorf("deleted MIGs %v, want the removed zone's of gpu-t4, once emptied, then cpu-burst's", deletedMIGs)
	}
	for _, want := range []string{"drained " + s.oldNodes[0], "drained " + s.oldNodes[1], "MIG " + mig + " is empty and deleted",
		"cpu-burst/us-central1-b: zone us-central1-b is no longer in cpu-burst's zones: MIG " + cpuMIG + " has no instance; deleting it",
		"zone us-central1-d is no longer in spot-gpu-t4's zones, but MIG hybrid-ai-spot-gpu-t4-us-central1-d has instances that are no node of this cluster (hybrid-ai-spot-gpu-t4-xc01): left alone",
		"rollout done"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Each node was drained before its VM went: its pods were evicted
	// while it was cordoned.
	if i, j := strings.Index(out, "drained "+s.oldNodes[0]), strings.Index(out, s.oldNodes[0]+" deleted"); i < 0 || j < i {
		t.Errorf("%s was not drained before it was deleted", s.oldNodes[0])
	}
	s.oldNodesGone(t, 2)
	pods, err := s.admin.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if slices.Contains(s.oldNodes, p.Spec.NodeName) {
			t.Errorf("pod %s still on %s", p.Name, p.Spec.NodeName)
		}
	}
	s.drainedWithinBudget(t)

	s.againNothingLeft(t)
}

// A budget that allows no disruption blocks the drain of a removed zone's
// node: after drainTimeout the node is schedulable again without the
// rollout's marks, nothing is deleted, the MIG stays (terraform apply
// still refuses to delete it), the other groups are rolled, and the
// rollout exits 1 naming the zone.
func TestRolloutRemovedZoneBlockedByBudget(t *testing.T) {
	s := newSetupOf(t, 0, map[string]string{"rollout.cue": "cluster: rollout: drainTimeout: \"30s\"\n"}, false, zoneRemoved)
	var stdout, stderr bytes.Buffer
	code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr)
	out := stdout.String()
	t.Logf("rollout: exit %d\n%s\nstderr:\n%s", code, out, stderr.String())
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want %d", code, cli.ExitFindings)
	}
	for _, want := range []string{
		"gpu-t4 (us-central1-b): the drain of " + s.oldNodes[0] + " did not finish in 30s",
		"PodDisruptionBudget shop/web allows 0 disruptions",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	for _, want := range []string{"rollout: gpu-t4/us-central1-b: blocked, going on with the others", "rollout: autoscaler/us-central1-b: up to date"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if created, deleted := s.compute.record(); len(created)+len(deleted) > 0 {
		t.Errorf("created %v, deleted %v: a blocked drain deletes nothing", created, deleted)
	}
	deletedMIGs := s.compute.migsDeleted()
	if want := []string{"us-central1-b/" + s.src.Cluster.MIGName(s.src.NodeGroups["cpu-burst"], "us-central1-b")}; !slices.Equal(deletedMIGs, want) {
		t.Errorf("deleted MIGs %v, want %v alone (cpu-burst's, which had no node)", deletedMIGs, want)
	}
	nodes, err := s.admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			t.Errorf("node %s left cordoned", n.Name)
		}
		for _, k := range []string{"nodegen.dev/rollout-draining", "nodegen.dev/rollout-cordoned", "nodegen.dev/rollout-scale-down-disabled", "cluster-autoscaler.kubernetes.io/scale-down-disabled"} {
			if _, has := n.Annotations[k]; has {
				t.Errorf("node %s keeps %s", n.Name, k)
			}
		}
	}
	if len(nodes.Items) != 4 {
		t.Errorf("%d nodes, want the 4 of before", len(nodes.Items))
	}
}

// Killed with SIGKILL at a random step (twice) while it empties a removed
// zone, and run again, the real binary finishes: each node of the zone
// drained and deleted once, each MIG that left the source deleted once,
// no node left cordoned, the budget never exceeded.
func TestRolloutRemovedZoneKilledAndResumed(t *testing.T) {
	bin := nodegenBinary(t)
	s := newSetupOf(t, 1, nil, false, zoneRemoved)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	for i := 0; i < 2; i++ {
		k := 1 + rng.IntN(8)
		killed, out := s.runBinary(t, bin, k)
		t.Logf("run %d, SIGKILL after step %d (killed: %v):\n%s", i+1, k, killed, out)
	}
	_, out := s.runBinary(t, bin, 0)
	t.Logf("last run:\n%s", out)
	if !strings.Contains(out, "rollout done") {
		t.Errorf("the last run did not finish")
	}
	created, deleted := s.compute.record()
	slices.Sort(deleted)
	if len(created) > 0 || !slices.Equal(deleted, s.oldNodes) {
		t.Errorf("created %v, deleted %v: want nothing created, each of %v deleted once", created, deleted, s.oldNodes)
	}
	cl := &s.src.Cluster
	deletedMIGs := s.compute.migsDeleted()
	slices.Sort(deletedMIGs)
	if want := []string{"us-central1-b/" + cl.MIGName(s.src.NodeGroups["cpu-burst"], "us-central1-b"), "us-central1-b/" + cl.MIGName(s.src.NodeGroups["gpu-t4"], "us-central1-b")}; !slices.Equal(deletedMIGs, want) {
		t.Errorf("deleted MIGs %v, want %v, each once", deletedMIGs, want)
	}
	s.oldNodesGone(t, 2)
	time.Sleep(300 * time.Millisecond) // the last watch events
	worstPods, _, forced, cordons, _ := s.obs.report()
	if worstPods > 1 || len(forced) > 0 {
		t.Errorf("at worst %d pods unavailable (the budget allows 1); forced %v", worstPods, forced)
	}
	for n, c := range cordons {
		if c > 1 {
			t.Errorf("node %s cordoned %d times", n, c)
		}
	}
}

// A run that deleted the last VM of a MIG that left the source and was
// stopped before it deleted the MIG leaves the MIG empty and the nodes'
// Nodes cordoned for leaving: the next run deletes those Nodes (their VMs
// are gone) and then the empty MIG, which is not a MIG that is gone.
func TestRolloutDeletesMIGEmptiedByStoppedRun(t *testing.T) {
	s := newSetupOf(t, 1, nil, false, zoneRemoved)
	ctx := context.Background()
	for _, name := range s.oldNodes {
		n, err := s.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.Unschedulable = true
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[rollout.DrainingAnnotation] = rollout.LeavingRevision
		n.Annotations[rollout.CordonedAnnotation] = "true"
		if _, err := s.admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mig := s.src.Cluster.MIGName(s.src.NodeGroups["gpu-t4"], "us-central1-b")
	s.compute.mu.Lock()
	m := s.compute.migs["us-central1-b/"+mig]
	if m == nil || len(m.Instances) != len(s.oldNodes) {
		s.compute.mu.Unlock()
		t.Fatalf("MIG %s does not hold the old nodes %v", mig, s.oldNodes)
	}
	m.Instances = map[string]string{}
	s.compute.mu.Unlock()

	out := s.rolloutYes(t)
	for _, want := range []string{
		"gpu-t4/us-central1-b: " + s.oldNodes[0] + " deleted (its VM was already deleted)",
		"gpu-t4/us-central1-b: MIG " + mig + " is empty and deleted",
		"rollout done",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "already gone") {
		t.Errorf("an empty MIG taken for one that is gone")
	}
	if deleted := s.compute.migsDeleted(); !slices.Contains(deleted, "us-central1-b/"+mig) {
		t.Errorf("deleted MIGs %v: %s is not among them", deleted, mig)
	}
	s.oldNodesGone(t, 2)
	s.againNothingLeft(t)
}

// A group renamed in the source (gpu-t4 now renamedGPU), the new group's
// MIGs made by terraform apply, the old group's still holding its three
// nodes: the plan lists the old MIGs as leaving ("group gpu-t4 is no
// longer in the source") and --yes drains each old node (the budget
// respected, the pods going to the new group's node), deletes it through
// its MIG, then deletes both old MIGs. The new group's MIGs, which the
// rendered Terraform declares in place of the old, are untouched, and
// nothing is created.
func TestRolloutDrainsRenamedGroup(t *testing.T) {
	s := newSetupOf(t, 1, nil, false, groupRenamed)
	cl := &s.src.Cluster
	old := &model.NodeGroup{Name: "gpu-t4"}
	v2 := s.src.NodeGroups[renamedGPU]
	a, b := v2.Zones[0], v2.Zones[1]
	_, files := load(t, s.dir)
	tf := string(files[layout.TerraformGroupPath(renamedGPU)])
	for _, z := range []string{a, b} {
		if !strings.Contains(tf, `"`+cl.MIGName(v2, z)+`"`) {
			t.Errorf("the rendered Terraform does not make %s", cl.MIGName(v2, z))
		}
		for p, f := range files {
			if strings.Contains(string(f), `"`+cl.MIGName(old, z)+`"`) {
				t.Errorf("%s still names %s", p, cl.MIGName(old, z))
			}
		}
	}

	s.planSays(t,
		"leaving the source, first",
		a+" (MIG "+cl.MIGName(old, a)+"): group gpu-t4 is no longer in the source",
		"drain and delete, one at a time, no replacement: "+s.oldNodes[0]+", "+s.oldNodes[1],
		b+" (MIG "+cl.MIGName(old, b)+"): group gpu-t4 is no longer in the source",
		"3 nodes leaving the source to drain and delete",
		renamedGPU+" (gce): up to date",
	)
	out := s.rolloutYes(t)
	created, deleted := s.compute.record()
	if len(created) > 0 {
		t.Errorf("created %v: a renamed group's old nodes get no replacement", created)
	}
	if !slices.Equal(deleted, s.oldNodes) {
		t.Errorf("deleted %v, want the old group's nodes, each once: %v", deleted, s.oldNodes)
	}
	deletedMIGs := s.compute.migsDeleted()
	if want := []string{a + "/" + cl.MIGName(old, a), b + "/" + cl.MIGName(old, b)}; !slices.Equal(deletedMIGs, want) {
		t.Errorf("deleted MIGs %v, want the old group's, once emptied: %v", deletedMIGs, want)
	}
	if got := joinNames(s.compute.instances(a, cl.MIGName(v2, a))); got != cl.BaseInstanceName(v2)+"-ab01" {
		t.Errorf("%s's MIG holds %s", renamedGPU, got)
	}
	for _, n := range s.oldNodes {
		if i, j := strings.Index(out, "drained "+n), strings.Index(out, n+" deleted"); i < 0 || j < i {
			t.Errorf("%s was not drained before it was deleted", n)
		}
	}
	s.oldNodesGone(t, 2)
	pods, err := s.admin.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != cl.BaseInstanceName(v2)+"-ab01" {
			t.Errorf("pod %s on %s, not on the new group's node", p.Name, p.Spec.NodeName)
		}
	}
	time.Sleep(300 * time.Millisecond) // the last watch events
	s.drainedWithinBudget(t)

	s.againNothingLeft(t)
}

// planSays runs the rollout without --yes, which exits 0 having printed
// each of wants and changed no MIG.
func (s *setup) planSays(t *testing.T, wants ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(s.args(), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("plan: exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("plan:\n%s", stdout.String())
	for _, want := range wants {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the plan lacks %q", want)
		}
	}
	if created, deleted := s.compute.record(); len(created)+len(deleted) > 0 {
		t.Fatalf("the plan changed the MIGs: created %v, deleted %v", created, deleted)
	}
}

// rolloutYes runs the rollout with --yes, which exits 0, and returns what
// it printed.
func (s *setup) rolloutYes(t *testing.T) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("rollout exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("rollout:\n%s", stdout.String())
	return stdout.String()
}

// againNothingLeft runs the rollout with --yes once more: nothing is left
// to do, nothing is leaving the source.
func (s *setup) againNothingLeft(t *testing.T) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("second rollout exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "nothing to do") || strings.Contains(stdout.String(), "leaving the source") {
		t.Errorf("second run:\n%s", stdout.String())
	}
}

// oldNodesGone holds that none of the old nodes is a Node any more, that
// no node is left cordoned, and that want nodes remain.
func (s *setup) oldNodesGone(t *testing.T, want int) {
	t.Helper()
	nodes, err := s.admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if slices.Contains(s.oldNodes, n.Name) {
			t.Errorf("the Node of deleted VM %s is still there", n.Name)
		}
		if n.Spec.Unschedulable {
			t.Errorf("node %s left cordoned", n.Name)
		}
	}
	if len(nodes.Items) != want {
		t.Errorf("%d nodes, want %d", len(nodes.Items), want)
	}
}

// drainedWithinBudget holds what the observer saw of the drains: one pod
// of three unavailable at worst (the budget's one) and at least once (the
// drains evicted), no pod deleted without a graceful deletion first, and
// each old node cordoned once.
func (s *setup) drainedWithinBudget(t *testing.T) {
	t.Helper()
	worstPods, _, forced, cordons, events := s.obs.report()
	t.Logf("observed %d events: at worst %d of 3 pods unavailable; cordons %v", events, worstPods, cordons)
	if worstPods > 1 {
		t.Errorf("%d pods were unavailable at once: the budget allows 1", worstPods)
	}
	if worstPods < 1 {
		t.Errorf("no pod was ever unavailable: the drains evicted nothing")
	}
	if len(forced) > 0 {
		t.Errorf("pods deleted without a graceful deletion first: %v", forced)
	}
	for _, n := range s.oldNodes {
		if cordons[n] != 1 {
			t.Errorf("node %s cordoned %d times, want once", n, cordons[n])
		}
	}
}

// A run killed after it asked Compute to delete a MIG that left the
// source (its nodes drained, their VMs and Nodes deleted) leaves that
// deletion under way: the next run finds the MIG still listed, empty, and
// Compute refuses to delete it again. The run waits for the MIG to go,
// says so, and finishes, instead of reporting the MIG as blocked.
func TestRolloutWaitsForMIGStillBeingDeleted(t *testing.T) {
	s := newSetupOf(t, 1, nil, false, zoneRemoved)
	ctx := context.Background()
	const zone = "us-central1-b"
	mig := s.src.Cluster.MIGName(s.src.NodeGroups["gpu-t4"], zone)
	s.compute.mu.Lock()
	m := s.compute.migs[zone+"/"+mig]
	if m == nil || len(m.Instances) != len(s.oldNodes) {
		s.compute.mu.Unlock()
		t.Fatalf("MIG %s does not hold the old nodes %v", mig, s.oldNodes)
	}
	m.Instances = map[string]string{}
	s.compute.mu.Unlock()
	for _, name := range s.oldNodes {
		if err := s.admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s.compute.deletingMIG(zone, mig, 3*time.Second)

	out := s.rolloutYes(t)
	for _, want := range []string{
		"gpu-t4/" + zone + ": MIG " + mig + " was still being deleted (a deletion an earlier run asked for) and is gone now",
		"rollout done",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	s.compute.mu.Lock()
	_, still := s.compute.migs[zone+"/"+mig]
	s.compute.mu.Unlock()
	if still {
		t.Errorf("MIG %s is still there", mig)
	}
	s.againNothingLeft(t)
}
