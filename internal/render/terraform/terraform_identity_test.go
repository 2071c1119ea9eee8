package terraform_test

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render/terraform"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// refs returns the traversals an expression reads, as dotted strings
// ("local.nodes_service_account_email", "google_service_account.nodes").
func refs(e hclsyntax.Expression) []string {
	var out []string
	for _, tr := range e.Variables() {
		parts := []string{tr.RootName()}
		for _, step := range tr[1:] {
			if a, ok := step.(hcl.TraverseAttr); ok {
				parts = append(parts, a.Name)
			}
		}
		out = append(out, strings.Join(parts, "."))
	}
	slices.Sort(out)
	return out
}

// memberRole returns which service account an IAM member expression names
// ("nodes" or "autoscaler"), read from the local it interpolates.
func memberRole(t *testing.T, r tfResource) string {
	t.Helper()
	a, ok := r.Body.Attributes["member"]
	if !ok {
		t.Fatalf("%s.%s has no member", r.Type, r.Name)
	}
	tmpl, ok := a.Expr.(*hclsyntax.TemplateExpr)
	if !ok || len(tmpl.Parts) != 2 {
		t.Fatalf("%s.%s: member is not \"serviceAccount:${...}\"", r.Type, r.Name)
	}
	if lit, diags := tmpl.Parts[0].Value(nil); diags.HasErrors() || lit.AsString() != "serviceAccount:" {
		t.Fatalf("%s.%s: member does not start with serviceAccount:", r.Type, r.Name)
	}
	rs := refs(tmpl.Parts[1])
	for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
		if slices.Equal(rs, []string{"local." + terraform.ServiceAccountLocal(role)}) {
			return role
		}
	}
	t.Fatalf("%s.%s: member names %v, not a role's service account", r.Type, r.Name, rs)
	return ""
}

