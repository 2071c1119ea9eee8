package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rogpeppe/go-internal/diff"
	"github.com/zclconf/go-cty/cty"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/model"
)

// errUnread is readTemplate's error when an expression has a free leaf
// where the reader does not read one: the file is then parsed in full.
var errUnread = errors.New("an expression the shape does not read")

// tfBlock is a top-level block of a group's .tf file with the values
// its expressions read.
type tfBlock struct {
	block *hclsyntax.Block
	vals  tfValues
}

// tfValues reads the expressions of a reference's block as they read in
// a segment of its shape whose leaves are vals; with vals nil (the
// reference itself, or a block parsed in full) as the parser built them.
type tfValues struct {
	seg  *tfSeg
	vals [][]byte
}

// leaf is the bytes of the free leaf that spans exactly [start, end) of
// the segment, when vals replaces the leaves.
func (v tfValues) leaf(start, end int) ([]byte, bool) {
	if v.vals == nil {
		return nil, false
	}
	k, ok := v.seg.byStart[start]
	if !ok || v.seg.all[k].endOffset != end {
		return nil, false
	}
	return v.vals[k], true
}

// fixed tells whether no leaf that vals replaces lies in rng: the
// expression there reads as the parser built it.
func (v tfValues) fixed(rng hcl.Range) bool {
	if v.vals == nil {
		return true
	}
	for _, f := range v.seg.all {
		if f.offset < rng.End.Byte && f.endOffset > rng.Start.Byte {
			return false
		}
	}
	return true
}

// tfReader decodes expressions of a block into Go values; the first
// error stays (errUnread before any other).
type tfReader struct {
	v   tfValues
	err error
}

func (r *tfReader) fail(rng hcl.Range, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%d:%d: %s", rng.Start.Line, rng.Start.Column, fmt.Sprintf(format, args...))
	}
}

func (r *tfReader) unread() { r.err = errUnread }

// literal is the value of an expression with no free leaf in it that
// evaluates without variables or functions.
func (r *tfReader) literal(e hclsyntax.Expression, want cty.Type, what string) (cty.Value, bool) {
	if !r.v.fixed(e.Range()) {
		r.unread()
		return cty.NilVal, false
	}
	v, d := e.Value(nil)
	if d.HasErrors() || !v.Type().Equals(want) || !v.IsKnown() || v.IsNull() {
		r.fail(e.Range(), "%s is not a %s literal", what, want.FriendlyName())
		return cty.NilVal, false
	}
	return v, true
}

// str reads a quoted string.
func (r *tfReader) str(e hclsyntax.Expression, what string) string {
	if t, ok := e.(*hclsyntax.TemplateExpr); ok && len(t.Parts) == 1 {
		if lit, ok := t.Parts[0].(*hclsyntax.LiteralValueExpr); ok {
			if b, ok := r.v.leaf(lit.SrcRange.Start.Byte, lit.SrcRange.End.Byte); ok {
				return string(b) // a leaf holds no escape
			}
		}
	}
	if v, ok := r.literal(e, cty.String, what); ok {
		return v.AsString()
	}
	return ""
}

// num reads a whole number.
func (r *tfReader) num(e hclsyntax.Expression, what string) int64 {
	if lit, ok := e.(*hclsyntax.LiteralValueExpr); ok {
		if b, ok := r.v.leaf(lit.SrcRange.Start.Byte, lit.SrcRange.End.Byte); ok {
			n, err := strconv.ParseInt(string(b), 10, 64)
			if err != nil {
				r.fail(lit.SrcRange, "%s: %v", what, err)
			}
			return n
		}
	}
	v, ok := r.literal(e, cty.Number, what)
	if !ok {
		return 0
	}
	n, acc := v.AsBigFloat().Int64()
	if acc != big.Exact {
		r.fail(e.Range(), "%s is not a whole number", what)
	}
	return n
}

// boolean reads true or false (identifiers, never free leaves).
func (r *tfReader) boolean(e hclsyntax.Expression, what string) bool {
	v, ok := r.literal(e, cty.Bool, what)
	return ok && v.True()
}

