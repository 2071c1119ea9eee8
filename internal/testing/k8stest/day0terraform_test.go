package k8stest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/nodegen/nodegen/internal/testing/tfschema"
)

// The terraform stand-in of the day-0 script test (TestMain runs it when
// the test binary is called as terraform). It has no provider and no
// cloud: it reads the modules in the working directory as Terraform does
// (hclparse, local module sources), checks them as far as can be known
// without a plan, and records what an apply would create under
// STUB_STATE, where the gcloud stand-in keeps the APIs and images it
// made:
//
//   - init: every module's files parse and every module source is a local
//     folder with .tf files;
//   - apply (after init in the same folder): every resource, data source
//     and provider block against the hashicorp/google provider's schema
//     (tfschema); every module call sets each variable without a default
//     and no argument that is not a variable; the google provider block
//     has a constant project and region; each resource's API is enabled
//     in that project, and each image family an instance template boots
//     from has an image, as the provider's calls would fail otherwise;
//     then, once the person answers "yes" to the prompt, it records the
//     resources, the firewall rules, the MIGs (with the startup script
//     their template's metadata carries, read through file() as
//     Terraform does) and the secrets, in terraform/apply.json.

// tfApply is what the stand-in's apply records.
type tfApply struct {
	Dir, Project, Region string
	Resources            []string // addresses, module.<name>. prefixed
	Firewalls            []tfFirewall
	NATs                 []string
	MIGs                 []tfMIG
	Secrets              []string
	// Networks are the VPC networks and subnetworks the apply creates,
	// as "network/<name>" and "subnetwork/<name>".
	Networks []string
}

type tfFirewall struct {
	Address, Name string
	SourceRanges  []string
	TargetTags    []string
	// Allow are "<protocol>:<port>" pairs.
	Allow []string
}

type tfMIG struct {
	Name, Zone, BaseInstanceName string
	TargetSize                   int
	// StartupScript is the path of the startup script of its template.
	StartupScript string
}

// tfModule is a module as the stand-in reads it.
type tfModule struct {
	dir      string
	address  string            // "" for the root, "module.<name>." for a child
	files    map[string][]byte // by path relative to the root module
	bodies   []*hclsyntax.Body
	children map[string]*tfModule // by module call name
	calls    map[string]*hclsyntax.Block
}

// tfResourceAPIs maps a resource type's prefix to the Google API its
// calls go to.
var tfResourceAPIs = []struct{ prefix, api string }{
	{"google_compute_", "compute.googleapis.com"},
	{"google_service_account", "iam.googleapis.com"},
	{"google_project_iam_custom_role", "iam.googleapis.com"},
	{"google_project_iam_", "cloudresourcemanager.googleapis.com"},
	{"google_secret_manager_", "secretmanager.googleapis.com"},
}

var imageFamilyRE = regexp.MustCompile(`^projects/([^/]+)/global/images/family/([^/]+)$`)

