// Package terraform renders out/terraform, the cluster's Terraform module:
// the instance template and zonal MIGs of each cloud node group, the
// fixed-size groups' autohealing, the IAM of the node and autoscaler
// service accounts and of the join token's secret, the module's
// variables, outputs and provider requirements, and the east-west
// gateway's internal load balancer of a mesh cluster.
package terraform

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
)

// terraformName turns a GCE-style name (lower case, digits, '-') into a Terraform
// resource name. Group names and zones contain no '_', so the result is
// unique per input.
func terraformName(parts ...string) string {
	return strings.ReplaceAll(strings.Join(parts, "_"), "-", "_")
}

// terraformProviderConstraint is the google provider version constraint:
// 7.45.0 is the release whose schema the tests check the module against,
// deletion_policy of google_compute_instance_group_manager included (5.0
// is the first major release with the self_link_unique attribute and the
// labels model nodegen relies on).
const terraformProviderConstraint = ">= 7.45.0"

// terraformVPNVersionConstraint is the Terraform release a module with a
// VPN needs: write-only arguments (shared_secret_wo), from 1.11.
const terraformVPNVersionConstraint = ">= 1.11"

// migDeletionPolicyVariable is the module variable every MIG's
// deletion_policy reads, PREVENT by default: with it in the state,
// "When a 'terraform destroy' or 'terraform apply' would delete the
// instance, the command will fail" (hashicorp/google v7.45.0 provider
// schema, google_compute_instance_group_manager deletion_policy), also
// once the resource block left the configuration, unlike Terraform's
// lifecycle prevent_destroy.
const (
	migDeletionPolicyVariable = "mig_deletion_policy"
	migDeletionPolicyPrevent  = "PREVENT"
)

// defaultServiceAccountScopes are the scopes the node VMs get unless the
// module user sets service_account_scopes: Google recommends cloud-platform
// with permissions granted through IAM roles.
var defaultServiceAccountScopes = []string{"cloud-platform"}

// Terraform renders out/terraform into files: a module with one file per
// cloud node group (instance template and zonal MIGs), the cluster's
// project and region, its variables, outputs and provider requirements.
// It writes nothing for onprem groups.
func Terraform(src *model.Source, files layout.Files) error {
	header := layout.HashHeader
	main, err := terraformMain(src, header(src.Name))
	if err != nil {
		return err
	}
	files[layout.TerraformMainPath] = main
	files[layout.TerraformVersionsPath] = terraformVersions(src, header(src.Name))
	files[layout.TerraformVariablesPath] = terraformVariables(src, header(src.Name))
	files[layout.TerraformOutputsPath] = terraformOutputs(src, header(src.Name))
	files[layout.TerraformIAMPath] = terraformIAM(src, header(src.Name))
	if js := terraformJoinSecret(src, header(src.Name)); js != nil {
		files[layout.TerraformJoinSecretPath] = js
	}
	if src.Cluster.GCP.Network != nil {
		nw, err := terraformNetwork(src, header(src.Name))
		if err != nil {
			return err
		}
		files[layout.TerraformNetworkPath] = nw
		vpn, err := terraformVPN(src, header(src.Name))
		if err != nil {
			return err
		}
		if vpn != nil {
			files[layout.TerraformVPNPath] = vpn
		}
		files[layout.TerraformRootMainPath] = terraformRoot(src, header(src.Name))
	}
	cloud := src.CloudGroups()
	out := make([][]byte, len(cloud))
	errs := make([]error, len(cloud))
	par.Do(len(cloud), func(i int) {
		g := cloud[i]
		origin := src.Origins[g.Name]
		if origin == "" {
			origin = src.Name
		}
		if out[i], errs[i] = terraformGroup(src, g, header(origin)); errs[i] != nil {
			errs[i] = fmt.Errorf("node group %s: terraform: %w", g.Name, errs[i])
		}
	})
	for i, g := range cloud {
		if errs[i] != nil {
			return errs[i]
		}
		files[layout.TerraformGroupPath(g.Name)] = out[i]
	}
	return nil
}

