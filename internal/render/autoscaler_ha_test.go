package render_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestAutoscalerReplicasFitOnlyItsNodes: the chart values run two
// replicas under leader election, and component-helpers (as the scheduler
// reads nodeSelector, required node affinity and taints) lets them only
// onto the autoscaler's nodes, one in each of two zones: the required
// anti-affinity on the hostname keeps the second replica off the first
// one's node.
func TestAutoscalerReplicasFitOnlyItsNodes(t *testing.T) {
	src, files, nodes := exampleNodes(t)
	var v chartValues
	if err := yaml.UnmarshalStrict(files[layout.AutoscalerValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	if v.ReplicaCount != 2 || v.ExtraArgs["leader-elect"] != "true" {
		t.Fatalf("replicaCount %d, leader-elect %q; want 2 replicas under leader election", v.ReplicaCount, v.ExtraArgs["leader-elect"])
	}
	// The chart's Role grants the Lease named cluster-autoscaler, the
	// autoscaler's default lock name: no other name may be set.
	for _, k := range []string{"leader-elect-resource-name", "leader-elect-resource-lock", "leader-elect-resource-namespace"} {
		if _, ok := v.ExtraArgs[k]; ok {
			t.Errorf("extraArgs sets %s", k)
		}
	}
	if v.Affinity == nil || v.Affinity.PodAntiAffinity == nil || len(v.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("affinity %+v, want one required pod anti-affinity term", v.Affinity)
	}
	term := v.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	anti, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	if term.TopologyKey != corev1.LabelHostname || !anti.Matches(labels.Set(v.PodLabels)) || anti.Empty() {
		t.Fatalf("anti-affinity %+v does not keep two replicas (labels %v) off one node", term, v.PodLabels)
	}
	spec := &corev1.PodSpec{NodeSelector: v.NodeSelector, Tolerations: v.Tolerations, Affinity: v.Affinity}

	home := src.Cluster.Autoscaler.NodeGroup
	var placed []*corev1.Node
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range nodes {
			if !yield(n) {
				return
			}
		}
	}) {
		for _, node := range nodes[name] {
			// exampleNodes gives a group's VMs one name in every zone; real
			// VMs of a MIG have names of their own.
			node = node.DeepCopy()
			node.Labels[corev1.LabelHostname] = node.Name + "-" + node.Labels[corev1.LabelTopologyZone]
			ok, why := schedulable(spec, node)
			if name != home && ok {
				t.Errorf("an autoscaler replica could run on %s (group %s)", node.Name, name)
			}
			if name == home && !ok {
				t.Errorf("an autoscaler replica cannot run on its node %s: %s", node.Name, why)
			}
			// A replica goes where none runs on the node's hostname yet.
			if ok && len(placed) < v.ReplicaCount && !slices.ContainsFunc(placed, func(p *corev1.Node) bool {
				return p.Labels[term.TopologyKey] == node.Labels[term.TopologyKey]
			}) {
				placed = append(placed, node)
			}
		}
	}
	zones := map[string]bool{}
	for _, n := range placed {
		zones[n.Labels[corev1.LabelTopologyZone]] = true
	}
	if len(placed) != 2 || len(zones) != 2 || zones[""] {
		t.Errorf("the replicas land on %d node(s) in zones %v; want 2 nodes in 2 zones", len(placed), zones)
	}
	if len(v.TopologySpreadConstraints) != 1 || v.TopologySpreadConstraints[0].TopologyKey != corev1.LabelTopologyZone {
		t.Errorf("topologySpreadConstraints %+v, want one over %s", v.TopologySpreadConstraints, corev1.LabelTopologyZone)
	}
}