func terraformStandIn(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	state := os.Getenv("STUB_STATE")
	dir, err := os.Getwd()
	if state == "" || err != nil {
		fmt.Fprintln(stderr, "terraform stand-in: no STUB_STATE or working directory")
		return 1
	}
	sum := sha256.Sum256([]byte(dir))
	initMark := filepath.Join(state, "terraform", "init-"+hex.EncodeToString(sum[:8]))
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "\nError: "+format+"\n", a...)
		return 1
	}
	var targets []string
	for _, a := range args[min(1, len(args)):] {
		if t, ok := strings.CutPrefix(a, "-target="); ok && args[0] == "apply" {
			targets = append(targets, t)
		}
	}
	if len(args) != 1+len(targets) || (args[0] != "init" && args[0] != "apply") {
		return fail("the stand-in runs terraform init and terraform apply [-target=ADDRESS...] only, not terraform %s", strings.Join(args, " "))
	}
	root, err := loadTFModule(dir, dir, "")
	if err != nil {
		return fail("%v", err)
	}
	if args[0] == "init" {
		if err := os.MkdirAll(filepath.Dir(initMark), 0o755); err != nil {
			return fail("%v", err)
		}
		if err := os.WriteFile(initMark, []byte(dir), 0o644); err != nil {
			return fail("%v", err)
		}
		fmt.Fprintln(stdout, "Terraform has been successfully initialized!")
		return 0
	}
	if _, err := os.Stat(initMark); err != nil {
		return fail("Module not installed: this module is not yet installed. Run \"terraform init\" to install all modules required by this configuration.")
	}
	a, problems := planTF(root, state, targets)
	if len(problems) > 0 {
		return fail("%s", strings.Join(problems, "\nError: "))
	}
	fmt.Fprintf(stdout, "Plan: %d to add, 0 to change, 0 to destroy.\n\nDo you want to perform these actions?\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", len(a.Resources))
	answer, _ := bufio.NewReader(stdin).ReadString('\n')
	if strings.TrimSpace(answer) != "yes" {
		return fail("Apply cancelled.")
	}
	for i, m := range a.MIGs {
		// The template's startup script, as the VMs get it.
		p := filepath.Join(state, "terraform", fmt.Sprintf("startup-script-%d.sh", i))
		if err := os.WriteFile(p, []byte(m.StartupScript), 0o755); err != nil {
			return fail("%v", err)
		}
		a.MIGs[i].StartupScript = p
	}
	for _, s := range a.Secrets {
		p := filepath.Join(state, "secrets", a.Project, s)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fail("%v", err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return fail("%v", err)
		}
	}
	for _, n := range a.Networks {
		p := filepath.Join(state, "networks", a.Project, n)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fail("%v", err)
		}
	}
	// The firewall rules and NATs, for the gcloud stand-in: a rule's
	// ranges, target tags and allowed ports one per line.
	for _, fw := range a.Firewalls {
		var b strings.Builder
		for _, r := range fw.SourceRanges {
			b.WriteString("range " + r + "\n")
		}
		for _, tag := range fw.TargetTags {
			b.WriteString("tag " + tag + "\n")
		}
		for _, al := range fw.Allow {
			b.WriteString("allow " + al + "\n")
		}
		if err := writeState(filepath.Join(state, "firewalls", a.Project, fw.Name), b.String()); err != nil {
			return fail("%v", err)
		}
	}
	for _, n := range a.NATs {
		if err := writeState(filepath.Join(state, "nats", a.Project, n), ""); err != nil {
			return fail("%v", err)
		}
	}
	b, _ := json.MarshalIndent(a, "", "  ")
	if err := os.WriteFile(filepath.Join(state, "terraform", "apply.json"), b, 0o644); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stdout, "\nApply complete! Resources: %d added, 0 changed, 0 destroyed.\n", len(a.Resources))
	return 0
}

func writeState(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

// loadTFModule parses the module in dir and, recursively, the local
// modules it calls; paths are relative to root.
func loadTFModule(root, dir, address string) (*tfModule, error) {
	m := &tfModule{dir: dir, address: address, files: map[string][]byte{}, children: map[string]*tfModule{}, calls: map[string]*hclsyntax.Block{}}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
	if len(paths) == 0 {
		return nil, fmt.Errorf("no .tf files in %s", dir)
	}
	parser := hclparse.NewParser()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, p)
		f, diags := parser.ParseHCL(b, rel)
		if diags.HasErrors() {
			return nil, diags
		}
		m.files[rel] = b
		m.bodies = append(m.bodies, f.Body.(*hclsyntax.Body))
	}
	for _, body := range m.bodies {
		for _, b := range body.Blocks {
			if b.Type != "module" {
				continue
			}
			src, ok := constString(b.Body, "source")
			if !ok || !(strings.HasPrefix(src, "./") || strings.HasPrefix(src, "../")) {
				return nil, fmt.Errorf("module %q: source %q is no local folder (the stand-in has no registry)", b.Labels[0], src)
			}
			child, err := loadTFModule(root, filepath.Join(dir, src), address+"module."+b.Labels[0]+".")
			if err != nil {
				return nil, fmt.Errorf("module %q: %w", b.Labels[0], err)
			}
			m.children[b.Labels[0]] = child
			m.calls[b.Labels[0]] = b
		}
	}
	return m, nil
}