// hclFile finishes a file: header, a blank line and the body, in
// canonical formatting. The body is formatted as File.Bytes formats it
// (formatHCL), as hclwrite.Format does, and the header's comment lines
// and the blank line end every alignment run, so the file is canonical
// without lexing and formatting it a second time (FuzzTerraformCanonical
// and the tests check that hclwrite.Format leaves every file as it is).
func hclFile(header string, f *hclwrite.File) []byte {
	body := formatHCL(f)
	out := make([]byte, 0, len(header)+1+len(body))
	out = append(append(append(out, header...), '\n'), body...)
	return out
}

// comment appends one "# " comment line per element of lines. A line
// must not hold a line break (it would end the comment and make the rest
// live HCL): free text goes through hclQuoted first. comment refuses to
// write one, so a mistake here is a crash in the tests, never an
// injection in a user's module.
func comment(body *hclwrite.Body, lines ...string) {
	for _, l := range lines {
		if strings.ContainsAny(l, "\n\r") {
			panic(fmt.Sprintf("render: comment line with a line break: %q", l))
		}
		body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte("# " + l + "\n")}})
	}
}

// hclQuoted writes free text as an HCL quoted string literal (the bytes
// hclwrite gives a cty string: line breaks, quotes, backslashes, control
// and non-printing characters escaped), so that it is safe in a comment.
func hclQuoted(s string) string {
	return string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes())
}

func traversal(root string, attrs ...string) hcl.Traversal {
	t := hcl.Traversal{hcl.TraverseRoot{Name: root}}
	for _, a := range attrs {
		t = append(t, hcl.TraverseAttr{Name: a})
	}
	return t
}

func ref(root string, attrs ...string) hclwrite.Tokens {
	return hclwrite.TokensForTraversal(traversal(root, attrs...))
}

func strs(list []string) cty.Value {
	if len(list) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(list))
	for i, s := range list {
		vals[i] = cty.StringVal(s)
	}
	return cty.ListVal(vals)
}

func terraformMain(src *model.Source, header string) ([]byte, error) {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	comment(body,
		"The project and region come from the source: the Cluster Autoscaler's",
		"--nodes flags name these MIGs by project, zone and name, so they are",
		"fixed here and not variables.")
	locals := body.AppendNewBlock("locals", nil).Body()
	locals.SetAttributeValue("project", cty.StringVal(src.Cluster.GCP.Project))
	locals.SetAttributeValue("region", cty.StringVal(src.Cluster.GCP.Region))
	return hclFile(header, f), nil
}

func terraformVersions(src *model.Source, header string) []byte {
	f := hclwrite.NewEmptyFile()
	tf := f.Body().AppendNewBlock("terraform", nil).Body()
	if n := src.Cluster.GCP.Network; n != nil && n.VPN != nil {
		// vpn.tf's pre-shared keys: an ephemeral resource (Terraform 1.10)
		// into write-only arguments (Terraform 1.11).
		tf.SetAttributeValue("required_version", cty.StringVal(terraformVPNVersionConstraint))
	}
	rp := tf.AppendNewBlock("required_providers", nil).Body()
	rp.SetAttributeValue("google", cty.ObjectVal(map[string]cty.Value{
		"source":  cty.StringVal("hashicorp/google"),
		"version": cty.StringVal(terraformProviderConstraint),
	}))
	return hclFile(header, f)
}

// terraformVariable is one input of the module.
type terraformVariable struct {
	name, doc string
	typ       hclwrite.Tokens
	def       *cty.Value // nil: required
	notNull   bool       // nullable = false: null is refused too
}

// networkVariable is the network variable: required (and not null) when
// a rendered resource names it, a firewall rule (network.tf, or the
// health checks' of an autohealed group); optional otherwise, as the
// instance templates' network_interface infers it from the subnetwork.
func networkVariable(src *model.Source) terraformVariable {
	if needsNetwork(src) {
		return terraformVariable{name: "network", typ: hclwrite.TokensForIdentifier("string"), notNull: true,
			doc: "VPC network of the subnetwork (name or self link). Required: the firewall rules name it (the health checks' of the autohealed groups, and network.tf's)."}
	}
	null := cty.NullVal(cty.String)
	return terraformVariable{name: "network", typ: hclwrite.TokensForIdentifier("string"), def: &null,
		doc: "Network of the subnetwork; null lets Compute Engine infer it from the subnetwork."}
}