// ref reads a reference to a variable's, local's or path's attribute, as
// "var.x", "local.x" or "path.module".
func (r *tfReader) ref(e hclsyntax.Expression, what string) string {
	t, ok := e.(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(t.Traversal) != 2 {
		r.fail(e.Range(), "%s is not a reference like local.name", what)
		return ""
	}
	root, ok1 := t.Traversal[0].(hcl.TraverseRoot)
	attr, ok2 := t.Traversal[1].(hcl.TraverseAttr)
	if !ok1 || !ok2 {
		r.fail(e.Range(), "%s is not a reference like local.name", what)
		return ""
	}
	name := attr.Name
	// The attribute's range starts at its dot; the leaf is its name.
	if b, ok := r.v.leaf(attr.SrcRange.Start.Byte+1, attr.SrcRange.End.Byte); ok {
		name = string(b)
	} else if !r.v.fixed(attr.SrcRange) {
		r.unread()
	}
	return root.Name + "." + name
}

// key reads an object's key: an identifier or a quoted string.
func (r *tfReader) key(e hclsyntax.Expression, what string) string {
	if k, ok := e.(*hclsyntax.ObjectConsKeyExpr); ok {
		if name := hcl.ExprAsKeyword(k.Wrapped); name != "" {
			return name
		}
		return r.str(k.Wrapped, what+"'s key")
	}
	return r.str(e, what+"'s key")
}

// strings reads a list of quoted strings.
func (r *tfReader) strings(e hclsyntax.Expression, what string) []string {
	t, ok := e.(*hclsyntax.TupleConsExpr)
	if !ok {
		r.fail(e.Range(), "%s is not a list", what)
		return nil
	}
	var out []string
	for _, x := range t.Exprs {
		out = append(out, r.str(x, what))
	}
	return out
}

// call reads a call of the function name with n arguments.
func (r *tfReader) call(e hclsyntax.Expression, name string, n int, what string) []hclsyntax.Expression {
	c, ok := e.(*hclsyntax.FunctionCallExpr)
	if !ok || c.Name != name || len(c.Args) != n || c.ExpandFinal {
		r.fail(e.Range(), "%s is not a call of %s with %d arguments", what, name, n)
		return nil
	}
	return c.Args
}

// attributes are a body's attributes in the order written.
func attributes(b *hclsyntax.Body) []*hclsyntax.Attribute {
	out := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *hclsyntax.Attribute) int { return a.SrcRange.Start.Byte - b.SrcRange.Start.Byte })
	return out
}

