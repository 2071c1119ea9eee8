package terraform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/model"
)

// Identity per role. Two service accounts, one per role a VM can have:
//
//   - the nodes: every cloud group except the autoscaler's. Their VMs run
//     any workload pod; a pod can read the VM's token from the metadata
//     server. They get what a node needs and nothing else: writing logs
//     and metrics, and reading the join token secret (not any other).
//   - the autoscaler's node (cluster.autoscaler.nodeGroup): tainted so that
//     only the autoscaler (and the node garbage collector and join token
//     renewer that run beside it) lands there. It gets a custom role with
//     exactly the Compute Engine permissions those call, and the rights on
//     the join secret the token renewer needs.
//
// Per role and not per group: every node group needs the same rights (a
// node joins the same way whatever its shape), so one account per group
// would multiply accounts and bindings without separating any privilege;
// the one privilege boundary is between the nodes and the autoscaler's
// node.

// projectRoles are the predefined roles each service account gets on the
// project: logs and metrics only. Neither holds a compute or secret
// permission.
var projectRoles = []string{"roles/logging.logWriter", "roles/monitoring.metricWriter"}

// Roles on the join token secret (and only on it).
const (
	// joinSecretReader lets the join script read the token (every node,
	// the autoscaler's included: it joins the same way).
	joinSecretReader = "roles/secretmanager.secretAccessor"
)

// joinSecretRenewerPermissions are the permissions of the token renewer's
// custom role on the join secret: exactly the Secret Manager calls
// templates/join-token-renewer.sh makes besides reading a version's
// payload (joinSecretReader): versions.addVersion, versions.list,
// versions.disable (the "Authorization requires" line of each method in
// the Secret Manager REST reference). Never secretmanager.versions.destroy
// (which the predefined roles/secretmanager.secretVersionManager holds):
// a stolen identity of the autoscaler's node can add a version VMs then
// read, or disable one, and the owner can enable it again; it cannot
// erase one.
var joinSecretRenewerPermissions = []string{
	"secretmanager.versions.add",
	"secretmanager.versions.disable",
	"secretmanager.versions.list",
}

// approverMIGPermissions is the custom role that lets the node CSR
// approver on the autoscaler's node read the MIGs (their all-instances
// config), the per-instance configs and the instance templates of the
// cloud groups that are not autoscaled (the autoscaler's own among them),
// which the scoped Compute role does not name:
// instanceGroupManagers.get and listPerInstanceConfigs need
// compute.instanceGroupManagers.get on the MIG, instanceTemplates.get
// compute.instanceTemplates.get on the template (Compute Engine API
// reference, each method's "Authorization requires").
var approverMIGPermissions = []string{"compute.instanceGroupManagers.get", "compute.instanceTemplates.get"}

// approverMIGCondition is the IAM condition (CEL) of the approverMIGPermissions
// binding: the resource is the MIG of a cloud group that is not autoscaled,
// in one of its zones, or one of that group's instance templates (named
// with its prefix). "" when every cloud group is autoscaled.
func approverMIGCondition(src *model.Source) string {
	c := &src.Cluster
	var terms []string
	for _, g := range src.CloudGroups() {
		if g.Autoscaled() {
			continue
		}
		for _, z := range g.Zones {
			terms = append(terms, `resource.name == `+strconv.Quote("projects/"+c.GCP.Project+"/zones/"+z+"/instanceGroupManagers/"+c.MIGName(g, z)))
		}
		terms = append(terms, `resource.name.startsWith(`+strconv.Quote("projects/"+c.GCP.Project+"/global/instanceTemplates/"+c.TemplatePrefix(g))+`)`)
	}
	return strings.Join(terms, " || ")
}

// autoscalerRoleID is the role_id of the autoscaler node's scoped Compute
// custom role (letters, digits, '_' and '.' only, at most 64 characters).
func autoscalerRoleID(cluster string) string { return customRoleID(cluster, "autoscaler") }