// terraformRootModuleSource is the root module's source of the module:
// out/terraform, the root module's parent directory.
const terraformRootModuleSource = "../"

// terraformRoot renders out/terraform/root/main.tf: the provider with the
// source's project and region, a commented backend, and the module block
// with every variable the source sets (the network's names), then the
// module's outputs.
// networkResource is the name of the root module's network and
// subnetwork resources, when nodegen creates them.
const networkResource = "nodes"

func terraformRoot(src *model.Source, header string) []byte {
	c := &src.Cluster
	n := c.GCP.Network
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	comment(body,
		"The root module of cluster "+hclQuoted(c.Name)+": run terraform init and apply here.",
		"Every value comes from the source; edit the source and run nodegen gen,",
		"not this file. Copy it elsewhere only with source pointing here.")
	tf := body.AppendNewBlock("terraform", nil).Body()
	rp := tf.AppendNewBlock("required_providers", nil).Body()
	rp.SetAttributeValue("google", cty.ObjectVal(map[string]cty.Value{
		"source":  cty.StringVal("hashicorp/google"),
		"version": cty.StringVal(terraformProviderConstraint),
	}))
	tf.AppendNewline()
	if st := c.GCP.TerraformState; st != nil {
		comment(tf, "The state and its lock in a Cloud Storage bucket (cluster.gcp.terraformState).")
		b := tf.AppendNewBlock("backend", []string{"gcs"}).Body()
		b.SetAttributeValue("bucket", cty.StringVal(st.Bucket))
		b.SetAttributeValue("prefix", cty.StringVal(c.StatePrefix()))
	} else {
		comment(tf,
			"State is local (terraform.tfstate here): set cluster.gcp.terraformState",
			"in the source to keep it in a Cloud Storage bucket (a backend \"gcs\").")
	}
	body.AppendNewline()
	p := body.AppendNewBlock("provider", []string{"google"}).Body()
	p.SetAttributeValue("project", cty.StringVal(c.GCP.Project))
	p.SetAttributeValue("region", cty.StringVal(c.GCP.Region))
	network, subnetwork := hclwrite.TokensForValue(cty.StringVal(n.Name)), hclwrite.TokensForValue(cty.StringVal(n.Subnetwork))
	if n.Create {
		body.AppendNewline()
		comment(body,
			"The network and the subnetwork of the cloud nodes (cluster.gcp.network.create).",
			"The module names them by reference: Terraform creates them before the",
			"firewall rules, the NAT, the VPN and the VMs that use them. The nodes",
			"have no external IP: they reach Google APIs by Private Google Access.")
		nb := body.AppendNewBlock("resource", []string{gce.TFNetwork, networkResource}).Body()
		nb.SetAttributeValue("name", cty.StringVal(n.Name))
		nb.SetAttributeValue("auto_create_subnetworks", cty.False)
		nb.SetAttributeValue("mtu", cty.NumberIntVal(int64(n.MTU)))
		body.AppendNewline()
		sb := body.AppendNewBlock("resource", []string{gce.TFSubnetwork, networkResource}).Body()
		sb.SetAttributeValue("name", cty.StringVal(n.Subnetwork))
		sb.SetAttributeValue("region", cty.StringVal(c.GCP.Region))
		sb.SetAttributeRaw("network", ref(gce.TFNetwork, networkResource, "id"))
		sb.SetAttributeValue("ip_cidr_range", cty.StringVal(n.SubnetworkRange))
		sb.SetAttributeValue("private_ip_google_access", cty.True)
		network, subnetwork = ref(gce.TFNetwork, networkResource, "name"), ref(gce.TFSubnetwork, networkResource, "name")
	}
	body.AppendNewline()
	m := body.AppendNewBlock("module", []string{layout.TerraformModuleCall}).Body()
	m.SetAttributeValue("source", cty.StringVal(terraformRootModuleSource))
	m.AppendNewline()
	m.SetAttributeRaw("network", network)
	m.SetAttributeRaw("subnetwork", subnetwork)
	if n.Project != "" {
		m.SetAttributeValue("subnetwork_project", cty.StringVal(n.Project))
	}
	comment(m,
		"Optional: service_account_scopes, network_tags, and",
		"nodes_service_account_email and autoscaler_service_account_email",
		"(bring your own accounts; by default the module creates them).")
	outputs := []string{"instance_groups", "instance_templates"}
	if n.VPN != nil {
		// cluster.gcp.network.vpn.haVpnAddresses, after the first apply.
		outputs = append(outputs, layout.VPNAddressesOutput)
	}
	for _, o := range outputs {
		body.AppendNewline()
		ob := body.AppendNewBlock("output", []string{o}).Body()
		ob.SetAttributeRaw("value", ref("module", layout.TerraformModuleCall, o))
	}
	return hclFile(header, f)
}

