package terraform_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/render/terraform"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// tfResource is one resource block of the module.
type tfResource struct {
	Type, Name, File string
	Body             *hclsyntax.Body
}

// tfModule is the rendered Terraform module, parsed with hclparse the way
// Terraform reads it.
type tfModule struct {
	resources []tfResource
	locals    map[string]cty.Value
	vars      map[string]cty.Value // defaults; unknown for required variables
	outputs   map[string]*hclsyntax.Body
	// dir is where the rendered tree was written; path.module is dir/terraform.
	dir string
}

// parseModule writes files to a temporary out/ directory (so file() can
// read what Terraform would read) and parses every .tf file.
func parseModule(t *testing.T, files layout.Files) *tfModule {
	t.Helper()
	m := &tfModule{locals: map[string]cty.Value{}, vars: map[string]cty.Value{}, outputs: map[string]*hclsyntax.Body{}, dir: t.TempDir()}
	for p, b := range files {
		dst := filepath.Join(m.dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parser := hclparse.NewParser()
	for _, p := range files.Paths() {
		if !strings.HasSuffix(p, ".tf") {
			continue
		}
		f, diags := parser.ParseHCL(files[p], p)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", p, diags.Error())
		}
		body := f.Body.(*hclsyntax.Body)
		if len(body.Attributes) > 0 {
			t.Errorf("%s: top-level attributes %v", p, slices.Sorted(maps.Keys(body.Attributes)))
		}
		for _, b := range body.Blocks {
			switch b.Type {
			case "resource":
				m.resources = append(m.resources, tfResource{Type: b.Labels[0], Name: b.Labels[1], File: p, Body: b.Body})
			case "locals":
				for name, a := range b.Body.Attributes {
					if len(a.Expr.Variables()) > 0 {
						// Depends on variables or resources: unknown
						// until plan, like Terraform's.
						m.locals[name] = cty.DynamicVal
						continue
					}
					v, diags := a.Expr.Value(nil)
					if diags.HasErrors() {
						t.Fatalf("%s: local.%s: %s", p, name, diags.Error())
					}
					m.locals[name] = v
				}
			case "variable":
				if d, ok := b.Body.Attributes["default"]; ok {
					v, diags := d.Expr.Value(nil)
					if diags.HasErrors() {
						t.Fatalf("%s: var.%s default: %s", p, b.Labels[0], diags.Error())
					}
					m.vars[b.Labels[0]] = v
				} else {
					m.vars[b.Labels[0]] = cty.UnknownVal(cty.DynamicPseudoType)
				}
			case "output":
				m.outputs[b.Labels[0]] = b.Body
			case "terraform":
			default:
				t.Errorf("%s: unexpected block %s", p, b.Type)
			}
		}
	}
	return m
}

// fileFunc is Terraform's file(): the contents of a file, which must be
// valid UTF-8.
var fileFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		b, err := os.ReadFile(args[0].AsString())
		if err != nil {
			return cty.NilVal, err
		}
		return cty.StringVal(string(b)), nil
	},
})

func (m *tfModule) ctx() *hcl.EvalContext {
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"local": cty.ObjectVal(m.locals),
			"var":   cty.ObjectVal(m.vars),
			"path":  cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(filepath.Join(m.dir, "terraform"))}),
		},
		Functions: map[string]function.Function{"file": fileFunc, "coalesce": stdlib.CoalesceFunc},
	}
}

// eval evaluates attribute name of body.
func (m *tfModule) eval(t *testing.T, r tfResource, body *hclsyntax.Body, name string) cty.Value {
	t.Helper()
	a, ok := body.Attributes[name]
	if !ok {
		t.Fatalf("%s.%s: no attribute %s", r.Type, r.Name, name)
	}
	v, diags := a.Expr.Value(m.ctx())
	if diags.HasErrors() {
		t.Fatalf("%s.%s.%s: %s", r.Type, r.Name, name, diags.Error())
	}
	return v
}

