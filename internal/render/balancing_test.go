package render_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// gceIgnoredLabels are the labels the autoscaler's GCE provider never
// compares when it decides whether two node groups are similar:
// BasicIgnoredLabels in
// cluster-autoscaler/processors/nodegroupset/compare_nodegroups.go and
// topology.gke.io/zone from CreateGceNodeInfoComparator in
// cluster-autoscaler/processors/nodegroupset/gce_nodegroups.go
// (kubernetes/autoscaler, cluster-autoscaler-1.35.0), which main.go picks
// for --cloud-provider=gce and adds the --balancing-ignore-label flags to.
var gceIgnoredLabels = []string{
	corev1.LabelHostname,
	corev1.LabelFailureDomainBetaZone,
	corev1.LabelFailureDomainBetaRegion,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	"beta.kubernetes.io/fluentd-ds-ready",
	"kops.k8s.io/instancegroup",
	"topology.gke.io/zone",
}

// labelsSimilar is compareLabels of the same file: every label not ignored
// must be on both nodes, with one value.
func labelsSimilar(a, b *corev1.Node, ignored map[string]bool) bool {
	values := map[string][]string{}
	for _, n := range []*corev1.Node{a, b} {
		for k, v := range n.Labels {
			if !ignored[k] {
				values[k] = append(values[k], v)
			}
		}
	}
	for _, v := range values {
		if len(v) != 2 || v[0] != v[1] {
			return false
		}
	}
	return true
}

// TestBalancingAcrossRollout: mid-rollout, one zonal MIG of a group runs
// nodes of the new revision and another those of the old one. With the
// rendered flags the autoscaler still finds the two MIGs similar (and so
// balances them); two different groups stay apart.
func TestBalancingAcrossRollout(t *testing.T) {
	src, files := testsrc.Example(t)
	if got := flagValues(files, "balance-similar-node-groups"); len(got) != 1 || got[0] != "true" {
		t.Fatalf("balance-similar-node-groups %v, want [true]", got)
	}
	withFlags := map[string]bool{}
	basic := map[string]bool{}
	for _, l := range gceIgnoredLabels {
		withFlags[l], basic[l] = true, true
	}
	for _, l := range flagValues(files, "balancing-ignore-label") {
		withFlags[l] = true
	}

	node := func(group, zone, revision string) *corev1.Node {
		t.Helper()
		g := src.NodeGroups[group]
		n, err := nodetemplate.TemplateNode(&src.Cluster, g, zone, files[layout.KubeEnvPath(group)], src.ExtraStartupTaints())
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels[model.RevisionLabel] == "" {
			t.Fatalf("%s's template node has no %s label", group, model.RevisionLabel)
		}
		if revision != "" {
			n.Labels[model.RevisionLabel] = revision
		}
		return n
	}
	newA := node("gpu-t4", "us-central1-a", "")
	newB := node("gpu-t4", "us-central1-b", "")
	oldB := node("gpu-t4", "us-central1-b", "0123456789ab")

	if !labelsSimilar(newA, newB, basic) {
		t.Errorf("gpu-t4's two zonal MIGs differ in labels even at one revision: %v vs %v", newA.Labels, newB.Labels)
	}
	if labelsSimilar(newA, oldB, basic) {
		t.Fatal("two revisions compare as similar without any ignored label: the test would not see a missing flag")
	}
	if !labelsSimilar(newA, oldB, withFlags) {
		t.Errorf("mid-rollout, gpu-t4's zonal MIGs are not similar under the rendered --balancing-ignore-label flags %v", flagValues(files, "balancing-ignore-label"))
	}
	if labelsSimilar(newA, node("spot-gpu-t4", "us-central1-a", ""), withFlags) {
		t.Error("gpu-t4 and spot-gpu-t4 compare as similar: balancing would mix two groups")
	}
}