// TestTerraformIdentityPerRole: the autoscaled groups' VMs run as the
// nodes' service account and the autoscaler's node as its own; the nodes'
// account has no compute permission and no project-wide secret access;
// the autoscaler's custom role is exactly the permission list; the join
// secret's grants are on that secret only; and no secret value is in the
// module.
func TestTerraformIdentityPerRole(t *testing.T) {
	src, files := testsrc.Spec{}.MustRender(t)
	m := parseModule(t, files)

	// Instance templates: which account each group's VMs run as.
	n := 0
	for _, r := range m.byType(gce.TFInstanceTemplate) {
		g := groupOfTemplate(t, src, m, r)
		sa := blocks(r.Body, "service_account")
		if len(sa) != 1 {
			t.Fatalf("%s has %d service_account blocks", r.Name, len(sa))
		}
		want := "local." + terraform.ServiceAccountLocal(model.RoleNodes)
		if g.Name == src.Cluster.Autoscaler.NodeGroup {
			want = "local." + terraform.ServiceAccountLocal(model.RoleAutoscaler)
		} else if !g.Autoscaled() {
			t.Fatalf("the test source has a gce-static group %s besides the autoscaler's", g.Name)
		}
		if got := refs(sa[0].Body.Attributes["email"].Expr); !slices.Equal(got, []string{want}) {
			t.Errorf("group %s runs as %v, want %s", g.Name, got, want)
		}
		n++
	}
	if n < 3 {
		t.Fatalf("%d instance templates", n)
	}

	// The locals: each role's account is the variable or the one created
	// for that role, never the other's.
	iam := parseBodies(t, files[layout.TerraformIAMPath])
	for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
		var local *hclsyntax.Attribute
		for _, b := range iam.Blocks {
			if b.Type == "locals" {
				local = b.Body.Attributes[terraform.ServiceAccountLocal(role)]
			}
		}
		if local == nil {
			t.Fatalf("no local %s", terraform.ServiceAccountLocal(role))
		}
		want := []string{gce.TFServiceAccount + "." + role + ".email", "var." + terraform.ServiceAccountVariable(role), "var." + terraform.ServiceAccountVariable(role)}
		slices.Sort(want)
		if got := refs(local.Expr); !slices.Equal(got, want) {
			t.Errorf("local %s reads %v, want %v", terraform.ServiceAccountLocal(role), got, want)
		}
	}

	// Project-level grants, by account.
	projectRoles := map[string][]string{}
	var computeBinding, approverBinding *tfResource
	for _, r := range m.byType(gce.TFProjectIAMMember) {
		role := memberRole(t, r)
		a := r.Body.Attributes["role"]
		if rs := refs(a.Expr); len(rs) > 0 {
			switch {
			case slices.Equal(rs, []string{gce.TFCustomRole + "." + model.RoleAutoscaler + ".name"}):
				projectRoles[role] = append(projectRoles[role], "custom:autoscaler")
				computeBinding = &r
			case slices.Equal(rs, []string{gce.TFCustomRole + "." + terraform.TFAutoscalerListRole + ".name"}):
				projectRoles[role] = append(projectRoles[role], "custom:autoscaler_list")
				if len(blocks(r.Body, "condition")) != 0 {
					t.Errorf("%s: the project reads have a condition, which would deny them", r.Name)
				}
			case slices.Equal(rs, []string{gce.TFCustomRole + "." + terraform.TFApproverMIGRole + ".name"}):
				projectRoles[role] = append(projectRoles[role], "custom:"+terraform.TFApproverMIGRole)
				approverBinding = &r
			default:
				t.Errorf("%s: role %v", r.Name, rs)
			}
			continue
		}
		projectRoles[role] = append(projectRoles[role], m.str(t, r, r.Body, "role"))
	}
	for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
		slices.Sort(projectRoles[role])
	}
	if want := []string{"roles/logging.logWriter", "roles/monitoring.metricWriter"}; !slices.Equal(projectRoles[model.RoleNodes], want) {
		t.Errorf("the nodes' account has project roles %v, want only %v", projectRoles[model.RoleNodes], want)
	}
	if want := []string{"custom:approver_mig_read", "custom:autoscaler", "custom:autoscaler_list", "roles/logging.logWriter", "roles/monitoring.metricWriter"}; !slices.Equal(projectRoles[model.RoleAutoscaler], want) {
		t.Errorf("the autoscaler's account has project roles %v, want %v", projectRoles[model.RoleAutoscaler], want)
	}
	for _, r := range projectRoles[model.RoleNodes] {
		if !strings.HasPrefix(r, "roles/logging.") && !strings.HasPrefix(r, "roles/monitoring.") {
			t.Errorf("the nodes' account has project role %s: neither logging nor monitoring", r)
		}
	}

	// The custom roles: the scoped Compute role, the project reads and the
	// renewer's role on the join secret; together exactly the documented
	// lists; no destroy anywhere.
	perms := map[string][]string{}
	for _, r := range m.byType(gce.TFCustomRole) {
		for _, v := range m.eval(t, r, r.Body, "permissions").AsValueSlice() {
			perms[r.Name] = append(perms[r.Name], v.AsString())
		}
		if !slices.IsSorted(perms[r.Name]) {
			t.Errorf("custom role %s: permissions %v not sorted", r.Name, perms[r.Name])
		}
		for _, p := range perms[r.Name] {
			if strings.HasSuffix(p, ".destroy") || strings.HasSuffix(p, ".setIamPolicy") || strings.HasSuffix(p, ".delete") {
				t.Errorf("custom role %s grants %s", r.Name, p)
			}
		}
	}
	if got := slices.Sorted(maps.Keys(perms)); !slices.Equal(got, []string{terraform.TFApproverMIGRole, model.RoleAutoscaler, terraform.TFAutoscalerListRole, terraform.TFJoinSecretRenewerRole}) {
		t.Fatalf("custom roles %v", got)
	}
	if !slices.Equal(perms[terraform.TFApproverMIGRole], []string{"compute.instanceGroupManagers.get", "compute.instanceTemplates.get"}) {
		t.Errorf("the approver's MIG role grants %v, want only compute.instanceGroupManagers.get and compute.instanceTemplates.get", perms[terraform.TFApproverMIGRole])
	}
	if !slices.Equal(perms[model.RoleAutoscaler], gce.AutoscalerScopedPermissions()) {
		t.Errorf("scoped role permissions %v, want %v", perms[model.RoleAutoscaler], gce.AutoscalerScopedPermissions())
	}
	if !slices.Equal(perms[terraform.TFAutoscalerListRole], gce.AutoscalerProjectPermissions()) {
		t.Errorf("project-reads role permissions %v, want %v", perms[terraform.TFAutoscalerListRole], gce.AutoscalerProjectPermissions())
	}
	all := slices.Sorted(slices.Values(append(slices.Clone(perms[model.RoleAutoscaler]), perms[terraform.TFAutoscalerListRole]...)))
	if !slices.Equal(all, autoscalerPermissions()) {
		t.Errorf("the Compute roles hold %v, want %v", all, autoscalerPermissions())
	}
	for _, p := range []string{"compute.instanceGroupManagers.update", "compute.instanceTemplates.get", "compute.instances.get"} {
		if !slices.Contains(perms[model.RoleAutoscaler], p) {
			t.Errorf("the scoped role lacks %s", p)
		}
	}
	for _, p := range perms[terraform.TFAutoscalerListRole] {
		if !strings.HasPrefix(p, "compute.") || !(strings.HasSuffix(p, ".list") || strings.HasSuffix(p, ".get")) {
			t.Errorf("the unconditioned role grants %s: not a read", p)
		}
	}
	for _, p := range append(slices.Clone(perms[model.RoleAutoscaler]), perms[terraform.TFAutoscalerListRole]...) {
		if !strings.HasPrefix(p, "compute.") {
			t.Errorf("a Compute role grants %s", p)
		}
	}
	if want := []string{"secretmanager.versions.add", "secretmanager.versions.disable", "secretmanager.versions.list"}; !slices.Equal(perms[terraform.TFJoinSecretRenewerRole], want) {
		t.Errorf("the renewer's role grants %v, want %v", perms[terraform.TFJoinSecretRenewerRole], want)
	}

	// The scoped binding's condition names this cluster's resources.
	if computeBinding == nil {
		t.Fatal("no binding of the scoped Compute role")
	}
	conds := blocks(computeBinding.Body, "condition")
	if len(conds) != 1 {
		t.Fatalf("%s has %d condition blocks, want 1", computeBinding.Name, len(conds))
	}
	expr := m.str(t, *computeBinding, conds[0].Body, "expression")
	if expr != src.AutoscalerCondition() {
		t.Errorf("condition %q, want the source's AutoscalerCondition", expr)
	}
	checkCondition(t, src, expr)

	// The approver's MIG binding names exactly the MIGs of the cloud
	// groups that are not autoscaled (here the autoscaler's own group),
	// and their instance templates.
	if approverBinding == nil {
		t.Fatal("no binding of the approver's MIG role")
	}
	conds = blocks(approverBinding.Body, "condition")
	if len(conds) != 1 {
		t.Fatalf("%s has %d condition blocks, want 1", approverBinding.Name, len(conds))
	}
	var wantMIGs []string
	for _, g := range src.CloudGroups() {
		if !g.Autoscaled() {
			for _, z := range g.Zones {
				wantMIGs = append(wantMIGs, `resource.name == "projects/`+src.Cluster.GCP.Project+`/zones/`+z+`/instanceGroupManagers/`+src.Cluster.MIGName(g, z)+`"`)
			}
			wantMIGs = append(wantMIGs, `resource.name.startsWith("projects/`+src.Cluster.GCP.Project+`/global/instanceTemplates/`+src.Cluster.TemplatePrefix(g)+`")`)
		}
	}
	if got := m.str(t, *approverBinding, conds[0].Body, "expression"); len(wantMIGs) == 0 || got != strings.Join(wantMIGs, " || ") {
		t.Errorf("the approver's MIG condition %q, want %q", got, strings.Join(wantMIGs, " || "))
	}

	// The join secret: created without a value; grants on it only.
	if len(m.byType("google_secret_manager_secret_version")) != 0 {
		t.Error("the module holds a secret version")
	}
	secrets := m.byType(gce.TFSecret)
	if len(secrets) != 1 || m.str(t, secrets[0], secrets[0].Body, "secret_id") != src.Cluster.JoinToken.SecretManager.Secret {
		t.Fatalf("secrets %v, want the join secret %s", secrets, src.Cluster.JoinToken.SecretManager.Secret)
	}
	if blocks(secrets[0].Body, "replication")[0].Body.Blocks[0].Type != "auto" {
		t.Error("the join secret's replication is not automatic")
	}
	secretRoles := map[string][]string{}
	for _, r := range m.byType(gce.TFSecretIAMMember) {
		want := []string{gce.TFSecret + "." + terraform.TFJoinSecretName + ".secret_id"}
		if got := refs(r.Body.Attributes["secret_id"].Expr); !slices.Equal(got, want) {
			t.Errorf("%s grants on %v, not on the join secret", r.Name, got)
		}
		role := memberRole(t, r)
		if rs := refs(r.Body.Attributes["role"].Expr); len(rs) > 0 {
			if !slices.Equal(rs, []string{gce.TFCustomRole + "." + terraform.TFJoinSecretRenewerRole + ".name"}) {
				t.Errorf("%s: role %v", r.Name, rs)
			}
			secretRoles[role] = append(secretRoles[role], "custom:"+terraform.TFJoinSecretRenewerRole)
			continue
		}
		secretRoles[role] = append(secretRoles[role], m.str(t, r, r.Body, "role"))
	}
	if got := secretRoles[model.RoleNodes]; !slices.Equal(got, []string{terraform.JoinSecretReader}) {
		t.Errorf("the nodes' account has %v on the join secret, want only %s", got, terraform.JoinSecretReader)
	}
	if got := slices.Sorted(slices.Values(secretRoles[model.RoleAutoscaler])); !slices.Equal(got, []string{"custom:" + terraform.TFJoinSecretRenewerRole, terraform.JoinSecretReader}) {
		t.Errorf("the autoscaler's account has %v on the join secret", got)
	}
}

