package terraform_test

import (
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/testing/tfschema"
)

// networkCUE is a cluster.gcp.network with the given egress and CNI ports.
func networkCUE(egress, cniPorts string) string {
	return `gcp: network: {
		name:       "vpc-a"
		subnetwork: "nodes-a"
		onpremRanges: ["10.20.0.0/16", "192.168.7.0/24"]
		cniPorts: [` + cniPorts + `]
		egress: "` + egress + `"
	}`
}

// privateGoogleAccess is a source with egress "private-google-access"
// that vet takes: under it, vet refuses an image from the internet that a
// node booted from an image family would pull, so the autoscaler's and
// the tools image are in Artifact Registry and the GPU group boots a
// fixed image (the others still boot a family, whose builder VM needs
// the firewall rule image_builder_ssh).
func privateGoogleAccess() testsrc.Spec {
	return testsrc.Spec{
		Cluster: networkCUE("private-google-access", "") + `
	autoscaler: patchedImage: repository: "us-central1-docker.pkg.dev/acme-hybrid-ai/infra/cluster-autoscaler"`,
		TaintRemoverImage: "us-central1-docker.pkg.dev/acme-hybrid-ai/tools/k8s:1.34.5",
		Image:             "projects/acme-hybrid-ai/global/images/k8s-node-gpu-1-35-v1",
	}
}

// parseTF parses one rendered .tf file with Terraform's parser.
func parseTF(t *testing.T, files layout.Files, p string) *hclsyntax.Body {
	t.Helper()
	src, ok := files[p]
	if !ok {
		t.Fatalf("%s is not rendered", p)
	}
	f, diags := hclparse.NewParser().ParseHCL(src, p)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", p, diags.Error())
	}
	return f.Body.(*hclsyntax.Body)
}

func blocksOf(b *hclsyntax.Body, typ string, labels ...string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, blk := range b.Blocks {
		if blk.Type == typ && slices.Equal(blk.Labels[:min(len(labels), len(blk.Labels))], labels) {
			out = append(out, blk)
		}
	}
	return out
}

// constValue evaluates a constant attribute.
func constValue(t *testing.T, b *hclsyntax.Body, name string) cty.Value {
	t.Helper()
	a, ok := b.Attributes[name]
	if !ok {
		t.Fatalf("attribute %s not set", name)
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", name, diags.Error())
	}
	return v
}

func stringList(v cty.Value) []string {
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e.AsString())
	}
	return out
}

// TestTerraformNetworkMatchesProviderSchema: network.tf and the root
// module, for each egress, hold to the provider's schema, the root's
// provider block to the provider's configuration schema.
func TestTerraformNetworkMatchesProviderSchema(t *testing.T) {
	for name, spec := range map[string]testsrc.Spec{
		"cloud nat, cni ports":        {Cluster: networkCUE("cloud-nat", `"udp/4789", "tcp/179", "tcp/30000-32767"`)},
		"private google access, none": privateGoogleAccess(),
	} {
		_, files := spec.MustRender(t)
		if _, ok := files[layout.TerraformNetworkPath]; !ok {
			t.Fatalf("%s: no %s", name, layout.TerraformNetworkPath)
		}
		for _, e := range checkProviderSchema(t, files) {
			t.Errorf("%s: %s", name, e)
		}
		if u := parseLBModule(t, files).unresolved(); len(u) > 0 {
			t.Errorf("%s: references to nothing in the module: %v", name, u)
		}
		root := parseTF(t, files, layout.TerraformRootMainPath)
		for _, p := range blocksOf(root, "provider", "google") {
			for _, e := range tfschema.CheckBlock("root provider", p.Body, providerSchema(t).Config, false) {
				t.Errorf("%s: %s", name, e)
			}
		}
	}
	_, files := testsrc.Spec{Cluster: networkCUE("cloud-nat", `"udp/4789"`)}.MustRender(t)
	for _, c := range []struct{ old, new string }{
		{"source_ip_ranges_to_nat", "source_ip_range_to_nat"},
		{"  nat_ip_allocate_option", "  nat_ips_allocate_option"},
		{"target_service_accounts", "target_service_account"},
	} {
		broken := maps.Clone(files)
		broken[layout.TerraformNetworkPath] = []byte(strings.Replace(string(files[layout.TerraformNetworkPath]), c.old, c.new, 1))
		if string(broken[layout.TerraformNetworkPath]) == string(files[layout.TerraformNetworkPath]) {
			t.Fatalf("%q not in network.tf", c.old)
		}
		if len(checkProviderSchema(t, broken)) == 0 {
			t.Errorf("replacing %q by %q in network.tf passes the schema check", c.old, c.new)
		}
	}
}

