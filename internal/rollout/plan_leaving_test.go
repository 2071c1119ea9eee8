package rollout_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/rollout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// MakePlan finds the nodes of MIGs that left the source, whatever left:
// a zone of a group, a group (removed or renamed), and names each MIG as
// the cluster names its MIGs; nodes named otherwise, in another project,
// or of the source's MIGs are not among them; an excluded group's are
// named and marked so; the drain's held pods are read for them too.
func TestPlanLeavingMIGs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testsrc.Dir(), "gpu-t4.cue"))
	if err != nil {
		t.Fatal(err)
	}
	dir := testsrc.Copy(t, map[string]string{
		"gpu-t4.cue":  strings.Replace(string(b), gpuZones, gpuZoneA, 1),
		"rollout.cue": "cluster: rollout: exclude: [\"cpu-burst\"]\n",
	})
	src, files := load(t, dir)
	revs := revisionsOf(t, src, files)
	cl := &src.Cluster
	node := func(name, group, project, zone string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if group != "" {
			n.Labels[model.GroupLabel] = group
		}
		if project != "" {
			n.Spec.ProviderID = "gce://" + project + "/" + zone + "/" + name
		}
		return n
	}
	p := cl.GCP.Project
	nodes := []corev1.Node{
		node("hybrid-ai-gpu-t4-gb02", "gpu-t4", p, "us-central1-b"),
		node("hybrid-ai-gpu-t4-gb01", "gpu-t4", p, "us-central1-b"),
		node("hybrid-ai-gpu-t4-ga01", "gpu-t4", p, "us-central1-a"),     // a zone it keeps
		node("hybrid-ai-old-pool-x1y2", "old-pool", p, "us-central1-a"), // a group gone
		node("hybrid-ai-cpu-burst-c001", "cpu-burst", p, "us-central1-c"),
		node("hybrid-ai-gone-k9k9", "gone", "another-project", "us-central1-a"),
		node("web-1", "gone", p, "us-central1-a"), // not named as a MIG names its VMs
		node("hybrid-ai-gone-toolong", "gone", p, "us-central1-a"),
		node("onprem-1", "gone", "", ""),
	}
	nodes[1].Annotations = map[string]string{rollout.DrainingAnnotation: rollout.LeavingRevision}
	plan := rollout.MakePlan(src, revs, nodes)
	type got struct {
		group, zone, name, why string
		excluded               bool
		nodes                  string
	}
	var have []got
	for _, l := range plan.Leaving {
		var ns []string
		for _, n := range l.Nodes {
			ns = append(ns, n.Name)
		}
		have = append(have, got{l.Group, l.Zone, l.Name, l.Why, l.Excluded, strings.Join(ns, ",")})
	}
	want := []got{
		{"cpu-burst", "us-central1-c", "hybrid-ai-cpu-burst-us-central1-c", "zone us-central1-c is no longer in cpu-burst's zones", true, "hybrid-ai-cpu-burst-c001"},
		{"gpu-t4", "us-central1-b", "hybrid-ai-gpu-t4-us-central1-b", "zone us-central1-b is no longer in gpu-t4's zones", false, "hybrid-ai-gpu-t4-gb01,hybrid-ai-gpu-t4-gb02"},
		{"old-pool", "us-central1-a", "hybrid-ai-old-pool-us-central1-a", "group old-pool is no longer in the source", false, "hybrid-ai-old-pool-x1y2"},
	}
	if len(have) != len(want) {
		t.Fatalf("leaving %+v, want %+v", have, want)
	}
	for i := range want {
		if have[i] != want[i] {
			t.Errorf("leaving[%d] = %+v, want %+v", i, have[i], want[i])
		}
	}
	if !plan.Leaving[1].Nodes[0].Draining {
		t.Errorf("%s carries the draining annotation: the plan should say it resumes", plan.Leaving[1].Nodes[0].Name)
	}

	pods := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "naked"}, Spec: corev1.PodSpec{NodeName: "hybrid-ai-old-pool-x1y2"}}}
	plan.AddPods(pods, rollout.DrainOptions{}, nil)
	var out bytes.Buffer
	if err := plan.WriteText(&out, cl.Autoscaler.NodeGroup); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", out.String())
	for _, w := range []string{
		"us-central1-a (MIG hybrid-ai-old-pool-us-central1-a): group old-pool is no longer in the source",
		"drain and delete, one at a time, no replacement: hybrid-ai-gpu-t4-gb01 (already cordoned: resumed), hybrid-ai-gpu-t4-gb02",
		"hybrid-ai-old-pool-x1y2 is not drained: it holds pods not evicted without a flag: shop/naked (no controller: --force evicts it)",
		"us-central1-c (MIG hybrid-ai-cpu-burst-us-central1-c): zone us-central1-c is no longer in cpu-burst's zones\n     excluded by cluster.rollout.exclude, left alone (1 node)",
		"3 nodes leaving the source to drain and delete",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the plan lacks %q", w)
		}
	}
	if strings.Contains(out.String(), "nothing to do") {
		t.Errorf("the plan says nothing to do")
	}
}