// TestFixedSizeGroupsAutoheal parses the Terraform of the example with
// hclparse: the autoscaler's group has a MIG in each of two zones, each
// autohealed by a health check of the kubelet's health endpoint, which a
// firewall rule opens to Google's health checkers only, on the VMs of that
// group only; the kubelet serves it on every address there. Autoscaled
// groups are left as they were. (TestTerraformMatchesProviderSchema
// checks every resource against the provider's schema.)
func TestFixedSizeGroupsAutoheal(t *testing.T) {
	src, files := testsrc.Example(t)
	ctx := &hcl.EvalContext{Functions: map[string]function.Function{"concat": stdlib.ConcatFunc}, Variables: map[string]cty.Value{
		"var":   cty.ObjectVal(map[string]cty.Value{"network_tags": cty.ListVal([]cty.Value{cty.StringVal("vpn")})}),
		"local": cty.ObjectVal(map[string]cty.Value{"project": cty.StringVal(src.Cluster.GCP.Project)}),
	}}
	for _, g := range src.CloudGroups() {
		t.Run(g.Name, func(t *testing.T) {
			f, diags := hclparse.NewParser().ParseHCL(files[layout.TerraformGroupPath(g.Name)], g.Name+".tf")
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			res := map[string][]*hclsyntax.Block{}
			for _, b := range f.Body.(*hclsyntax.Body).Blocks {
				if b.Type == "resource" {
					res[b.Labels[0]] = append(res[b.Labels[0]], b)
				}
			}
			tmplTags := attrValue(t, res[gce.TFInstanceTemplate][0].Body, "tags", ctx)
			migZones := map[string]bool{}
			var healing []*hclsyntax.Block
			for _, m := range res[gce.TFGroupManager] {
				migZones[attrValue(t, m.Body, "zone", ctx).AsString()] = true
				for _, b := range m.Body.Blocks {
					if b.Type == "auto_healing_policies" {
						healing = append(healing, b)
					}
				}
			}
			if !g.Autohealed() {
				if len(healing) != 0 || len(res[gce.TFHealthCheck]) != 0 || len(res[gce.TFFirewall]) != 0 || tmplTags.LengthInt() != 1 {
					t.Errorf("autoscaled group %s: %d autohealing policies, %d health checks, %d firewalls, tags %v",
						g.Name, len(healing), len(res[gce.TFHealthCheck]), len(res[gce.TFFirewall]), tmplTags.GoString())
				}
				return
			}
			if g.Name == src.Cluster.Autoscaler.NodeGroup && len(migZones) < 2 {
				t.Errorf("the autoscaler's group has MIGs in zones %v, want two or more", migZones)
			}
			if len(healing) != len(res[gce.TFGroupManager]) || len(res[gce.TFHealthCheck]) != 1 || len(res[gce.TFFirewall]) != 1 {
				t.Fatalf("%d MIGs, %d autohealing policies, %d health checks, %d firewalls",
					len(res[gce.TFGroupManager]), len(healing), len(res[gce.TFHealthCheck]), len(res[gce.TFFirewall]))
			}
			hc := res[gce.TFHealthCheck][0]
			for _, p := range healing {
				ref := p.Body.Attributes["health_check"].Expr.(*hclsyntax.ScopeTraversalExpr).Traversal
				if got := ref.RootName() + "." + ref[1].(hcl.TraverseAttr).Name + "." + ref[2].(hcl.TraverseAttr).Name; got != gce.TFHealthCheck+"."+hc.Labels[1]+".id" {
					t.Errorf("autohealing with %s, want the group's health check %s", got, hc.Labels[1])
				}
				mnpt := src.Cluster.MaxNodeProvisionTime(g)
				if got, _ := attrValue(t, p.Body, "initial_delay_sec", ctx).AsBigFloat().Int64(); got != int64(mnpt.Seconds()) {
					t.Errorf("initial_delay_sec %d, want the group's maxNodeProvisionTime %v", got, mnpt)
				}
			}
			var http *hclsyntax.Block
			for _, b := range hc.Body.Blocks {
				if b.Type == "http_health_check" {
					http = b
				}
			}
			if http == nil {
				t.Fatal("the health check has no http_health_check")
			}
			port, _ := attrValue(t, http.Body, "port", ctx).AsBigFloat().Int64()
			if port != model.KubeletHealthzPort || attrValue(t, http.Body, "request_path", ctx).AsString() != "/healthz" {
				t.Errorf("health check of port %d path %s, want the kubelet's 10248 /healthz", port, attrValue(t, http.Body, "request_path", ctx).GoString())
			}

			fw := res[gce.TFFirewall][0].Body
			if got := strList(attrValue(t, fw, "source_ranges", ctx)); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"130.211.0.0/22", "35.191.0.0/16"}) {
				t.Errorf("firewall sources %v, want Google's health-check ranges only", got)
			}
			if attrValue(t, fw, "direction", ctx).AsString() != "INGRESS" || len(fw.Blocks) < 1 {
				t.Fatal("firewall is not an ingress allow rule")
			}
			var allows []string
			for _, b := range fw.Blocks {
				if b.Type == "allow" {
					allows = append(allows, attrValue(t, b.Body, "protocol", ctx).AsString()+":"+strings.Join(strList(attrValue(t, b.Body, "ports", ctx)), ","))
				}
				if b.Type == "deny" {
					t.Error("firewall has a deny block")
				}
			}
			if !slices.Equal(allows, []string{"tcp:10248"}) {
				t.Errorf("firewall allows %v, want tcp:10248 only", allows)
			}
			targets := strList(attrValue(t, fw, "target_tags", ctx))
			if len(targets) != 1 || !slices.Contains(strList(tmplTags), targets[0]) || !slices.Contains(strList(tmplTags), "vpn") {
				t.Errorf("firewall targets %v, the group's VMs carry tags %v", targets, strList(tmplTags))
			}

			kc := scripttest.KubeletConfig(t, files[layout.StartupScriptPath(g.Name)])
			if kc.HealthzBindAddress != "0.0.0.0" || (kc.HealthzPort != nil && *kc.HealthzPort != model.KubeletHealthzPort) {
				t.Errorf("the kubelet serves its health endpoint on %q port %v, unreachable by the health check", kc.HealthzBindAddress, kc.HealthzPort)
			}
		})
	}
	// An autoscaled group's kubelet keeps its health endpoint on localhost.
	if kc := scripttest.KubeletConfig(t, files[layout.StartupScriptPath("cpu-burst")]); kc.HealthzBindAddress != "" {
		t.Errorf("cpu-burst's kubelet binds its health endpoint to %q", kc.HealthzBindAddress)
	}
}

func attrValue(t *testing.T, body *hclsyntax.Body, name string, ctx *hcl.EvalContext) cty.Value {
	t.Helper()
	a, ok := body.Attributes[name]
	if !ok {
		t.Fatalf("no attribute %s", name)
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", name, diags.Error())
	}
	return v
}

func strList(v cty.Value) []string {
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e.AsString())
	}
	return out
}