func (m *tfModule) str(t *testing.T, r tfResource, body *hclsyntax.Body, name string) string {
	t.Helper()
	v := m.eval(t, r, body, name)
	if v.Type() != cty.String || !v.IsKnown() || v.IsNull() {
		t.Fatalf("%s.%s.%s = %#v, want a known string", r.Type, r.Name, name, v)
	}
	return v.AsString()
}

func (m *tfModule) int(t *testing.T, r tfResource, body *hclsyntax.Body, name string) int {
	t.Helper()
	v := m.eval(t, r, body, name)
	if v.Type() != cty.Number {
		t.Fatalf("%s.%s.%s = %#v, want a number", r.Type, r.Name, name, v)
	}
	i, acc := v.AsBigFloat().Int64()
	if acc != 0 {
		t.Fatalf("%s.%s.%s = %v, not an integer", r.Type, r.Name, name, v)
	}
	return int(i)
}

func blocks(body *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range body.Blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

func (m *tfModule) byType(typ string) []tfResource {
	var out []tfResource
	for _, r := range m.resources {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// ignoresTargetSize reports whether a resource has
// lifecycle { ignore_changes = [target_size] }.
func ignoresTargetSize(t *testing.T, r tfResource) bool {
	t.Helper()
	for _, lc := range blocks(r.Body, "lifecycle") {
		a, ok := lc.Body.Attributes["ignore_changes"]
		if !ok {
			continue
		}
		exprs, diags := hcl.ExprList(a.Expr)
		if diags.HasErrors() {
			t.Fatalf("%s.%s: ignore_changes: %s", r.Type, r.Name, diags.Error())
		}
		for _, e := range exprs {
			tr, diags := hcl.AbsTraversalForExpr(e)
			if !diags.HasErrors() && len(tr) == 1 && tr.RootName() == "target_size" {
				return true
			}
		}
	}
	return false
}

// migURLs returns the instance-group URL of every MIG the module creates,
// split by whether the autoscaler owns its size (the kind of the source's
// group whose base instance name the MIG declares), built from the
// project, zone and name the resources declare.
func (m *tfModule) migURLs(t *testing.T, src *model.Source) (autoscaled, static []string) {
	t.Helper()
	for _, r := range m.byType(gce.TFGroupManager) {
		url := fmt.Sprintf("https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instanceGroups/%s",
			m.str(t, r, r.Body, "project"), m.str(t, r, r.Body, "zone"), m.str(t, r, r.Body, "name"))
		base := m.str(t, r, r.Body, "base_instance_name")
		var g *model.NodeGroup
		for _, cg := range src.CloudGroups() {
			if src.Cluster.BaseInstanceName(cg) == base {
				g = cg
			}
		}
		if g == nil {
			t.Fatalf("MIG %s: base_instance_name %s is no group's", r.Name, base)
		}
		if g.Autoscaled() {
			autoscaled = append(autoscaled, url)
		} else {
			static = append(static, url)
		}
	}
	slices.Sort(autoscaled)
	slices.Sort(static)
	return autoscaled, static
}

// flagsURLs reads the --nodes flags as the autoscaler does
// (SplitN(value, ":", 3): min, max, URL).
func flagsURLs(t *testing.T, files layout.Files) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(string(files[layout.AutoscalerFlagsPath]), "\n") {
		v, ok := strings.CutPrefix(line, "--nodes=")
		if !ok {
			continue
		}
		parts := strings.SplitN(v, ":", 3)
		if len(parts) != 3 {
			t.Fatalf("malformed %q", line)
		}
		out = append(out, parts[2])
	}
	slices.Sort(out)
	return out
}

func valuesURLs(t *testing.T, files layout.Files) []string {
	t.Helper()
	var v struct {
		AutoscalingGroups []struct {
			Name    string `json:"name"`
			MinSize int    `json:"minSize"`
			MaxSize int    `json:"maxSize"`
		} `json:"autoscalingGroups"`
	}
	if err := yaml.Unmarshal(files[layout.AutoscalerValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range v.AutoscalingGroups {
		out = append(out, g.Name)
	}
	slices.Sort(out)
	return out
}

func TestTerraformParsesAndIsCanonical(t *testing.T) {
	src, files := testsrc.Example(t)
	var tf []string
	for _, p := range files.Paths() {
		if strings.HasPrefix(p, layout.TerraformDir+"/") {
			tf = append(tf, p)
		}
	}
	want := []string{layout.TerraformMainPath, layout.TerraformOutputsPath, layout.TerraformVariablesPath, layout.TerraformVersionsPath,
		layout.TerraformIAMPath, layout.TerraformJoinSecretPath}
	for _, g := range src.Groups() {
		if g.Cloud() {
			want = append(want, layout.TerraformGroupPath(g.Name))
		}
	}
	slices.Sort(want)
	if !slices.Equal(tf, want) {
		t.Fatalf("terraform files %v, want %v", tf, want)
	}
	parser := hclparse.NewParser()
	for _, p := range tf {
		if _, diags := parser.ParseHCL(files[p], p); len(diags) > 0 {
			t.Errorf("%s: %s", p, diags.Error())
		}
		if got := hclwrite.Format(files[p]); !bytes.Equal(got, files[p]) {
			t.Errorf("%s is not canonical; hclwrite.Format gives:\n%s", p, got)
		}
		if !bytes.HasPrefix(files[p], []byte("# Code generated by nodegen from ")) || !layout.IsGenerated(files[p]) {
			t.Errorf("%s lacks the generated-file header", p)
		}
	}
	again, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tf {
		if !bytes.Equal(again[p], files[p]) {
			t.Errorf("%s differs between two renders", p)
		}
	}
}

// TestTerraformMIGURLsAreTheAutoscalers is the promise for Terraform: the
// MIGs the module creates are exactly the ones the autoscaler's flags and
// Helm values name, and the static ones are in neither.
func TestTerraformMIGURLsAreTheAutoscalers(t *testing.T) {
	src, files := testsrc.Example(t)
	m := parseModule(t, files)
	autoscaled, static := m.migURLs(t, src)
	if len(autoscaled) == 0 || len(static) == 0 {
		t.Fatalf("the example should have autoscaled and static MIGs: %v / %v", autoscaled, static)
	}
	if got := flagsURLs(t, files); !slices.Equal(got, autoscaled) {
		t.Errorf("flags.txt --nodes URLs\n%v\nTerraform's autoscaled MIGs\n%v", got, autoscaled)
	}
	if got := valuesURLs(t, files); !slices.Equal(got, autoscaled) {
		t.Errorf("values.yaml autoscalingGroups\n%v\nTerraform's autoscaled MIGs\n%v", got, autoscaled)
	}
	for _, u := range static {
		if bytes.Contains(files[layout.AutoscalerFlagsPath], []byte(u)) || bytes.Contains(files[layout.AutoscalerValuesPath], []byte(u)) {
			t.Errorf("static MIG %s is in the autoscaler's config", u)
		}
	}

	// Break one side on purpose: a MIG renamed in the HCL no longer matches.
	broken := maps.Clone(files)
	p := layout.TerraformGroupPath("gpu-t4")
	broken[p] = bytes.Replace(files[p], []byte(`"hybrid-ai-gpu-t4-us-central1-b"`), []byte(`"hybrid-ai-gpu-t4-us-central1-b-x"`), 1)
	if bytes.Equal(broken[p], files[p]) {
		t.Fatal("the example's gpu-t4 MIG in us-central1-b was not found")
	}
	if got, _ := parseModule(t, broken).migURLs(t, src); slices.Equal(got, flagsURLs(t, files)) {
		t.Error("a renamed MIG still matches the autoscaler's flags")
	}
}

// TestTerraformOutputsNameEveryMIG checks that outputs.tf returns the
// instance_group attribute of every MIG, keyed by the MIG's name.
func TestTerraformOutputsNameEveryMIG(t *testing.T) {
	_, files := testsrc.Example(t)
	m := parseModule(t, files)
	out, ok := m.outputs["instance_groups"]
	if !ok {
		t.Fatal("no output instance_groups")
	}
	obj, ok := out.Attributes["value"].Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		t.Fatal("instance_groups is not an object")
	}
	got := map[string]string{}
	for _, item := range obj.Items {
		k, diags := item.KeyExpr.Value(nil)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		tr, diags := hcl.AbsTraversalForExpr(item.ValueExpr)
		if diags.HasErrors() || len(tr) != 3 {
			t.Fatalf("output %s is not a resource attribute", k.AsString())
		}
		got[k.AsString()] = tr.RootName() + "." + tr[1].(hcl.TraverseAttr).Name + "." + tr[2].(hcl.TraverseAttr).Name
	}
	want := map[string]string{}
	for _, r := range m.byType(gce.TFGroupManager) {
		want[m.str(t, r, r.Body, "name")] = r.Type + "." + r.Name + ".instance_group"
	}
	if !maps.Equal(got, want) {
		t.Errorf("instance_groups output %v, want %v", got, want)
	}
}

// TestTerraformShipsTheCheckedFiles evaluates each instance template's
// metadata as Terraform would (file() relative to path.module) and checks
// that it is byte for byte the kube-env and startup script nodegen
// rendered and verified.
func TestTerraformShipsTheCheckedFiles(t *testing.T) {
	src, files := testsrc.Example(t)
	m := parseModule(t, files)
	n := 0
	for _, r := range m.byType(gce.TFInstanceTemplate) {
		g := groupOfTemplate(t, src, m, r)
		meta := m.eval(t, r, r.Body, "metadata")
		if !meta.Type().IsObjectType() && !meta.Type().IsMapType() {
			t.Fatalf("%s metadata is %s", r.Name, meta.Type().FriendlyName())
		}
		got := map[string]string{}
		for k, v := range meta.AsValueMap() {
			got[k] = v.AsString()
		}
		want := map[string]string{
			"kube-env":       string(files[layout.KubeEnvPath(g.Name)]),
			"startup-script": string(files[layout.StartupScriptPath(g.Name)]),
		}
		if want["kube-env"] == "" || want["startup-script"] == "" {
			t.Fatalf("group %s has no kube-env or startup script", g.Name)
		}
		if src.Cluster.BindsKubeletKey() {
			// The join script writes the kubelet key's hash as a guest attribute.
			want[gce.GuestAttributesKey] = "TRUE"
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: metadata keys %v do not carry the generated files byte for byte", r.Name, slices.Sorted(maps.Keys(got)))
		}
		n++
	}
	if n == 0 {
		t.Fatal("no instance templates")
	}

	// A file() path that points nowhere fails the evaluation.
	broken := maps.Clone(files)
	p := layout.TerraformGroupPath("gpu-t4")
	broken[p] = bytes.Replace(files[p], []byte("/../gce/gpu-t4/kube-env"), []byte("/../gce/gpu-t4/kube-env.missing"), 1)
	bm := parseModule(t, broken)
	for _, r := range bm.byType(gce.TFInstanceTemplate) {
		if r.Name != terraform.TFName("gpu-t4") {
			continue
		}
		if _, diags := r.Body.Attributes["metadata"].Expr.Value(bm.ctx()); !diags.HasErrors() {
			t.Error("metadata with a missing file evaluated without error")
		}
	}
}

// groupOfTemplate finds the node group an instance template belongs to by
// its name_prefix.
func groupOfTemplate(t *testing.T, src *model.Source, m *tfModule, r tfResource) *model.NodeGroup {
	t.Helper()
	prefix := m.str(t, r, r.Body, "name_prefix")
	for _, g := range src.Groups() {
		if g.Cloud() && src.Cluster.TemplatePrefix(g) == prefix {
			return g
		}
	}
	t.Fatalf("instance template %s: no group with name_prefix %q", r.Name, prefix)
	return nil
}

var (
	gceLabelKeyRE   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	gceLabelValueRE = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

// TestTerraformMatchesSource reads back every resource and compares it
// with the source: one template per cloud group, one MIG per zone, the
// GPU and scheduling settings, sizes and names, and nothing for onprem
// groups.
func TestTerraformMatchesSource(t *testing.T) {
	src, files := testsrc.Example(t)
	m := parseModule(t, files)
	c := &src.Cluster
	templates := map[string]tfResource{} // group -> template
	for _, r := range m.byType(gce.TFInstanceTemplate) {
		g := groupOfTemplate(t, src, m, r)
		templates[g.Name] = r
		if got := m.str(t, r, r.Body, "project"); got != c.GCP.Project {
			t.Errorf("%s project %q", r.Name, got)
		}
		if got := m.str(t, r, r.Body, "machine_type"); got != g.MachineType {
			t.Errorf("%s machine_type %q, want %q", r.Name, got, g.MachineType)
		}
		disks := blocks(r.Body, "disk")
		if len(disks) != 1 {
			t.Fatalf("%s has %d disks", r.Name, len(disks))
		}
		d := disks[0].Body
		if m.str(t, r, d, "source_image") != g.Image || m.int(t, r, d, "disk_size_gb") != g.BootDiskSizeGb ||
			m.str(t, r, d, "disk_type") != g.BootDiskType || !m.eval(t, r, d, "boot").True() || !m.eval(t, r, d, "auto_delete").True() {
			t.Errorf("%s boot disk does not match the source", r.Name)
		}
		acc := blocks(r.Body, "guest_accelerator")
		sched := blocks(r.Body, "scheduling")
		if g.GPU != nil {
			if len(acc) != 1 || m.str(t, r, acc[0].Body, "type") != g.GPU.Type || m.int(t, r, acc[0].Body, "count") != g.GPU.Count {
				t.Errorf("%s guest_accelerator does not match gpu %+v", r.Name, *g.GPU)
			}
			if len(sched) != 1 || m.str(t, r, sched[0].Body, "on_host_maintenance") != "TERMINATE" {
				t.Errorf("%s: a GPU template must set scheduling.on_host_maintenance = TERMINATE", r.Name)
			}
		} else if len(acc) != 0 || len(sched) != 0 {
			t.Errorf("%s: guest_accelerator or scheduling without GPUs", r.Name)
		}
		labels := m.eval(t, r, r.Body, "labels").AsValueMap()
		if labels[gce.LabelNodeGroup].AsString() != g.Name || labels[gce.LabelCluster].AsString() != c.Name {
			t.Errorf("%s labels %v lack the cluster and group", r.Name, labels)
		}
		for k, v := range labels {
			if !gceLabelKeyRE.MatchString(k) || !gceLabelValueRE.MatchString(v.AsString()) {
				t.Errorf("%s: %s=%s is not a valid GCE label", r.Name, k, v.AsString())
			}
		}
		if len(blocks(r.Body, "lifecycle")) != 1 || !m.eval(t, r, blocks(r.Body, "lifecycle")[0].Body, "create_before_destroy").True() {
			t.Errorf("%s: a template with name_prefix needs create_before_destroy", r.Name)
		}
	}

	migs := map[string]bool{}
	for _, r := range m.byType(gce.TFGroupManager) {
		migs[m.str(t, r, r.Body, "name")] = true
	}
	var wantMIGs []string
	for _, g := range src.Groups() {
		if !g.Cloud() {
			if _, ok := templates[g.Name]; ok {
				t.Errorf("onprem group %s has an instance template", g.Name)
			}
			for p, b := range files {
				if strings.HasPrefix(p, layout.TerraformDir+"/") && bytes.Contains(b, []byte(g.Name)) {
					t.Errorf("%s mentions onprem group %s", p, g.Name)
				}
			}
			continue
		}
		tmpl, ok := templates[g.Name]
		if !ok {
			t.Errorf("group %s has no instance template", g.Name)
			continue
		}
		for _, z := range g.Zones {
			wantMIGs = append(wantMIGs, c.MIGName(g, z))
			r := findMIG(t, m, c.MIGName(g, z))
			if r == nil {
				continue
			}
			if m.str(t, *r, r.Body, "zone") != z || m.str(t, *r, r.Body, "base_instance_name") != c.BaseInstanceName(g) {
				t.Errorf("MIG %s: zone or base_instance_name does not match", c.MIGName(g, z))
			}
			versions := blocks(r.Body, "version")
			if len(versions) != 1 {
				t.Fatalf("MIG %s has %d versions", r.Name, len(versions))
			}
			tr, diags := hcl.AbsTraversalForExpr(versions[0].Body.Attributes["instance_template"].Expr)
			if diags.HasErrors() || tr.RootName() != gce.TFInstanceTemplate || tr[1].(hcl.TraverseAttr).Name != tmpl.Name {
				t.Errorf("MIG %s does not use the template of group %s", r.Name, g.Name)
			}
			size := m.int(t, *r, r.Body, "target_size")
			switch {
			case g.Autoscaled() && (!ignoresTargetSize(t, *r) || size != g.Min):
				t.Errorf("autoscaled MIG %s: target_size %d (want the initial min %d) must be ignored after creation", r.Name, size, g.Min)
			case !g.Autoscaled() && (!ignoresTargetSize(t, *r) || size != g.Max):
				// A rollout's surge raises a static MIG's size for a
				// batch: an apply must not shrink it back then.
				t.Errorf("static MIG %s: target_size %d (want the initial max %d) must be ignored after creation", r.Name, size, g.Max)
			}
		}
	}
	slices.Sort(wantMIGs)
	if got := slices.Sorted(maps.Keys(migs)); !slices.Equal(got, wantMIGs) {
		t.Errorf("MIGs %v, want %v", got, wantMIGs)
	}
}

func findMIG(t *testing.T, m *tfModule, name string) *tfResource {
	t.Helper()
	for _, r := range m.byType(gce.TFGroupManager) {
		if m.str(t, r, r.Body, "name") == name {
			return &r
		}
	}
	t.Errorf("no MIG named %s", name)
	return nil
}

// TestTerraformSpotAndGPUScheduling covers the scheduling variants the
// example lacks: Spot VMs and accelerator-optimized machine types.
func TestTerraformSpotAndGPUScheduling(t *testing.T) {
	src, _ := testsrc.Example(t)
	cpu := src.NodeGroups["cpu-burst"]
	cpu.Spot = true
	gpu := src.NodeGroups["gpu-t4"]
	gpu.GPU = nil
	gpu.StartupTaint = nil
	gpu.MachineType = "g2-standard-8" // one built-in L4
	src.Resolve()
	files := layout.Files{}
	if err := terraform.Terraform(src, files); err != nil {
		t.Fatal(err)
	}
	m := parseModule(t, files)
	for _, r := range m.byType(gce.TFInstanceTemplate) {
		sched := blocks(r.Body, "scheduling")
		switch r.Name {
		case "cpu_burst":
			if len(sched) != 1 || m.str(t, r, sched[0].Body, "provisioning_model") != "SPOT" ||
				!m.eval(t, r, sched[0].Body, "preemptible").True() || m.eval(t, r, sched[0].Body, "automatic_restart").True() {
				t.Errorf("spot template: scheduling %v", sched)
			}
		case "gpu_t4":
			if len(sched) != 1 || m.str(t, r, sched[0].Body, "on_host_maintenance") != "TERMINATE" {
				t.Errorf("a g2 template must stop for host maintenance")
			}
		}
	}
}