func terraformVariables(src *model.Source, header string) []byte {
	str := hclwrite.TokensForIdentifier("string")
	listStr := hclwrite.TokensForFunctionCall("list", hclwrite.TokensForIdentifier("string"))
	null := cty.NullVal(cty.String)
	scopes := strs(defaultServiceAccountScopes)
	empty := cty.ListValEmpty(cty.String)
	prevent := cty.StringVal(migDeletionPolicyPrevent)
	saDoc := map[string]string{
		model.RoleNodes:      "Email of an existing service account for the nodes (every cloud node group but the autoscaler's); null creates one.",
		model.RoleAutoscaler: "Email of an existing service account for the Cluster Autoscaler's node; null creates one. Use another account than the nodes'.",
	}
	for role := range saDoc {
		saDoc[role] += " nodegen grants it its roles (see iam.tf) either way."
	}
	vars := []terraformVariable{
		{name: "subnetwork", typ: str, doc: fmt.Sprintf("Subnetwork (name or self link) in %s for the nodes' network interface. It must reach the control plane %s over the VPN.", src.Cluster.GCP.Region, src.Cluster.ControlPlaneEndpoint)},
		{name: "subnetwork_project", typ: str, def: &null, doc: fmt.Sprintf("Project of the subnetwork, for a Shared VPC; null means %s.", src.Cluster.GCP.Project)},
		networkVariable(src),
		{name: serviceAccountVariable(model.RoleNodes), typ: str, def: &null, doc: saDoc[model.RoleNodes]},
		{name: serviceAccountVariable(model.RoleAutoscaler), typ: str, def: &null, doc: saDoc[model.RoleAutoscaler]},
		{name: "service_account_scopes", typ: listStr, def: &scopes, doc: "OAuth scopes of the node VMs' service account; grant permissions with IAM roles instead of narrowing scopes."},
		{name: "network_tags", typ: listStr, def: &empty, doc: "Network tags of the node VMs, for firewall rules (e.g. the ones that let the VPN reach the kubelet)."},
		{name: migDeletionPolicyVariable, typ: str, def: &prevent, notNull: true, doc: "deletion_policy of every MIG: PREVENT, terraform apply refuses to delete a MIG (nodegen rollout drains and deletes one whose zone or group left the source); DELETE only to tear the module down: apply with it, then destroy."},
	}
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	for i, v := range vars {
		if i > 0 {
			body.AppendNewline()
		}
		b := body.AppendNewBlock("variable", []string{v.name}).Body()
		b.SetAttributeValue("description", cty.StringVal(v.doc))
		b.SetAttributeRaw("type", v.typ)
		if v.def != nil {
			b.SetAttributeValue("default", *v.def)
		}
		if v.notNull {
			b.SetAttributeValue("nullable", cty.False)
		}
	}
	return hclFile(header, f)
}