// parseBodies parses one HCL file.
func parseBodies(t *testing.T, b []byte) *hclsyntax.Body {
	t.Helper()
	f, diags := hclsyntax.ParseConfig(b, "x.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return f.Body.(*hclsyntax.Body)
}

// TestTerraformBringYourOwn: with a variable set, nodegen creates no
// account for that role and uses the given email; null creates one.
func TestTerraformBringYourOwn(t *testing.T) {
	_, files := testsrc.Spec{}.MustRender(t)
	m := parseModule(t, files)
	for _, r := range m.byType(gce.TFServiceAccount) {
		for _, tc := range []struct {
			v    cty.Value
			want int64
		}{{cty.NullVal(cty.String), 1}, {cty.StringVal("mine@p.iam.gserviceaccount.com"), 0}} {
			m.vars[terraform.ServiceAccountVariable(r.Name)] = tc.v
			got, _ := m.eval(t, r, r.Body, "count").AsBigFloat().Int64()
			if got != tc.want {
				t.Errorf("%s: count %d with var %s = %#v, want %d", r.Name, got, terraform.ServiceAccountVariable(r.Name), tc.v, tc.want)
			}
		}
	}
	iam := parseBodies(t, files[layout.TerraformIAMPath])
	for _, b := range iam.Blocks {
		if b.Type != "locals" {
			continue
		}
		for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
			email := role + "@mine.iam.gserviceaccount.com"
			ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
				"var":                cty.ObjectVal(map[string]cty.Value{terraform.ServiceAccountVariable(role): cty.StringVal(email)}),
				gce.TFServiceAccount: cty.ObjectVal(map[string]cty.Value{role: cty.EmptyTupleVal}),
			}}
			v, diags := b.Body.Attributes[terraform.ServiceAccountLocal(role)].Expr.Value(ctx)
			if diags.HasErrors() || v.AsString() != email {
				t.Errorf("local %s with the variable set: %#v %s", terraform.ServiceAccountLocal(role), v, diags.Error())
			}
		}
	}
	if got := slices.Sorted(maps.Keys(m.vars)); !slices.Contains(got, terraform.ServiceAccountVariable(model.RoleNodes)) || slices.Contains(got, "service_account_email") {
		t.Errorf("variables %v", got)
	}
}

