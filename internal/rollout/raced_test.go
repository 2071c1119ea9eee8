package rollout_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
)

// An autoscaler scale-up lands between the surge's read of the MIG's
// target size and its createInstances: the MIG is then over the group's
// max, and the rollout removes its replacement at once and stops the
// group, leaving the MIG within the max and the old nodes as they were.
func TestRolloutMaxRecheckedAfterRacingScaleUp(t *testing.T) {
	s := newSetup(t, 1, nil)
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	a := gpu.Zones[0]
	scaled := cl.BaseInstanceName(gpu) + "-asc1"
	s.compute.mu.Lock()
	s.compute.raceCreate = func(m *fakeMIG) { m.Instances[scaled] = m.Template }
	s.compute.mu.Unlock()
	repl := rolloutReplacement(cl, gpu, s.oldNodes[0], s.cur["gpu-t4"])

	r := s.runCLI("--yes")
	t.Logf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	want := "MIG " + cl.MIGName(gpu, a) + " grew to 5 instances, over the group's max of 4, while the surge created " + repl
	if r.code != cli.ExitFindings || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, want %d and %q", r.code, cli.ExitFindings, want)
	}
	if _, deleted := s.compute.record(); !slices.Equal(deleted, []string{repl}) {
		t.Errorf("deleted %v, want the surge's %s alone", deleted, repl)
	}
	want2 := append(slices.Clone(s.oldNodes), scaled)
	slices.Sort(want2)
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(gpu, a))); !slices.Equal(got, want2) {
		t.Errorf("the MIG holds %v, want %v: its max of %d", got, want2, gpu.Max)
	}
	_, _, _, cordons, _ := s.obs.report()
	for _, n := range s.oldNodes {
		if cordons[n] > 0 {
			t.Errorf("old node %s was cordoned", n)
		}
	}
}