// Custom roles besides the scoped Compute one, by Terraform name and
// role_id suffix.
const (
	// tfAutoscalerListRole holds gce.AutoscalerProjectPermissions.
	tfAutoscalerListRole = "autoscaler_list"
	// tfApproverMIGRole holds approverMIGPermissions.
	tfApproverMIGRole = "approver_mig_read"
	// tfJoinSecretRenewerRole holds joinSecretRenewerPermissions.
	tfJoinSecretRenewerRole = "join_token_renewer"
)

// customRoleIDFor is the role_id of the custom role with Terraform name
// tfName: "nodegen_<cluster>_<tfName>".
func customRoleIDFor(cluster, tfName string) string { return customRoleID(cluster, tfName) }

func customRoleID(cluster, suffix string) string {
	id := "nodegen_" + strings.ReplaceAll(cluster, "-", "_") + "_" + suffix
	if len(id) <= 64 {
		return id
	}
	sum := sha256.Sum256([]byte(cluster))
	return "nodegen_" + hex.EncodeToString(sum[:])[:16] + "_" + suffix
}

// serviceAccountLocal is the local value holding a role's service account
// email, created by nodegen or brought by the user.
func serviceAccountLocal(role string) string { return role + gce.TFServiceAccountEmailSuffix }

// serviceAccountVariable is the variable with which the user brings their
// own service account for a role.
func serviceAccountVariable(role string) string { return role + gce.TFServiceAccountEmailSuffix }

// interpolation returns the tokens of "<prefix>${<expr>}".
func interpolation(prefix string, expr hclwrite.Tokens) hclwrite.Tokens {
	out := hclwrite.Tokens{{Type: hclsyntax.TokenOQuote, Bytes: []byte(`"`)}}
	if prefix != "" {
		lit := hclwrite.TokensForValue(cty.StringVal(prefix))
		out = append(out, lit[1:len(lit)-1]...) // the escaped literal, without its quotes
	}
	out = append(out, &hclwrite.Token{Type: hclsyntax.TokenTemplateInterp, Bytes: []byte(`${`)})
	out = append(out, expr...)
	return append(out,
		&hclwrite.Token{Type: hclsyntax.TokenTemplateSeqEnd, Bytes: []byte(`}`)},
		&hclwrite.Token{Type: hclsyntax.TokenCQuote, Bytes: []byte(`"`)},
	)
}

// member is the IAM member of a role's service account.
func member(role string) hclwrite.Tokens {
	return interpolation("serviceAccount:", ref("local", serviceAccountLocal(role)))
}

// roleResourceName is the Terraform name of a project role binding.
func roleResourceName(role, projectRole string) string {
	r := strings.TrimPrefix(projectRole, "roles/")
	return role + "_" + strings.ToLower(strings.NewReplacer(".", "_", "-", "_").Replace(r))
}

var roleDoc = map[string]string{
	model.RoleNodes:      "the nodes of cluster %s (every cloud node group but the autoscaler's)",
	model.RoleAutoscaler: "the Cluster Autoscaler's node of cluster %s",
}