// readTemplate reads the one instance template among the top-level
// blocks of group's .tf file back into the typed template, as the
// render/terraform family writes it from model.InstanceTemplate. An
// attribute or block it does not know is an error: whatever the
// resource sets is in what it reads, and so is compared with the
// model's template.
func readTemplate(blocks []tfBlock) (*model.InstanceTemplate, []string, error) {
	var tb *tfBlock
	for i := range blocks {
		b := blocks[i].block
		if b.Type == "resource" && len(b.Labels) == 2 && b.Labels[0] == gce.TFInstanceTemplate {
			if tb != nil {
				return nil, nil, fmt.Errorf("more than one %s", gce.TFInstanceTemplate)
			}
			tb = &blocks[i]
		}
	}
	if tb == nil {
		return nil, nil, fmt.Errorf("no %s", gce.TFInstanceTemplate)
	}
	r := &tfReader{v: tb.vals}
	var rendered []string
	t := &model.InstanceTemplate{}
	p := &t.Properties
	for _, a := range attributes(tb.block.Body) {
		switch a.Name {
		case "project", "region":
			if got := r.ref(a.Expr, a.Name); r.err == nil && got != "local."+a.Name {
				r.fail(a.SrcRange, "%s is %s, want local.%s", a.Name, got, a.Name)
			}
		case "name_prefix":
			t.NamePrefix = r.str(a.Expr, a.Name)
		case "description":
			t.Description = r.str(a.Expr, a.Name)
		case "machine_type":
			p.MachineType = r.str(a.Expr, a.Name)
		case "labels":
			p.Labels = r.labels(a)
		case "metadata":
			p.Metadata, rendered = r.metadata(a)
		case "tags":
			p.Tags = r.tags(a)
		default:
			r.fail(a.SrcRange, "attribute %s of the instance template is not read back", a.Name)
		}
	}
	for _, b := range tb.block.Body.Blocks {
		switch b.Type {
		case "disk":
			p.Disks = append(p.Disks, r.disk(b.Body))
		case "guest_accelerator":
			var acc model.AcceleratorConfig
			r.each(b.Body, map[string]func(e hclsyntax.Expression){
				"type":  func(e hclsyntax.Expression) { acc.AcceleratorType = r.str(e, "guest_accelerator.type") },
				"count": func(e hclsyntax.Expression) { acc.AcceleratorCount = r.num(e, "guest_accelerator.count") },
			})
			p.GuestAccelerators = append(p.GuestAccelerators, acc)
		case "scheduling":
			p.Scheduling = r.scheduling(b.Body)
		case "service_account":
			r.each(b.Body, map[string]func(e hclsyntax.Expression){
				"email": func(e hclsyntax.Expression) {
					ref := r.ref(e, "service_account.email")
					role, ok := strings.CutPrefix(ref, "local.")
					if role, ok = strings.CutSuffix(role, gce.TFServiceAccountEmailSuffix); !ok && r.err == nil {
						r.fail(e.Range(), "service_account.email is %s, not a role's local.<role>%s", ref, gce.TFServiceAccountEmailSuffix)
					}
					p.ServiceAccountRole = role
				},
				"scopes": func(hclsyntax.Expression) {}, // the user's (a variable)
			})
		case "network_interface", "lifecycle":
			// The user's network (variables) and Terraform's own
			// lifecycle: not properties nodegen decides.
		default:
			r.fail(b.TypeRange, "block %s of the instance template is not read back", b.Type)
		}
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return t, rendered, nil
}

// each reads every attribute of body with its reader; an attribute
// without one is an error.
func (r *tfReader) each(body *hclsyntax.Body, read map[string]func(hclsyntax.Expression)) {
	for _, a := range attributes(body) {
		f, ok := read[a.Name]
		if !ok {
			r.fail(a.SrcRange, "attribute %s is not read back", a.Name)
			continue
		}
		f(a.Expr)
	}
	if len(body.Blocks) > 0 {
		r.fail(body.Blocks[0].TypeRange, "block %s is not read back", body.Blocks[0].Type)
	}
}

// labels reads the labels object.
func (r *tfReader) labels(a *hclsyntax.Attribute) map[string]string {
	o, ok := a.Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		r.fail(a.SrcRange, "labels is not an object")
		return nil
	}
	out := make(map[string]string, len(o.Items))
	for _, it := range o.Items {
		out[r.key(it.KeyExpr, "labels")] = r.str(it.ValueExpr, "a label's value")
	}
	return out
}

// metadata reads the metadata object: a literal value, or a rendered
// artifact, file("${path.module}/../<path>"), whose paths it returns too.
func (r *tfReader) metadata(a *hclsyntax.Attribute) ([]model.MetadataItem, []string) {
	o, ok := a.Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		r.fail(a.SrcRange, "metadata is not an object")
		return nil, nil
	}
	var out []model.MetadataItem
	var paths []string
	for _, it := range o.Items {
		key := r.key(it.KeyExpr, "metadata")
		if _, isCall := it.ValueExpr.(*hclsyntax.FunctionCallExpr); !isCall {
			out = append(out, model.MetadataItem{Key: key, Value: r.str(it.ValueExpr, "metadata "+key)})
			continue
		}
		args := r.call(it.ValueExpr, "file", 1, "metadata "+key)
		if args == nil {
			continue
		}
		tmpl, ok := args[0].(*hclsyntax.TemplateExpr)
		if !ok || len(tmpl.Parts) != 2 {
			r.fail(args[0].Range(), `metadata %s reads no "${path.module}/<path>"`, key)
			continue
		}
		dir := r.ref(tmpl.Parts[0], "metadata "+key+"'s directory")
		rel := r.str(&hclsyntax.TemplateExpr{Parts: tmpl.Parts[1:], SrcRange: tmpl.Parts[1].Range()}, "metadata "+key+"'s path")
		path, ok := strings.CutPrefix(rel, "/../")
		if r.err == nil && (dir != "path.module" || !ok) {
			r.fail(args[0].Range(), `metadata %s reads "${%s}%s", not "${path.module}/../<path>"`, key, dir, rel)
		}
		out = append(out, model.MetadataItem{Key: key, Rendered: true})
		paths = append(paths, path)
	}
	return out, paths
}

