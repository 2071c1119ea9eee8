package drift_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodecheck"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// An on-prem group's locality is part of the labels drift expects on its
// nodes: a node without them, or in another zone, has drifted.
func TestOnPremLocality(t *testing.T) {
	dir := testsrc.Copy(t, map[string]string{"locality.cue": `nodeGroups: "onprem-gpu": locality: {region: "onprem-dc1", zone: "onprem-dc1-a"}` + "\n"})
	l, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := l.Fleet.Clusters[0]
	var base corev1.Node
	for _, n := range readFixtureNodes(t) {
		if n.Name == "onprem-a100-01" {
			base = n
		}
	}
	if base.Name == "" {
		t.Fatal("no onprem-a100-01 in the fixture")
	}
	base.Spec.ProviderID = model.UnmanagedProviderID(base.Name) // as set-provider-id.sh leaves it
	check := func(n corev1.Node) []string {
		results, _ := nodecheck.Check(src, []corev1.Node{n}, nodecheck.Options{Now: fixtureNow, StuckAfter: 30 * time.Minute})
		if len(results) != 1 || results[0].Group != "onprem-gpu" {
			t.Fatalf("results %+v", results)
		}
		return findingKeys(results[0].Findings)
	}
	// The fixture's node has no topology labels.
	if got, want := check(base), []string{"label-missing:topology.kubernetes.io/region", "label-missing:topology.kubernetes.io/zone"}; !slices.Equal(got, want) {
		t.Errorf("unlabelled node: %v, want %v", got, want)
	}
	n := *base.DeepCopy()
	n.Labels["topology.kubernetes.io/region"] = "onprem-dc1"
	n.Labels["topology.kubernetes.io/zone"] = "onprem-dc1-a"
	if got := check(n); len(got) != 0 {
		t.Errorf("labelled node: %v", got)
	}
	n.Labels["topology.kubernetes.io/zone"] = "onprem-dc1-b"
	if got, want := check(n), []string{"label-different:topology.kubernetes.io/zone"}; !slices.Equal(got, want) {
		t.Errorf("node in another zone: %v, want %v", got, want)
	}
}