// TestTerraformJoinSecretModes: "iam" grants on the named secret without
// creating it; "none" and a metadata-key token leave Secret Manager alone.
func TestTerraformJoinSecretModes(t *testing.T) {
	_, files := testsrc.Spec{Secret: "my-token", Cluster: `joinToken: secretManager: terraform: "iam"`}.MustRender(t)
	m := parseModule(t, files)
	if len(m.byType(gce.TFSecret)) != 0 {
		t.Error(`"iam" creates the secret`)
	}
	grants := m.byType(gce.TFSecretIAMMember)
	if len(grants) != len(terraform.JoinSecretGrants) {
		t.Fatalf("%d grants, want %d", len(grants), len(terraform.JoinSecretGrants))
	}
	for _, r := range grants {
		if got := m.str(t, r, r.Body, "secret_id"); got != "my-token" {
			t.Errorf("%s grants on %q, want my-token", r.Name, got)
		}
	}
	for name, spec := range map[string]testsrc.Spec{
		"none":         {Cluster: `joinToken: secretManager: terraform: "none"`},
		"metadata key": {MetadataKey: "kubeadm-join-token"},
	} {
		_, files := spec.MustRender(t)
		if _, ok := files[layout.TerraformJoinSecretPath]; ok {
			t.Errorf("%s: %s rendered", name, layout.TerraformJoinSecretPath)
		}
		for p, b := range files {
			if strings.HasSuffix(p, ".tf") && strings.Contains(string(b), "google_secret_manager") {
				t.Errorf("%s: %s mentions Secret Manager resources", name, p)
			}
		}
	}
}

