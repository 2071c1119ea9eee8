package terraform_test

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// evalCondition evaluates an IAM condition expression with CEL (IAM
// Conditions are CEL over request attributes: resource.name here) for one
// resource name.
func evalCondition(t *testing.T, expr, name string) bool {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("resource", cel.MapType(cel.StringType, cel.StringType)))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("the condition does not compile: %v", iss.Err())
	}
	if ast.OutputType() != cel.BoolType {
		t.Fatalf("the condition is of type %v, not bool", ast.OutputType())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(map[string]any{"resource": map[string]string{"name": name}})
	if err != nil {
		t.Fatalf("evaluating the condition for %s: %v", name, err)
	}
	return out.Value().(bool)
}

// checkCondition evaluates the autoscaler's condition for the source's
// own MIGs, instances and templates (granted) and for neighbours that
// only look alike (refused): another project, zone, cluster or group, a
// MIG of the autoscaler's own group, the project itself.
func checkCondition(t *testing.T, src *model.Source, expr string) {
	t.Helper()
	c := &src.Cluster
	p := "projects/" + c.GCP.Project
	var granted, refused []string
	for _, m := range src.AutoscaledMIGs() {
		mig := p + "/zones/" + m.Zone + "/instanceGroupManagers/" + c.MIGName(m.Group, m.Zone)
		granted = append(granted, mig,
			p+"/zones/"+m.Zone+"/instances/"+c.BaseInstanceName(m.Group)+"-ab12",
			p+"/global/instanceTemplates/"+c.TemplatePrefix(m.Group)+"20261201000000000000000001")
		refused = append(refused,
			strings.Replace(mig, p, "projects/other-project", 1),
			mig+"x",
			strings.Replace(mig, "/zones/"+m.Zone+"/", "/zones/europe-west4-a/", 1),
			p+"/zones/"+m.Zone+"/instances/other-"+c.BaseInstanceName(m.Group)+"-ab12",
			p+"/global/instanceTemplates/other-"+c.TemplatePrefix(m.Group))
	}
	home := src.NodeGroups[c.Autoscaler.NodeGroup]
	for _, z := range home.Zones {
		granted = append(granted, p+"/zones/"+z+"/instances/"+c.BaseInstanceName(home)+"-ab12")
		refused = append(refused, p+"/zones/"+z+"/instanceGroupManagers/"+c.MIGName(home, z))
	}
	refused = append(refused, p, p+"/zones/us-central1-a/instances/onprem-1", p+"/zones/us-central1-a/instanceGroupManagers/other-cluster-mig")
	if len(granted) < 6 {
		t.Fatalf("the test source has too few MIGs: %v", granted)
	}
	for _, n := range granted {
		if !evalCondition(t, expr, n) {
			t.Errorf("the condition refuses %s, one of the cluster's", n)
		}
	}
	for _, n := range refused {
		if evalCondition(t, expr, n) {
			t.Errorf("the condition grants %s, not one of the cluster's", n)
		}
	}
}

// TestAutoscalerConditionLong: a source with too many groups for
// model.AutoscalerConditionCap still gets a condition naming each MIG, not one
// on the cluster's name prefix, which would also grant a cluster named
// "<cluster>-2" (vet refuses such a source: vet_iam_condition_prefix.txtar).
func TestAutoscalerConditionLong(t *testing.T) {
	src, big := longSource(t)
	tmpl := src.NodeGroups["gpu-t4"]
	expr := big.AutoscalerCondition()
	if len(expr) <= model.AutoscalerConditionCap {
		t.Fatalf("the condition of 25 more groups is %d characters, not over the cap %d: the test no longer tests a long one", len(expr), model.AutoscalerConditionCap)
	}
	c := &src.Cluster
	p := "projects/" + c.GCP.Project
	for _, n := range []string{
		p + "/zones/us-central1-a/instanceGroupManagers/" + c.MIGName(tmpl, "us-central1-a"),
		p + "/zones/us-central1-b/instances/" + c.Name + "-gpu-t4-ab12",
	} {
		if !evalCondition(t, expr, n) {
			t.Errorf("the condition refuses %s", n)
		}
	}
	for _, n := range []string{
		p + "/zones/us-central1-a/instanceGroupManagers/" + c.Name + "-2-gpu-t4-us-central1-a",
		p + "/zones/us-central1-a/instances/" + c.Name + "-2-gpu-t4-ab12",
		p + "/global/instanceTemplates/" + c.Name + "-2-gpu-t4-1",
	} {
		if evalCondition(t, expr, n) {
			t.Errorf("the condition grants %s, another cluster's", n)
		}
	}
}

// longSource returns the test source and a copy with 25 more autoscaled
// groups, whose condition naming each MIG is over
// model.AutoscalerConditionCap.
func longSource(t *testing.T) (src, big *model.Source) {
	t.Helper()
	src, _ = testsrc.Spec{}.MustRender(t)
	b := *src
	b.NodeGroups = map[string]*model.NodeGroup{}
	for k, g := range src.NodeGroups {
		b.NodeGroups[k] = g
	}
	tmpl := src.NodeGroups["gpu-t4"]
	for i := range 25 {
		g := *tmpl
		g.Name = "g" + strings.Repeat("x", 20) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		b.NodeGroups[g.Name] = &g
	}
	return src, &b
}

// TestAutoscalerConditionByPrefix: with cluster.gcp.iamConditionByClusterPrefix
// the condition is the cluster's prefix, which grants the cluster's MIGs,
// instances and templates (and, as documented, those of a cluster named
// "<cluster>-2"), but not the MIGs of the autoscaler's own group, which
// nothing on its node may resize.
func TestAutoscalerConditionByPrefix(t *testing.T) {
	src, big := longSource(t)
	big.Cluster.GCP.IAMConditionByClusterPrefix = true
	expr := big.AutoscalerCondition()
	if len(expr) > model.AutoscalerConditionCap || !strings.Contains(expr, "/instanceGroupManagers/"+src.Cluster.Name+`-")`) {
		t.Fatalf("the condition is not the prefix one (%d characters): %s", len(expr), expr)
	}
	c := &big.Cluster
	p := "projects/" + c.GCP.Project
	tmpl := src.NodeGroups["gpu-t4"]
	granted := []string{
		p + "/zones/us-central1-a/instanceGroupManagers/" + c.MIGName(tmpl, "us-central1-a"),
		p + "/zones/us-central1-b/instances/" + c.Name + "-gpu-t4-ab12",
		p + "/global/instanceTemplates/" + c.TemplatePrefix(tmpl) + "1",
		p + "/zones/us-central1-a/instanceGroupManagers/" + c.Name + "-2-gpu-t4-us-central1-a",
	}
	home := big.NodeGroups[c.Autoscaler.NodeGroup]
	var refused []string
	for _, z := range home.Zones {
		granted = append(granted, p+"/zones/"+z+"/instances/"+c.BaseInstanceName(home)+"-ab12")
		refused = append(refused, p+"/zones/"+z+"/instanceGroupManagers/"+c.MIGName(home, z))
	}
	refused = append(refused, strings.Replace(granted[0], p, "projects/other-project", 1), p+"/zones/us-central1-a/instanceGroupManagers/other-cluster-mig")
	for _, n := range granted {
		if !evalCondition(t, expr, n) {
			t.Errorf("the prefix condition refuses %s", n)
		}
	}
	for _, n := range refused {
		if evalCondition(t, expr, n) {
			t.Errorf("the prefix condition grants %s", n)
		}
	}
}
