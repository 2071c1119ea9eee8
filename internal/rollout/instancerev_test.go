package rollout_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/rollout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// bearer sends the fake Compute API's token.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// A node's revision is Compute's answer, not its label's: a node that
// labels itself with its group's current revision while its MIG's
// managed-instance record says it was made from the old template is
// planned for replacement, and one whose label is behind but whose
// instance Compute made from the current template is not. The label
// alone would have planned it the other way round.
func TestPlanRevisionFromCompute(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testsrc.Dir(), "gpu-t4.cue"))
	if err != nil {
		t.Fatal(err)
	}
	oldSrc, oldFiles := load(t, testsrc.Copy(t, nil))
	src, files := load(t, testsrc.Copy(t, map[string]string{"gpu-t4.cue": strings.Replace(string(b), oldPool, newPool, 1)}))
	old, revs := revisionsOf(t, oldSrc, oldFiles), revisionsOf(t, src, files)
	g := src.NodeGroups["gpu-t4"]
	if old[g.Name] == revs[g.Name] {
		t.Fatal("the label change should change gpu-t4's revision")
	}
	cl := &src.Cluster
	zone, mig := g.Zones[0], cl.MIGName(g, g.Zones[0])
	f := newFakeCompute(t, cl.GCP.Project, cl.GCP.Region)
	f.addTemplate("t-old", map[string]string{kubeenv.Key: string(oldFiles[layout.KubeEnvPath(g.Name)])})
	f.addTemplate("t-new", map[string]string{kubeenv.Key: string(files[layout.KubeEnvPath(g.Name)])})
	base := cl.BaseInstanceName(g)
	liar, behind, honest, stale := base+"-liar", base+"-bhnd", base+"-cur1", base+"-old1"
	m := f.addMIG(zone, mig, base, "t-new", honest, behind)
	m.Instances[liar], m.Instances[stale] = "t-old", "t-old"

	node := func(name, rev string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{model.GroupLabel: g.Name, model.RevisionLabel: rev}},
			Spec: corev1.NodeSpec{ProviderID: "gce://" + cl.GCP.Project + "/" + zone + "/" + name}}
	}
	nodes := []corev1.Node{node(liar, revs[g.Name]), node(behind, old[g.Name]), node(honest, revs[g.Name]), node(stale, old[g.Name])}
	migPlan := func(p rollout.Plan) (current, stale []string, byName map[string]rollout.StaleNode) {
		byName = map[string]rollout.StaleNode{}
		for _, gp := range p.Groups {
			for _, mp := range gp.MIGs {
				if gp.Group == g.Name && mp.Zone == zone {
					for _, s := range mp.Stale {
						stale = append(stale, s.Name)
						byName[s.Name] = s
					}
					return mp.Current, stale, byName
				}
			}
		}
		t.Fatalf("no plan for %s", mig)
		return nil, nil, nil
	}

	p := rollout.MakePlan(src, revs, nodes)
	if cur, st, _ := migPlan(p); !slices.Equal(cur, []string{honest, liar}) || !slices.Equal(st, []string{behind, stale}) {
		t.Fatalf("by the labels: current %v, stale %v", cur, st)
	}
	c := &rollout.Compute{Endpoint: f.Endpoint(), HTTP: &http.Client{Transport: bearer(f.token)}}
	instances, err := c.InstanceRevisions(context.Background(), cl.GCP.Project, zone, mig, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.UseInstanceRevisions(src, g, zone, instances)
	cur, st, byName := migPlan(p)
	if !slices.Equal(cur, []string{behind, honest}) || !slices.Equal(st, []string{liar, stale}) {
		t.Errorf("by Compute: current %v, stale %v; want current %v, stale %v", cur, st, []string{behind, honest}, []string{liar, stale})
	}
	if s := byName[liar]; s.Revision != old[g.Name] || s.Replacement != rollout.ReplacementName(cl, g, liar, revs[g.Name]) {
		t.Errorf("the relabelled node is planned as %+v; want revision %s and its replacement", s, old[g.Name])
	}
}

// A stale node whose kubelet relabels it with its group's current
// revision (a compromised node escaping the rollout) is still planned for
// replacement, in the plan printed without --yes, and replaced by
// rollout --yes: its MIG's managed-instance record says it was made from
// the old template. By the labels, it would be left in place.
func TestRolloutReplacesNodeThatRelabelsItselfCurrent(t *testing.T) {
	s := newSetup(t, 1, nil)
	liar := s.oldNodes[0]
	patch := `{"metadata":{"labels":{"` + model.RevisionLabel + `":"` + s.cur["gpu-t4"] + `"}}}`
	if _, err := s.admin.CoreV1().Nodes().Patch(context.Background(), liar, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	s.planSays(t, "drain and delete: "+liar+" (revision "+s.old["gpu-t4"]+") by ")
	out := s.rolloutYes(t)
	if !strings.Contains(out, "cordoned "+liar) {
		t.Errorf("%s, which labels itself current but was made from the old template, was not replaced", liar)
	}
	s.checkDone(t)
}