// TestServiceAccountAndRoleIDs: GCE's limits on account and role IDs hold
// for any cluster name the schema allows.
func TestServiceAccountAndRoleIDs(t *testing.T) {
	for _, cluster := range []string{"a", "hybrid-ai", "a-cluster-name-of-twenty", strings.Repeat("x", 63), "x-" + strings.Repeat("y", 60)} {
		for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
			id := model.ServiceAccountID(cluster, role)
			if !saIDRE.MatchString(id) {
				t.Errorf("ServiceAccountID(%q, %q) = %q", cluster, role, id)
			}
		}
		if id := terraform.CustomRoleID(cluster); !roleIDRE.MatchString(id) {
			t.Errorf("CustomRoleID(%q) = %q", cluster, id)
		}
		for _, name := range []string{terraform.TFAutoscalerListRole, terraform.TFApproverMIGRole, terraform.TFJoinSecretRenewerRole} {
			if id := terraform.CustomRoleIDFor(cluster, name); !roleIDRE.MatchString(id) {
				t.Errorf("CustomRoleIDFor(%q, %q) = %q", cluster, name, id)
			}
		}
	}
	if model.ServiceAccountID(strings.Repeat("x", 40), "nodes") == model.ServiceAccountID(strings.Repeat("x", 41), "nodes") {
		t.Error("two long cluster names share a service account ID")
	}
}

var (
	// GCE: account IDs are 6 to 30 characters, [a-z]([-a-z0-9]*[a-z0-9]).
	saIDRE = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
	// IAM: custom role IDs are [a-zA-Z0-9_.]{3,64}.
	roleIDRE = regexp.MustCompile(`^[a-zA-Z0-9_.]{3,64}$`)
)

// autoscalerPermissions returns every Compute permission of the
// autoscaler's node (gce.AutoscalerComputePermissions), sorted.
func autoscalerPermissions() []string {
	out := make([]string, len(gce.AutoscalerComputePermissions))
	for i, p := range gce.AutoscalerComputePermissions {
		out[i] = p.Permission
	}
	slices.Sort(out)
	return out
}