func terraformOutputs(src *model.Source, header string) []byte {
	var migs, templates []hclwrite.ObjectAttrTokens
	for _, g := range src.CloudGroups() {
		templates = append(templates, hclwrite.ObjectAttrTokens{
			Name:  hclwrite.TokensForValue(cty.StringVal(g.Name)),
			Value: ref(gce.TFInstanceTemplate, terraformName(g.Name), "self_link_unique"),
		})
		for _, z := range g.Zones {
			migs = append(migs, hclwrite.ObjectAttrTokens{
				Name:  hclwrite.TokensForValue(cty.StringVal(src.Cluster.MIGName(g, z))),
				Value: ref(gce.TFGroupManager, terraformName(g.Name, z), "instance_group"),
			})
		}
	}
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	o := body.AppendNewBlock("output", []string{"instance_groups"}).Body()
	o.SetAttributeValue("description", cty.StringVal("Instance-group URL of every MIG, by MIG name: the URLs the Cluster Autoscaler's --nodes flags name."))
	o.SetAttributeRaw("value", objectTokens(migs))
	body.AppendNewline()
	o = body.AppendNewBlock("output", []string{"instance_templates"}).Body()
	o.SetAttributeValue("description", cty.StringVal("Current instance template of every cloud node group, by group name."))
	o.SetAttributeRaw("value", objectTokens(templates))
	for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
		body.AppendNewline()
		o = body.AppendNewBlock("output", []string{serviceAccountLocal(role)}).Body()
		o.SetAttributeValue("description", cty.StringVal(fmt.Sprintf("Email of the service account of %s.", fmt.Sprintf(roleDoc[role], src.Cluster.Name))))
		o.SetAttributeRaw("value", ref("local", serviceAccountLocal(role)))
	}
	return hclFile(header, f)
}

// safePathRE matches the artifact paths moduleFile may embed without
// escaping (no quote, backslash, '$' or '%').
var safePathRE = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)

func terraformGroup(src *model.Source, g *model.NodeGroup, header string) ([]byte, error) {
	c := &src.Cluster
	w := &hclText{b: make([]byte, 0, 4096)}
	what := g.Kind
	if g.Description != "" {
		what += ": " + hclQuoted(g.Description)
	}
	w.comment(fmt.Sprintf("Node group %s (%s).", g.Name, what))
	if g.Autoscaled() {
		w.comment("The Cluster Autoscaler sizes its MIGs; Terraform only creates them.")
	}

	tmplName := terraformName(g.Name)
	if err := instanceTemplate(w, g, src.InstanceTemplate(g), tmplName); err != nil {
		return nil, err
	}

	for _, z := range g.Zones {
		w.blank()
		w.open("resource", gce.TFGroupManager, terraformName(g.Name, z))
		w.attr("project", hclRef("local", "project"))
		w.attr("zone", hclString(z))
		w.attr("name", hclString(c.MIGName(g, z)))
		w.attr("base_instance_name", hclString(c.BaseInstanceName(g)))
		size := g.Min
		if !g.Autoscaled() {
			size = g.Max
		}
		w.attr("target_size", hclInt(int64(size)))

		w.blank()
		w.open("version")
		w.attr("name", hclString(g.Name))
		w.attr("instance_template", hclRef(gce.TFInstanceTemplate, tmplName, "self_link_unique"))
		w.close()

		w.blank()
		updatePolicy(w)

		w.blank()
		w.comment("Terraform never deletes the MIG, whose VMs would go undrained, not",
			"even once its zone or group left the source: nodegen rollout drains",
			"and deletes its nodes, then the MIG. The policy is read from the state.")
		w.attr("deletion_policy", hclRef("var", migDeletionPolicyVariable))

		w.blank()
		if g.Autoscaled() {
			w.comment("target_size is the initial size (min); the autoscaler owns it afterwards.")
		} else {
			w.comment("target_size is the initial size (max); nodegen rollout's surge",
				"raises it for a batch, which an apply must not undo: rollout says",
				"when the MIG's size differs from the source's.")
		}
		w.open("lifecycle")
		w.attr("ignore_changes", hclList("target_size"))
		w.close()
		autohealingPolicy(w, c, g)
		w.close()
	}
	autohealingResources(w, c, g)
	return w.file(header)
}

// moduleFileText is the expression file("${path.module}/<rel>") for a rel
// that safePathRE admits.
func moduleFileText(rel string) string {
	return hclCall("file", `"${path.module}/`+rel+`"`)
}