// blocks returns the module's blocks of type typ.
func (m *tfModule) blocks(typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, body := range m.bodies {
		for _, b := range body.Blocks {
			if b.Type == typ {
				out = append(out, b)
			}
		}
	}
	return out
}

// constString returns attribute name of body if it is a constant string.
func constString(body *hclsyntax.Body, name string) (string, bool) {
	a, ok := body.Attributes[name]
	if !ok || len(a.Expr.Variables()) > 0 {
		return "", false
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// planTF checks the root module and its children and returns what an
// apply would create: of every resource, or with targets (-target
// addresses) of those and what they refer to, directly or through
// variables and locals, as Terraform's targeted apply does; the
// configuration is checked whole either way.
func planTF(root *tfModule, state string, targets []string) (*tfApply, []string) {
	a := &tfApply{Dir: root.dir}
	var problems []string
	schema, err := tfschema.Load()
	if err != nil {
		return nil, []string{err.Error()}
	}
	for _, p := range root.blocks("provider") {
		if p.Labels[0] != "google" {
			continue
		}
		a.Project, _ = constString(p.Body, "project")
		a.Region, _ = constString(p.Body, "region")
	}
	if a.Project == "" || a.Region == "" {
		problems = append(problems, `the root module has no provider "google" block with a constant project and region`)
	}
	var include map[string]bool
	if len(targets) > 0 {
		var err error
		if include, err = tfTargeted(root, targets); err != nil {
			return nil, []string{err.Error()}
		}
	}
	var walk func(m *tfModule, vars map[string]cty.Value)
	walk = func(m *tfModule, vars map[string]cty.Value) {
		errs, err := schema.Check(m.files)
		if err != nil {
			problems = append(problems, err.Error())
			return
		}
		problems = append(problems, errs...)
		ctx := m.evalContext(vars)
		for _, b := range m.blocks("resource") {
			typ, name := b.Labels[0], b.Labels[1]
			if include != nil && !include[m.address+typ+"."+name] {
				continue
			}
			a.Resources = append(a.Resources, m.address+typ+"."+name)
			problems = append(problems, m.applyResource(a, state, ctx, typ, name, b.Body)...)
		}
		for _, name := range slices.Sorted(maps.Keys(m.children)) {
			child, call := m.children[name], m.calls[name]
			args, errs := moduleArguments(child, call, ctx)
			problems = append(problems, errs...)
			problems = append(problems, a.networkArguments(state, call)...)
			walk(child, args)
		}
	}
	walk(root, map[string]cty.Value{})
	return a, problems
}

// tfTargeted returns the addresses a targeted apply of targets applies:
// each target, which must be a resource of the configuration, and every
// resource it refers to, through the module's variables (the calling
// module's arguments) and locals too.
func tfTargeted(root *tfModule, targets []string) (map[string]bool, error) {
	type resource struct {
		m    *tfModule
		body *hclsyntax.Body
	}
	resources := map[string]resource{}
	parents := map[*tfModule]*tfModule{}
	callOf := map[*tfModule]*hclsyntax.Block{}
	var index func(m *tfModule)
	index = func(m *tfModule) {
		for _, b := range m.blocks("resource") {
			resources[m.address+b.Labels[0]+"."+b.Labels[1]] = resource{m, b.Body}
		}
		for name, child := range m.children {
			parents[child], callOf[child] = m, m.calls[name]
			index(child)
		}
	}
	index(root)
	include := map[string]bool{}
	var refer func(m *tfModule, trs []hcl.Traversal)
	var add func(addr string)
	add = func(addr string) {
		if include[addr] {
			return
		}
		include[addr] = true
		r := resources[addr]
		refer(r.m, bodyTraversals(r.body))
	}
	refer = func(m *tfModule, trs []hcl.Traversal) {
		for _, tr := range trs {
			if len(tr) < 2 {
				continue
			}
			attr, ok := tr[1].(hcl.TraverseAttr)
			if !ok {
				continue
			}
			switch root := tr.RootName(); root {
			case "var":
				if call := callOf[m]; call != nil {
					if e, ok := call.Body.Attributes[attr.Name]; ok {
						refer(parents[m], e.Expr.Variables())
					}
				}
			case "local":
				for _, l := range m.blocks("locals") {
					if e, ok := l.Body.Attributes[attr.Name]; ok {
						refer(m, e.Expr.Variables())
					}
				}
			default:
				if _, ok := resources[m.address+root+"."+attr.Name]; ok {
					add(m.address + root + "." + attr.Name)
				}
			}
		}
	}
	for _, t := range targets {
		if _, ok := resources[t]; !ok {
			return nil, fmt.Errorf("Invalid target address: no resource %s in the configuration", t)
		}
		add(t)
	}
	return include, nil
}

// bodyTraversals returns the references of every expression of body and
// of its nested blocks.
func bodyTraversals(body *hclsyntax.Body) []hcl.Traversal {
	var out []hcl.Traversal
	for _, a := range body.Attributes {
		out = append(out, a.Expr.Variables()...)
	}
	for _, b := range body.Blocks {
		out = append(out, bodyTraversals(b.Body)...)
	}
	return out
}

// moduleArguments checks a module call against the child's variables as
// Terraform does and returns the variables' values (a default where the
// call sets none; unknown where the value is not a constant).
func moduleArguments(child *tfModule, call *hclsyntax.Block, ctx *hcl.EvalContext) (map[string]cty.Value, []string) {
	var problems []string
	vars := map[string]cty.Value{}
	declared := map[string]bool{}
	for _, v := range child.blocks("variable") {
		name := v.Labels[0]
		declared[name] = true
		d, hasDefault := v.Body.Attributes["default"]
		arg, set := call.Body.Attributes[name]
		switch {
		case set:
			val, diags := arg.Expr.Value(ctx)
			if diags.HasErrors() {
				val = cty.DynamicVal
			}
			vars[name] = val
		case hasDefault:
			val, diags := d.Expr.Value(nil)
			if diags.HasErrors() {
				val = cty.DynamicVal
			}
			vars[name] = val
		default:
			problems = append(problems, fmt.Sprintf("Missing required argument: module %q: the argument %q is required, but no definition was found.", call.Labels[0], name))
		}
	}
	for name := range call.Body.Attributes {
		if !declared[name] && !slices.Contains([]string{"source", "version", "providers", "count", "for_each", "depends_on"}, name) {
			problems = append(problems, fmt.Sprintf("Unsupported argument: module %q: an argument named %q is not expected here.", call.Labels[0], name))
		}
	}
	return vars, problems
}

// evalContext is what the module's expressions may use: constant locals,
// its variables, path.module and the functions the rendered files call.
func (m *tfModule) evalContext(vars map[string]cty.Value) *hcl.EvalContext {
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":  cty.ObjectVal(vars),
			"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(m.dir)}),
		},
		Functions: map[string]function.Function{
			"coalesce": stdlib.CoalesceFunc,
			"concat":   stdlib.ConcatFunc,
			"file": function.New(&function.Spec{
				Params: []function.Parameter{{Name: "path", Type: cty.String}},
				Type:   function.StaticReturnType(cty.String),
				Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
					b, err := os.ReadFile(args[0].AsString())
					if err != nil {
						return cty.NilVal, err
					}
					return cty.StringVal(string(b)), nil
				},
			}),
		},
	}
	locals := map[string]cty.Value{}
	for _, l := range m.blocks("locals") {
		for name, attr := range l.Body.Attributes {
			v, diags := attr.Expr.Value(ctx)
			if diags.HasErrors() {
				v = cty.DynamicVal
			}
			locals[name] = v
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(locals)
	// The module's resources, as references to them read: their constant
	// attributes, the id unknown until the apply.
	byType := map[string]map[string]cty.Value{}
	for _, b := range m.blocks("resource") {
		attrs := map[string]cty.Value{"id": cty.UnknownVal(cty.String)}
		for name := range b.Body.Attributes {
			if v, ok := constString(b.Body, name); ok {
				attrs[name] = cty.StringVal(v)
			}
		}
		if byType[b.Labels[0]] == nil {
			byType[b.Labels[0]] = map[string]cty.Value{}
		}
		byType[b.Labels[0]][b.Labels[1]] = cty.ObjectVal(attrs)
	}
	for typ, rs := range byType {
		if _, taken := ctx.Variables[typ]; !taken {
			ctx.Variables[typ] = cty.ObjectVal(rs)
		}
	}
	return ctx
}

// networkArguments checks a module call's network and subnetwork as the
// provider's calls would meet them: one this apply creates must be given
// by reference to its resource (so that Terraform creates it before the
// module's firewall rules, router and VMs that name it; as a constant,
// they may come first and fail), and any other must exist already in the
// project (made by an earlier apply).
func (a *tfApply) networkArguments(state string, call *hclsyntax.Block) []string {
	var problems []string
	for _, arg := range []struct{ attr, typ, kind string }{
		{"network", "google_compute_network", "network"},
		{"subnetwork", "google_compute_subnetwork", "subnetwork"},
	} {
		e, ok := call.Body.Attributes[arg.attr]
		if !ok {
			continue
		}
		byRef := false
		for _, tr := range e.Expr.Variables() {
			byRef = byRef || tr.RootName() == arg.typ
		}
		name, isConst := constString(call.Body, arg.attr)
		created := isConst && slices.Contains(a.Networks, arg.kind+"/"+name)
		switch {
		case byRef:
		case created:
			problems = append(problems, fmt.Sprintf("module %q: %s %q is created by this apply but given as a constant, not by reference: Terraform may create what names it first (Error 404: The resource 'projects/%s/.../%s' was not found)", call.Labels[0], arg.kind, name, a.Project, name))
		case isConst:
			if _, err := os.Stat(filepath.Join(state, "networks", a.Project, arg.kind, name)); err != nil {
				problems = append(problems, fmt.Sprintf("module %q: Error 404: The resource 'projects/%s/.../%ss/%s' was not found (the %s does not exist and this apply does not create it)", call.Labels[0], a.Project, arg.kind, name, arg.kind))
			}
		}
	}
	return problems
}

// value evaluates attribute name of body, "" and false when it is not
// set or not known before the apply.
func value(ctx *hcl.EvalContext, body *hclsyntax.Body, name string) (cty.Value, bool) {
	a, ok := body.Attributes[name]
	if !ok {
		return cty.NilVal, false
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return cty.NilVal, false
	}
	return v, true
}

func stringsOf(v cty.Value) []string {
	var out []string
	if !v.CanIterateElements() {
		return nil
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.Type() == cty.String {
			out = append(out, e.AsString())
		}
	}
	return out
}

// applyResource checks what the provider would check first for a resource
// (its API enabled, its image family with an image) and records it.
func (m *tfModule) applyResource(a *tfApply, state string, ctx *hcl.EvalContext, typ, name string, body *hclsyntax.Body) []string {
	var problems []string
	addr := m.address + typ + "." + name
	for _, r := range tfResourceAPIs {
		if strings.HasPrefix(typ, r.prefix) {
			if _, err := os.Stat(filepath.Join(state, "apis", a.Project, r.api)); err != nil {
				problems = append(problems, fmt.Sprintf("%s: googleapi: Error 403: %s has not been used in project %s before or it is disabled.", addr, r.api, a.Project))
			}
			break
		}
	}
	switch typ {
	case "google_compute_instance_template":
		for _, d := range body.Blocks {
			if d.Type != "disk" {
				continue
			}
			img, ok := value(ctx, d.Body, "source_image")
			if !ok {
				continue
			}
			if f := imageFamilyRE.FindStringSubmatch(img.AsString()); f != nil {
				if _, err := os.Stat(filepath.Join(state, "images", f[1], f[2])); err != nil {
					problems = append(problems, fmt.Sprintf("%s: error resolving image name %q: Could not find image or family %s", addr, img.AsString(), img.AsString()))
				}
			}
		}
	case "google_compute_firewall":
		fw := tfFirewall{Address: addr}
		if v, ok := value(ctx, body, "name"); ok {
			fw.Name = v.AsString()
		}
		if v, ok := value(ctx, body, "source_ranges"); ok {
			fw.SourceRanges = stringsOf(v)
		}
		if v, ok := value(ctx, body, "target_tags"); ok {
			fw.TargetTags = stringsOf(v)
		}
		for _, al := range body.Blocks {
			if al.Type != "allow" {
				continue
			}
			proto, _ := value(ctx, al.Body, "protocol")
			ports, _ := value(ctx, al.Body, "ports")
			for _, p := range stringsOf(ports) {
				fw.Allow = append(fw.Allow, proto.AsString()+":"+p)
			}
		}
		a.Firewalls = append(a.Firewalls, fw)
	case "google_compute_router_nat":
		a.NATs = append(a.NATs, addr)
	case "google_compute_network", "google_compute_subnetwork":
		name, ok := value(ctx, body, "name")
		if !ok {
			return append(problems, addr+": name is not known before the apply")
		}
		a.Networks = append(a.Networks, strings.TrimPrefix(typ, "google_compute_")+"/"+name.AsString())
	case "google_secret_manager_secret":
		id, ok := value(ctx, body, "secret_id")
		if !ok {
			return append(problems, addr+": secret_id is not known before the apply")
		}
		a.Secrets = append(a.Secrets, id.AsString())
	case "google_compute_instance_group_manager":
		mig := tfMIG{}
		for _, f := range []struct {
			name string
			to   *string
		}{{"name", &mig.Name}, {"zone", &mig.Zone}, {"base_instance_name", &mig.BaseInstanceName}} {
			v, ok := value(ctx, body, f.name)
			if !ok {
				return append(problems, addr+": "+f.name+" is not known before the apply")
			}
			*f.to = v.AsString()
		}
		if v, ok := value(ctx, body, "target_size"); ok {
			n, _ := v.AsBigFloat().Int64()
			mig.TargetSize = int(n)
		}
		// The template of its version: google_compute_instance_template.<name>.<attr>.
		var template string
		for _, v := range body.Blocks {
			if v.Type != "version" {
				continue
			}
			if e, ok := v.Body.Attributes["instance_template"]; ok {
				for _, tr := range e.Expr.Variables() {
					if tr.RootName() == "google_compute_instance_template" && len(tr) >= 2 {
						if at, ok := tr[1].(hcl.TraverseAttr); ok {
							template = at.Name
						}
					}
				}
			}
		}
		script, err := m.startupScript(ctx, template)
		if err != nil {
			return append(problems, addr+": "+err.Error())
		}
		mig.StartupScript = script
		a.MIGs = append(a.MIGs, mig)
	}
	return problems
}

// startupScript returns the startup-script metadata of the module's
// instance template name.
func (m *tfModule) startupScript(ctx *hcl.EvalContext, name string) (string, error) {
	for _, b := range m.blocks("resource") {
		if b.Labels[0] != "google_compute_instance_template" || b.Labels[1] != name {
			continue
		}
		md, ok := b.Body.Attributes["metadata"]
		if !ok {
			return "", fmt.Errorf("instance template %s has no metadata", name)
		}
		v, diags := md.Expr.Value(ctx)
		if diags.HasErrors() {
			return "", fmt.Errorf("instance template %s: metadata: %s", name, diags.Error())
		}
		if !v.Type().IsObjectType() || !v.Type().HasAttribute("startup-script") {
			return "", fmt.Errorf("instance template %s has no startup-script metadata", name)
		}
		return v.GetAttr("startup-script").AsString(), nil
	}
	return "", fmt.Errorf("no instance template %q in the module", name)
}

// TestDay0ScriptTerraform: the terraform stand-in applies the root module
// nodegen renders for the day-0 script test's source once the APIs are
// enabled and the image family has an image, and refuses what terraform
// apply refuses: an API not enabled, an image family without an image, a
// module call without a required variable or with an argument that is no
// variable, an attribute the provider's schema lacks, a root module
// without the provider's project, an apply before init, and an answer
// other than "yes".
func TestDay0ScriptTerraform(t *testing.T) {
	work := t.TempDir()
	day0Init(t, work, day0UserFiles)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "terraform")); err != nil {
		t.Fatal(err)
	}
	terraform := func(t *testing.T, out, state, answer string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "terraform"), args...)
		cmd.Dir = filepath.Join(out, "terraform", "root")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "STUB_STATE=" + state, day0ToolEnv + "=1"}
		cmd.Stdin = strings.NewReader(answer + "\n")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	enable := func(t *testing.T, state string) {
		t.Helper()
		for _, api := range []string{"compute.googleapis.com", "iam.googleapis.com", "cloudresourcemanager.googleapis.com", "secretmanager.googleapis.com"} {
			if err := os.MkdirAll(filepath.Join(state, "apis", day0Project, api), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	image := func(t *testing.T, state string, families ...string) {
		t.Helper()
		for _, f := range families {
			if err := os.MkdirAll(filepath.Join(state, "images", day0Project, f), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	const cpu, gpu = "k8s-node-1-35", "k8s-node-gpu-1-35"
	// applyFails runs init and apply on out and wants apply to fail saying want.
	applyFails := func(t *testing.T, out, state, answer, want string) {
		t.Helper()
		if o, err := terraform(t, out, state, "", "init"); err != nil {
			t.Fatalf("terraform init: %v\n%s", err, o)
		}
		o, err := terraform(t, out, state, answer, "apply")
		if err == nil || !strings.Contains(o, want) {
			t.Errorf("terraform apply: %v, want a failure saying %q:\n%s", err, want, o)
		}
		if _, err := os.Stat(filepath.Join(state, "terraform", "apply.json")); err == nil {
			t.Error("a failed apply recorded what it made")
		}
	}
	out := filepath.Join(work, "out")

	state := t.TempDir()
	if o, err := terraform(t, out, state, "yes", "apply"); err == nil || !strings.Contains(o, `Run "terraform init"`) {
		t.Errorf("apply before init: %v\n%s", err, o)
	}
	applyFails(t, out, state, "yes", "compute.googleapis.com has not been used in project "+day0Project)
	enable(t, state)
	applyFails(t, out, state, "yes", "Could not find image or family projects/"+day0Project+"/global/images/family/"+cpu)
	image(t, state, cpu)
	applyFails(t, out, state, "yes", "Could not find image or family projects/"+day0Project+"/global/images/family/"+gpu)
	image(t, state, gpu)
	applyFails(t, out, state, "no", "Apply cancelled.")
	if o, err := terraform(t, out, state, "yes", "apply"); err != nil {
		t.Fatalf("terraform apply: %v\n%s", err, o)
	}
	if _, err := os.Stat(filepath.Join(state, "secrets", day0Project, "day0-join-token")); err != nil {
		t.Errorf("the apply made no join token secret: %v", err)
	}

	// The source creates its network: the module is given it by reference.
	const netRef = "  network    = google_compute_network.nodes.name\n"
	for _, c := range []struct{ file, old, new, want string }{
		{"terraform/root/main.tf", netRef, "", `the argument "network" is required`},
		{"terraform/root/main.tf", netRef, netRef + "  netwrk     = \"day0-vpc\"\n", `an argument named "netwrk" is not expected`},
		// The network the apply creates, named by a constant: no order.
		{"terraform/root/main.tf", netRef, "  network    = \"day0-vpc\"\n", `network "day0-vpc" is created by this apply but given as a constant`},
		// A network that neither exists nor is created.
		{"terraform/root/main.tf", netRef, "  network    = \"other-vpc\"\n", `networks/other-vpc' was not found`},
		{"terraform/root/main.tf", "  project = \"" + day0Project + "\"\n", "", `no provider "google" block with a constant project`},
		{"terraform/network.tf", "source_ranges", "source_range", "attribute source_range is not in the provider schema"},
	} {
		mutant := t.TempDir()
		if err := os.CopyFS(mutant, os.DirFS(out)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(mutant, c.file)
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), c.old) {
			t.Fatalf("%s: %q not in it (%v)", c.file, c.old, err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), c.old, c.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		state := t.TempDir()
		enable(t, state)
		image(t, state, cpu, gpu)
		applyFails(t, mutant, state, "yes", c.want)
	}
}