func terraformIAM(src *model.Source, header string) []byte {
	c := &src.Cluster
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	comment(body,
		"Identity per role: the nodes and the autoscaler's node run as two",
		"service accounts, created here unless the module's *_service_account_email",
		"variables bring existing ones. The nodes may write logs and metrics and",
		"read the join token; only the autoscaler's node may read and resize MIGs.")
	locals := body.AppendNewBlock("locals", nil).Body()
	for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
		v := ref("var", serviceAccountVariable(role))
		cond := append(hclwrite.Tokens{}, v...)
		cond = append(cond, &hclwrite.Token{Type: hclsyntax.TokenNotEqual, Bytes: []byte("!=")})
		cond = append(cond, hclwrite.TokensForIdentifier("null")...)
		cond = append(cond, &hclwrite.Token{Type: hclsyntax.TokenQuestion, Bytes: []byte("?")})
		cond = append(cond, v...)
		cond = append(cond, &hclwrite.Token{Type: hclsyntax.TokenColon, Bytes: []byte(":")})
		cond = append(cond, hclwrite.TokensForTraversal(traversal(gce.TFServiceAccount, role))...)
		cond = append(cond,
			&hclwrite.Token{Type: hclsyntax.TokenOBrack, Bytes: []byte("[")},
			&hclwrite.Token{Type: hclsyntax.TokenNumberLit, Bytes: []byte("0")},
			&hclwrite.Token{Type: hclsyntax.TokenCBrack, Bytes: []byte("]")},
			&hclwrite.Token{Type: hclsyntax.TokenDot, Bytes: []byte(".")},
			&hclwrite.Token{Type: hclsyntax.TokenIdent, Bytes: []byte("email")},
		)
		locals.SetAttributeRaw(serviceAccountLocal(role), cond)
	}
	for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
		body.AppendNewline()
		sa := body.AppendNewBlock("resource", []string{gce.TFServiceAccount, role}).Body()
		countIf := append(hclwrite.Tokens{}, ref("var", serviceAccountVariable(role))...)
		countIf = append(countIf, &hclwrite.Token{Type: hclsyntax.TokenEqualOp, Bytes: []byte("==")})
		countIf = append(countIf, hclwrite.TokensForIdentifier("null")...)
		countIf = append(countIf, &hclwrite.Token{Type: hclsyntax.TokenQuestion, Bytes: []byte("?")})
		countIf = append(countIf, hclwrite.TokensForValue(cty.NumberIntVal(1))...)
		countIf = append(countIf, &hclwrite.Token{Type: hclsyntax.TokenColon, Bytes: []byte(":")})
		countIf = append(countIf, hclwrite.TokensForValue(cty.NumberIntVal(0))...)
		sa.SetAttributeRaw("count", countIf)
		sa.SetAttributeRaw("project", ref("local", "project"))
		sa.SetAttributeValue("account_id", cty.StringVal(model.ServiceAccountID(c.Name, role)))
		sa.SetAttributeValue("display_name", cty.StringVal(fmt.Sprintf("nodegen %s of %s", role, c.Name)))
		sa.SetAttributeValue("description", cty.StringVal("Runs the VMs of "+fmt.Sprintf(roleDoc[role], c.Name)+"."))
	}
	for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
		for _, pr := range projectRoles {
			body.AppendNewline()
			b := body.AppendNewBlock("resource", []string{gce.TFProjectIAMMember, roleResourceName(role, pr)}).Body()
			b.SetAttributeRaw("project", ref("local", "project"))
			b.SetAttributeValue("role", cty.StringVal(pr))
			b.SetAttributeRaw("member", member(role))
		}
	}

	body.AppendNewline()
	comment(body,
		"Exactly the Compute Engine permissions the Cluster Autoscaler's GCE provider",
		"calls (and compute.instances.get for the node garbage collector and the node",
		"CSR approver, which also reads guest attributes and the project's metadata),",
		"in two roles: those checked on a named MIG, template or instance, bound with",
		"a condition naming this cluster's; and the read-only ones checked on the",
		"project (lists, machine types, operations, the project's metadata), which no",
		"condition on resource names can narrow. The list, with the call behind each",
		"permission, is in docs/terraform.md.")
	cr := body.AppendNewBlock("resource", []string{gce.TFCustomRole, model.RoleAutoscaler}).Body()
	cr.SetAttributeRaw("project", ref("local", "project"))
	cr.SetAttributeValue("role_id", cty.StringVal(autoscalerRoleID(c.Name)))
	cr.SetAttributeValue("title", cty.StringVal("nodegen Cluster Autoscaler of "+c.Name))
	cr.SetAttributeValue("description", cty.StringVal("Resize the MIGs of cluster "+c.Name+" and read their templates and instances (bound with a condition on their names). Source: "+gce.AutoscalerPermissionsSource+"."))
	cr.SetAttributeValue("permissions", strs(gce.AutoscalerScopedPermissions()))

	body.AppendNewline()
	b := body.AppendNewBlock("resource", []string{gce.TFProjectIAMMember, model.RoleAutoscaler + "_compute"}).Body()
	b.SetAttributeRaw("project", ref("local", "project"))
	b.SetAttributeRaw("role", ref(gce.TFCustomRole, model.RoleAutoscaler, "name"))
	b.SetAttributeRaw("member", member(model.RoleAutoscaler))
	b.AppendNewline()
	cond := b.AppendNewBlock("condition", nil).Body()
	cond.SetAttributeValue("title", cty.StringVal("nodegen cluster "+c.Name))
	cond.SetAttributeValue("description", cty.StringVal("Only the MIGs, instance templates and instances of cluster "+c.Name+"."))
	cond.SetAttributeValue("expression", cty.StringVal(src.AutoscalerCondition()))

	body.AppendNewline()
	lr := body.AppendNewBlock("resource", []string{gce.TFCustomRole, tfAutoscalerListRole}).Body()
	lr.SetAttributeRaw("project", ref("local", "project"))
	lr.SetAttributeValue("role_id", cty.StringVal(customRoleIDFor(c.Name, tfAutoscalerListRole)))
	lr.SetAttributeValue("title", cty.StringVal("nodegen Cluster Autoscaler of "+c.Name+": project reads"))
	lr.SetAttributeValue("description", cty.StringVal("List MIGs and instances, read machine types and the project's metadata, and wait for operations: read-only calls checked on the project. Source: "+gce.AutoscalerPermissionsSource+"."))
	lr.SetAttributeValue("permissions", strs(gce.AutoscalerProjectPermissions()))

	body.AppendNewline()
	lb := body.AppendNewBlock("resource", []string{gce.TFProjectIAMMember, model.RoleAutoscaler + "_compute_list"}).Body()
	lb.SetAttributeRaw("project", ref("local", "project"))
	lb.SetAttributeRaw("role", ref(gce.TFCustomRole, tfAutoscalerListRole, "name"))
	lb.SetAttributeRaw("member", member(model.RoleAutoscaler))

	if expr := approverMIGCondition(src); expr != "" {
		body.AppendNewline()
		comment(body,
			"The node CSR approver on the autoscaler's node reads every cloud group's",
			"MIG, its per-instance configs (instanceGroupManagers.get and",
			"listPerInstanceConfigs, which need compute.instanceGroupManagers.get) and",
			"its instance templates: the scoped role names the autoscaled groups',",
			"this one the others', read-only.")
		ar := body.AppendNewBlock("resource", []string{gce.TFCustomRole, tfApproverMIGRole}).Body()
		ar.SetAttributeRaw("project", ref("local", "project"))
		ar.SetAttributeValue("role_id", cty.StringVal(customRoleIDFor(c.Name, tfApproverMIGRole)))
		ar.SetAttributeValue("title", cty.StringVal("nodegen node CSR approver of "+c.Name+": MIGs not autoscaled"))
		ar.SetAttributeValue("description", cty.StringVal("Read the MIGs of the cloud groups of cluster "+c.Name+" that are not autoscaled, their per-instance configs and instance templates (bound with a condition on their names)."))
		ar.SetAttributeValue("permissions", strs(approverMIGPermissions))

		body.AppendNewline()
		ab := body.AppendNewBlock("resource", []string{gce.TFProjectIAMMember, model.RoleAutoscaler + "_" + tfApproverMIGRole}).Body()
		ab.SetAttributeRaw("project", ref("local", "project"))
		ab.SetAttributeRaw("role", ref(gce.TFCustomRole, tfApproverMIGRole, "name"))
		ab.SetAttributeRaw("member", member(model.RoleAutoscaler))
		ab.AppendNewline()
		ac := ab.AppendNewBlock("condition", nil).Body()
		ac.SetAttributeValue("title", cty.StringVal("nodegen cluster "+c.Name+": MIGs not autoscaled"))
		ac.SetAttributeValue("description", cty.StringVal("Only the MIGs and instance templates of the cloud groups of cluster "+c.Name+" that are not autoscaled."))
		ac.SetAttributeValue("expression", cty.StringVal(expr))
	}
	return hclFile(header, f)
}

