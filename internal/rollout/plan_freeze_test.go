package rollout_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/rollout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The plan of a surge says that each batch holds every scale-up of the
// cluster while the cluster's autoscaler has the upcoming-node freeze
// (the stock build), and says nothing of it with nodegen's patched build,
// which does not have it, or when there is nothing to surge.
func TestPlanUpcomingNodeFreeze(t *testing.T) {
	const freeze = "adds no node anywhere: each batch holds every scale-up"
	for _, c := range []struct {
		name, extra string
		stale, want bool
	}{
		{"stock build", "", true, true},
		{"patched build", `cluster: autoscaler: patchedImage: repository: "registry.example.com/infra/cluster-autoscaler"` + "\n", true, false},
		{"nothing to surge", "", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			edits := map[string]string{}
			if c.extra != "" {
				edits["patched.cue"] = c.extra
			}
			src, files := load(t, testsrc.Copy(t, edits))
			rel, err := src.Cluster.AutoscalerRelease()
			if err != nil {
				t.Fatal(err)
			}
			if rel.UpcomingNodeBlocks != c.want && c.stale {
				t.Fatalf("autoscaler %s (patched %v): upcoming-node freeze %v, want %v", rel.Tag, rel.Patched, rel.UpcomingNodeBlocks, c.want)
			}
			revs := revisionsOf(t, src, files)
			rev := revs["gpu-t4"]
			if c.stale {
				rev = "0123456789ab"
			}
			name := src.Cluster.BaseInstanceName(src.NodeGroups["gpu-t4"]) + "-o001"
			nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{model.GroupLabel: "gpu-t4", model.RevisionLabel: rev}},
				Spec: corev1.NodeSpec{ProviderID: "gce://" + src.Cluster.GCP.Project + "/us-central1-a/" + name}}}
			var out bytes.Buffer
			if err := rollout.MakePlan(src, revs, nodes).WriteText(&out, src.Cluster.Autoscaler.NodeGroup); err != nil {
				t.Fatal(err)
			}
			t.Logf("plan:\n%s", out.String())
			if got := strings.Contains(out.String(), "the autoscaler "+src.Cluster.AutoscalerImageTag()+" "+freeze); got != c.want {
				t.Errorf("the plan states the freeze: %v, want %v", got, c.want)
			}
		})
	}
}