// TestTerraformNetworkRules: the firewall rules admit exactly the
// source's on-prem ranges to the kubelet, the CNI's ports and ICMP (for
// "fragmentation needed"), the CNI's ports and ICMP between the nodes,
// IP in IP as a whole protocol, IAP's TCP forwarding to SSH on the image
// builder VMs' tag only, and the Cloud NAT is there when the source
// chooses it; without cluster.gcp.network nothing of it is rendered.
func TestTerraformNetworkRules(t *testing.T) {
	_, files := testsrc.Spec{Cluster: networkCUE("cloud-nat", `"udp/4789", "tcp/179", "udp/8472"`)}.MustRender(t)
	nw := parseTF(t, files, layout.TerraformNetworkPath)
	allows := func(b *hclsyntax.Body) map[string][]string {
		out := map[string][]string{}
		for _, a := range blocksOf(b, "allow") {
			proto := constValue(t, a.Body, "protocol").AsString()
			if _, ok := a.Body.Attributes["ports"]; !ok {
				out[proto] = []string{"all"} // the whole protocol
				continue
			}
			out[proto] = append(out[proto], stringList(constValue(t, a.Body, "ports"))...)
		}
		return out
	}
	fw := blocksOf(nw, "resource", gce.TFFirewall)
	if len(fw) != 3 {
		t.Fatalf("%d firewall rules, want from_onprem, node_to_node and image_builder_ssh", len(fw))
	}
	for _, r := range fw {
		b := r.Body
		if r.Labels[1] == "image_builder_ssh" {
			// SSH from IAP's TCP forwarding to the builder VMs' tag only.
			if got := stringList(constValue(t, b, "source_ranges")); !slices.Equal(got, []string{"35.235.240.0/20"}) {
				t.Errorf("image_builder_ssh source_ranges %v", got)
			}
			if got := stringList(constValue(t, b, "target_tags")); !slices.Equal(got, []string{"hybrid-ai-builder"}) {
				t.Errorf("image_builder_ssh target_tags %v", got)
			}
			if _, ok := b.Attributes["target_service_accounts"]; ok {
				t.Error("image_builder_ssh targets the nodes' accounts")
			}
			if got, want := allows(b), map[string][]string{"tcp": {"22"}}; !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("image_builder_ssh allows %v, want %v", got, want)
			}
			continue
		}
		if got := string(b.Attributes["target_service_accounts"].SrcRange.SliceBytes(files[layout.TerraformNetworkPath])); !strings.Contains(got, "local.nodes_service_account_email") || !strings.Contains(got, "local.autoscaler_service_account_email") {
			t.Errorf("%s targets %s, not both node accounts", r.Labels[1], got)
		}
		switch r.Labels[1] {
		case "from_onprem":
			if got := stringList(constValue(t, b, "source_ranges")); !slices.Equal(got, []string{"10.20.0.0/16", "192.168.7.0/24"}) {
				t.Errorf("from_onprem source_ranges %v", got)
			}
			if got, want := allows(b), map[string][]string{"tcp": {"10250", "179"}, "udp": {"4789", "8472"}, "icmp": {"all"}}; !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("from_onprem allows %v, want %v", got, want)
			}
		case "node_to_node":
			if _, ok := b.Attributes["source_ranges"]; ok {
				t.Error("node_to_node has source_ranges")
			}
			if got, want := allows(b), map[string][]string{"tcp": {"179"}, "udp": {"4789", "8472"}, "icmp": {"all"}}; !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("node_to_node allows %v, want %v", got, want)
			}
		}
	}
	if len(blocksOf(nw, "resource", gce.TFRouterNAT)) != 1 || len(blocksOf(nw, "resource", gce.TFRouter)) != 1 {
		t.Error("cloud-nat: no router and NAT")
	}

	// IP in IP: protocol 4 as a whole, no ports.
	_, files = testsrc.Spec{Cluster: networkCUE("cloud-nat", `"ipip", "tcp/179"`)}.MustRender(t)
	if errs := checkProviderSchema(t, files); len(errs) > 0 {
		t.Errorf("ipip: %v", errs)
	}
	for _, r := range blocksOf(parseTF(t, files, layout.TerraformNetworkPath), "resource", gce.TFFirewall) {
		if r.Labels[1] == "node_to_node" {
			if got, want := allows(r.Body), map[string][]string{"ipip": {"all"}, "tcp": {"179"}, "icmp": {"all"}}; !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("ipip: node_to_node allows %v, want %v", got, want)
			}
		}
	}

	// The metrics ports: a rule of their own, from the on-prem ranges.
	_, files = testsrc.Spec{Cluster: strings.Replace(networkCUE("cloud-nat", `"udp/4789"`), "cniPorts:", `metricsPorts: ["tcp/9100", "tcp/9400"], cniPorts:`, 1)}.MustRender(t)
	nw = parseTF(t, files, layout.TerraformNetworkPath)
	var metrics *hclsyntax.Block
	for _, r := range blocksOf(nw, "resource", gce.TFFirewall) {
		if r.Labels[1] == "metrics_from_onprem" {
			metrics = r
		}
	}
	if metrics == nil {
		t.Fatal("metricsPorts: no firewall rule metrics_from_onprem")
	}
	if got := stringList(constValue(t, metrics.Body, "source_ranges")); !slices.Equal(got, []string{"10.20.0.0/16", "192.168.7.0/24"}) {
		t.Errorf("metrics_from_onprem source_ranges %v", got)
	}
	if got, want := allows(metrics.Body), map[string][]string{"tcp": {"9100", "9400"}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("metrics_from_onprem allows %v, want %v", got, want)
	}
	if got := string(metrics.Body.Attributes["target_service_accounts"].SrcRange.SliceBytes(files[layout.TerraformNetworkPath])); !strings.Contains(got, "local.nodes_service_account_email") {
		t.Errorf("metrics_from_onprem targets %s", got)
	}
	if problems := checkProviderSchema(t, files); len(problems) > 0 {
		t.Errorf("metricsPorts: %v", problems)
	}

	_, files = privateGoogleAccess().MustRender(t)
	nw = parseTF(t, files, layout.TerraformNetworkPath)
	if n := len(blocksOf(nw, "resource", gce.TFRouterNAT)) + len(blocksOf(nw, "resource", gce.TFRouter)); n != 0 {
		t.Errorf("private-google-access: %d router and NAT resources", n)
	}
	// Without CNI ports the nodes still admit ICMP from each other.
	if fw := blocksOf(nw, "resource", gce.TFFirewall); len(fw) != 3 || fw[1].Labels[1] != "node_to_node" {
		t.Errorf("without CNI ports: %d firewall rules, want from_onprem, node_to_node and image_builder_ssh", len(fw))
	} else if got, want := allows(fw[1].Body), map[string][]string{"icmp": {"all"}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("without CNI ports: node_to_node allows %v, want %v", got, want)
	}

	_, files = testsrc.Spec{}.MustRender(t)
	for _, p := range []string{layout.TerraformNetworkPath, layout.TerraformRootMainPath} {
		if _, ok := files[p]; ok {
			t.Errorf("%s rendered without cluster.gcp.network", p)
		}
	}
}