// joinSecretGrants lists the roles granted on the join secret, by service
// account role, in the order they are written. SecretRole "" is the
// renewer's custom role (joinSecretRenewerPermissions).
var joinSecretGrants = []struct{ Role, SecretRole, Name string }{
	{model.RoleNodes, joinSecretReader, "nodes_read"},
	{model.RoleAutoscaler, joinSecretReader, "autoscaler_read"},
	{model.RoleAutoscaler, "", "autoscaler_renew"},
}

// tfJoinSecretName is the Terraform name of the join secret resource.
const tfJoinSecretName = "join_token"

// terraformJoinSecret renders join-secret.tf, or nothing (nil) when the
// join token is not in Secret Manager or the user manages the secret and
// its IAM.
func terraformJoinSecret(src *model.Source, header string) []byte {
	sm := src.Cluster.JoinToken.SecretManager
	if sm == nil || sm.Terraform == model.JoinSecretNone {
		return nil
	}
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	secretID := hclwrite.TokensForValue(cty.StringVal(sm.Secret))
	if sm.Terraform == model.JoinSecretIAM {
		comment(body,
			"The join token's secret exists (cluster.joinToken.secretManager.terraform",
			"is \"iam\"): only its IAM is managed here.")
	} else {
		comment(body,
			"The join token's secret, without a value: Terraform never holds the token.",
			"Add it as a version outside Terraform (the token renewer does).")
		s := body.AppendNewBlock("resource", []string{gce.TFSecret, tfJoinSecretName}).Body()
		s.SetAttributeRaw("project", ref("local", "project"))
		s.SetAttributeValue("secret_id", cty.StringVal(sm.Secret))
		s.SetAttributeValue("labels", cty.MapVal(map[string]cty.Value{gce.LabelCluster: cty.StringVal(gce.LabelValue(src.Cluster.Name))}))
		s.AppendNewline()
		s.AppendNewBlock("replication", nil).Body().AppendNewBlock("auto", nil)
		body.AppendNewline()
		secretID = ref(gce.TFSecret, tfJoinSecretName, "secret_id")
	}
	comment(body,
		"The token renewer may add, list and disable versions, never destroy one.")
	rr := body.AppendNewBlock("resource", []string{gce.TFCustomRole, tfJoinSecretRenewerRole}).Body()
	rr.SetAttributeRaw("project", ref("local", "project"))
	rr.SetAttributeValue("role_id", cty.StringVal(customRoleIDFor(src.Cluster.Name, tfJoinSecretRenewerRole)))
	rr.SetAttributeValue("title", cty.StringVal("nodegen join-token renewer of "+src.Cluster.Name))
	rr.SetAttributeValue("description", cty.StringVal("Add, list and disable versions of the join token secret; no destroy."))
	rr.SetAttributeValue("permissions", strs(joinSecretRenewerPermissions))
	for _, g := range joinSecretGrants {
		body.AppendNewline()
		b := body.AppendNewBlock("resource", []string{gce.TFSecretIAMMember, tfJoinSecretName + "_" + g.Name}).Body()
		b.SetAttributeRaw("project", ref("local", "project"))
		b.SetAttributeRaw("secret_id", secretID)
		if g.SecretRole == "" {
			b.SetAttributeRaw("role", ref(gce.TFCustomRole, tfJoinSecretRenewerRole, "name"))
		} else {
			b.SetAttributeValue("role", cty.StringVal(g.SecretRole))
		}
		b.SetAttributeRaw("member", member(g.Role))
	}
	return hclFile(header, f)
}