// instanceTemplate writes the resource of the cloud group g's instance
// template t, named name.
func instanceTemplate(w *hclText, g *model.NodeGroup, t *model.InstanceTemplate, name string) error {
	p := &t.Properties
	w.open("resource", gce.TFInstanceTemplate, name)
	w.attr("project", hclRef("local", "project"))
	w.attr("region", hclRef("local", "region"))
	w.attr("name_prefix", hclString(t.NamePrefix))
	w.attr("description", hclString(t.Description))
	w.attr("machine_type", hclString(p.MachineType))
	var entries []hclLine
	for _, k := range model.SortedKeys(p.Labels) {
		entries = append(entries, hclLine{hclKey(k), hclString(p.Labels[k])})
	}
	w.object("labels", entries)
	var meta []hclLine
	for _, it := range p.Metadata {
		// Quoted although an identifier, as hclwrite writes a string key.
		if !it.Rendered {
			meta = append(meta, hclLine{hclString(it.Key), hclString(it.Value)})
			continue
		}
		f := it.RenderedPath(g.Name)
		if f == "" {
			return fmt.Errorf("metadata %s: no artifact renders it", it.Key)
		}
		if !safePathRE.MatchString(f) {
			return fmt.Errorf("artifact path %q cannot be embedded in HCL", f)
		}
		meta = append(meta, hclLine{hclString(it.Key), moduleFileText("../" + f)})
	}
	w.object("metadata", meta)
	tags := hclRef("var", "network_tags")
	if len(p.Tags) > 0 {
		tags = hclCall("concat", tags, hclStrings(p.Tags))
	}
	w.attr("tags", tags)

	for _, d := range p.Disks {
		w.blank()
		w.open("disk")
		if d.Boot {
			w.attr("source_image", hclString(d.InitializeParams.SourceImage))
			w.attr("disk_size_gb", hclInt(d.InitializeParams.DiskSizeGb))
			w.attr("disk_type", hclString(d.InitializeParams.DiskType))
			w.attr("boot", hclBool(true))
		} else {
			w.attr("type", hclString(d.Type))
			w.attr("disk_type", hclString(d.InitializeParams.DiskType))
			w.attr("interface", hclString(d.Interface))
			w.attr("disk_size_gb", hclInt(d.InitializeParams.DiskSizeGb))
		}
		w.attr("auto_delete", hclBool(d.AutoDelete))
		w.close()
	}

	w.blank()
	w.open("network_interface")
	w.attr("network", hclRef("var", "network"))
	w.attr("subnetwork", hclRef("var", "subnetwork"))
	w.attr("subnetwork_project", hclCall("coalesce", hclRef("var", "subnetwork_project"), hclRef("local", "project")))
	w.close()

	w.blank()
	w.open("service_account")
	w.attr("email", hclRef("local", serviceAccountLocal(p.ServiceAccountRole)))
	w.attr("scopes", hclRef("var", "service_account_scopes"))
	w.close()

	for _, a := range p.GuestAccelerators {
		w.blank()
		w.open("guest_accelerator")
		w.attr("type", hclString(a.AcceleratorType))
		w.attr("count", hclInt(a.AcceleratorCount))
		w.close()
	}
	if s := schedulingLines(p.Scheduling); len(s) > 0 {
		w.blank()
		w.open("scheduling")
		for _, kv := range s {
			w.attr(kv.name, kv.value)
		}
		w.close()
	}

	w.blank()
	w.open("lifecycle")
	w.attr("create_before_destroy", hclBool(true))
	w.close()
	w.close()
	return nil
}

// schedulingLines returns the scheduling block's attributes, none for
// Compute Engine's default scheduling.
func schedulingLines(s model.Scheduling) []hclLine {
	var out []hclLine
	if s.ProvisioningModel != "" {
		out = append(out,
			hclLine{"provisioning_model", hclString(s.ProvisioningModel)},
			hclLine{"preemptible", hclBool(s.Preemptible)})
		if s.AutomaticRestart != nil {
			out = append(out, hclLine{"automatic_restart", hclBool(*s.AutomaticRestart)})
		}
		out = append(out, hclLine{"on_host_maintenance", hclString(s.OnHostMaintenance)})
		if s.InstanceTerminationAction != "" {
			out = append(out, hclLine{"instance_termination_action", hclString(s.InstanceTerminationAction)})
		}
		return out
	}
	if s.OnHostMaintenance != "" {
		out = append(out, hclLine{"on_host_maintenance", hclString(s.OnHostMaintenance)})
	}
	if s.AutomaticRestart != nil {
		out = append(out, hclLine{"automatic_restart", hclBool(*s.AutomaticRestart)})
	}
	return out
}