// TestTerraformNetworkVariableRequired: the health checks' firewall rule
// of an autohealed group names var.network, so the variable has no
// default and refuses null.
func TestTerraformNetworkVariableRequired(t *testing.T) {
	_, files := testsrc.Spec{}.MustRender(t)
	vars := parseTF(t, files, layout.TerraformVariablesPath)
	v := blocksOf(vars, "variable", "network")
	if len(v) != 1 {
		t.Fatal("no variable network")
	}
	if _, ok := v[0].Body.Attributes["default"]; ok {
		t.Error("variable network has a default: the autoscaler group's health-check firewall rule needs it")
	}
	if n := constValue(t, v[0].Body, "nullable"); !n.False() {
		t.Errorf("variable network: nullable = %#v, want false", n)
	}
}

// TestTerraformRootModule: the root module's module block points at the
// module, sets every variable the module requires and only variables it
// declares, with the source's network; its provider has the source's
// project and region; without cluster.gcp.terraformState no backend, the
// comment naming that field; its outputs exist.
func TestTerraformRootModule(t *testing.T) {
	_, files := testsrc.Spec{Cluster: networkCUE("cloud-nat", `"udp/4789"`) + `
		gcp: network: project: "host-project-1"`}.MustRender(t)
	root := parseTF(t, files, layout.TerraformRootMainPath)
	if bs := blocksOf(root, "terraform"); len(bs) != 1 || len(blocksOf(bs[0].Body, "backend")) != 0 {
		t.Error("the root's terraform block is not one, or sets a backend")
	} else if text := string(files[layout.TerraformRootMainPath]); !strings.Contains(text, `# State is local (terraform.tfstate here): set cluster.gcp.terraformState`) {
		t.Error("no comment naming cluster.gcp.terraformState")
	}
	p := blocksOf(root, "provider", "google")
	if len(p) != 1 {
		t.Fatal("no provider google")
	}
	if got := constValue(t, p[0].Body, "project").AsString(); got != "acme-hybrid-ai" {
		t.Errorf("provider project %q", got)
	}
	if got := constValue(t, p[0].Body, "region").AsString(); got != "us-central1" {
		t.Errorf("provider region %q", got)
	}
	mods := blocksOf(root, "module", "nodegroups")
	if len(mods) != 1 {
		t.Fatal("no module nodegroups")
	}
	m := mods[0].Body
	src := constValue(t, m, "source").AsString()
	if !strings.HasPrefix(src, "../") || path.Clean(path.Join(layout.TerraformRootDir, src)) != layout.TerraformDir {
		t.Errorf("module source %q is not the module %s as Terraform reads a local path", src, layout.TerraformDir)
	}
	vars := map[string]*hclsyntax.Body{}
	for _, v := range blocksOf(parseTF(t, files, layout.TerraformVariablesPath), "variable") {
		vars[v.Labels[0]] = v.Body
	}
	for name := range m.Attributes {
		if name != "source" && vars[name] == nil {
			t.Errorf("module block sets %s, which the module does not declare", name)
		}
	}
	for name, v := range vars {
		if _, def := v.Attributes["default"]; !def {
			if _, set := m.Attributes[name]; !set {
				t.Errorf("module block leaves the required variable %s unset", name)
			}
		}
	}
	for name, want := range map[string]string{"network": "vpc-a", "subnetwork": "nodes-a", "subnetwork_project": "host-project-1"} {
		if got := constValue(t, m, name).AsString(); got != want {
			t.Errorf("module %s = %q, want %q", name, got, want)
		}
	}
	outs := map[string]bool{}
	for _, o := range blocksOf(parseTF(t, files, layout.TerraformOutputsPath), "output") {
		outs[o.Labels[0]] = true
	}
	for _, o := range blocksOf(root, "output") {
		for _, tr := range o.Body.Attributes["value"].Expr.Variables() {
			if tr.RootName() != "module" || len(tr) != 3 {
				t.Errorf("output %s: %v", o.Labels[0], tr)
				continue
			}
			if name := tr[2].(hcl.TraverseAttr).Name; !outs[name] {
				t.Errorf("output %s reads module output %s, which the module lacks", o.Labels[0], name)
			}
		}
	}
}