// tags reads var.network_tags, with nodegen's own tags concatenated.
func (r *tfReader) tags(a *hclsyntax.Attribute) []string {
	e := a.Expr
	var own []string
	if _, isCall := e.(*hclsyntax.FunctionCallExpr); isCall {
		args := r.call(e, "concat", 2, "tags")
		if args == nil {
			return nil
		}
		e, own = args[0], r.strings(args[1], "tags")
	}
	if got := r.ref(e, "tags"); r.err == nil && got != "var.network_tags" {
		r.fail(e.Range(), "tags are %s, want var.network_tags", got)
	}
	return own
}

// disk reads a disk block. A disk without type is PERSISTENT, the API's
// default (compute/v1 AttachedDisk.type: "If not specified, the default
// is PERSISTENT").
func (r *tfReader) disk(body *hclsyntax.Body) model.AttachedDisk {
	d := model.AttachedDisk{Type: model.DiskPersistent}
	ip := &d.InitializeParams
	r.each(body, map[string]func(e hclsyntax.Expression){
		"boot":         func(e hclsyntax.Expression) { d.Boot = r.boolean(e, "disk.boot") },
		"auto_delete":  func(e hclsyntax.Expression) { d.AutoDelete = r.boolean(e, "disk.auto_delete") },
		"type":         func(e hclsyntax.Expression) { d.Type = r.str(e, "disk.type") },
		"interface":    func(e hclsyntax.Expression) { d.Interface = r.str(e, "disk.interface") },
		"source_image": func(e hclsyntax.Expression) { ip.SourceImage = r.str(e, "disk.source_image") },
		"disk_size_gb": func(e hclsyntax.Expression) { ip.DiskSizeGb = r.num(e, "disk.disk_size_gb") },
		"disk_type":    func(e hclsyntax.Expression) { ip.DiskType = r.str(e, "disk.disk_type") },
	})
	return d
}

// scheduling reads the scheduling block.
func (r *tfReader) scheduling(body *hclsyntax.Body) model.Scheduling {
	var s model.Scheduling
	r.each(body, map[string]func(e hclsyntax.Expression){
		"provisioning_model": func(e hclsyntax.Expression) { s.ProvisioningModel = r.str(e, "scheduling.provisioning_model") },
		"preemptible":        func(e hclsyntax.Expression) { s.Preemptible = r.boolean(e, "scheduling.preemptible") },
		"automatic_restart": func(e hclsyntax.Expression) {
			b := r.boolean(e, "scheduling.automatic_restart")
			s.AutomaticRestart = &b
		},
		"on_host_maintenance": func(e hclsyntax.Expression) { s.OnHostMaintenance = r.str(e, "scheduling.on_host_maintenance") },
		"instance_termination_action": func(e hclsyntax.Expression) {
			s.InstanceTerminationAction = r.str(e, "scheduling.instance_termination_action")
		},
	})
	return s
}

// sameTemplate requires the instance template that group's .tf file reads
// back to be want, the one the model builds: equal as the revision hashes
// it (its JSON), each Rendered metadata item reading the group's artifact.
func sameTemplate(want *model.InstanceTemplate, group string, tf tfRead) error {
	if tf.err != nil {
		return fmt.Errorf("instance template: %w", tf.err)
	}
	got := tf.template
	i := 0
	for _, it := range got.Properties.Metadata {
		if !it.Rendered {
			continue
		}
		if p := it.RenderedPath(group); tf.rendered[i] != p {
			return fmt.Errorf("instance template: metadata %s reads %s, not the group's %s", it.Key, tf.rendered[i], p)
		}
		i++
	}
	w, err := json.Marshal(want)
	if err != nil {
		return err
	}
	g, err := json.Marshal(got)
	if err != nil {
		return err
	}
	if bytes.Equal(w, g) {
		return nil
	}
	w, _ = json.MarshalIndent(want, "", "  ")
	g, _ = json.MarshalIndent(got, "", "  ")
	return fmt.Errorf("the instance template reads back other than the model builds it:\n%s", diff.Diff("model", w, "terraform", g))
}
