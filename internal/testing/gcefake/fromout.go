package gcefake

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/gocty"
)

// FromOut reads the instance templates and zonal MIGs of a rendered
// output directory (the Terraform of out/terraform/, parsed with
// hclparse; each template's metadata read through its file() calls from
// out/gce/, byte for byte) into s. Only google_compute_instance_template
// and google_compute_instance_group_manager resources are read; the
// attributes read must be literal or file() calls.
func FromOut(s *Server, outDir string) error {
	tfDir := filepath.Join(outDir, "terraform")
	entries, err := os.ReadDir(tfDir)
	if err != nil {
		return err
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(tfDir)})},
		Functions: map[string]function.Function{"file": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}},
			Type:   function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				b, err := os.ReadFile(args[0].AsString())
				if err != nil {
					return cty.NilVal, err
				}
				return cty.StringVal(string(b)), nil
			},
		})},
	}
	p := hclparse.NewParser()
	templates := map[string]*Template{} // by resource name
	type migRes struct {
		mig      *MIG
		template string // resource name
	}
	var migs []migRes
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tf") {
			continue
		}
		f, diags := p.ParseHCLFile(filepath.Join(tfDir, e.Name()))
		if diags.HasErrors() {
			return diags
		}
		content, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "resource", LabelNames: []string{"type", "name"}}}})
		if diags.HasErrors() {
			return diags
		}
		for _, b := range content.Blocks {
			switch b.Labels[0] {
			case "google_compute_instance_template":
				t, err := readTemplate(b.Body, ctx)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", e.Name(), b.Labels[1], err)
				}
				templates[b.Labels[1]] = t
			case "google_compute_instance_group_manager":
				m, tmpl, err := readMIG(b.Body, ctx)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", e.Name(), b.Labels[1], err)
				}
				m.Project = s.Project
				migs = append(migs, migRes{m, tmpl})
			}
		}
	}
	for _, t := range templates {
		s.AddTemplate(t)
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i].mig.Name < migs[j].mig.Name })
	for _, m := range migs {
		t := templates[m.template]
		if t == nil {
			return fmt.Errorf("MIG %s: no instance template resource %s", m.mig.Name, m.template)
		}
		m.mig.Template = t.Name
		s.AddMIG(m.mig)
	}
	return nil
}

func readTemplate(body hcl.Body, ctx *hcl.EvalContext) (*Template, error) {
	c, _, diags := body.PartialContent(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "name_prefix", Required: true}, {Name: "machine_type", Required: true}, {Name: "metadata"}, {Name: "labels"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "disk"}, {Type: "guest_accelerator"}, {Type: "scheduling"}},
	})
	if diags.HasErrors() {
		return nil, diags
	}
	t := &Template{Metadata: map[string]string{}, Accelerators: map[string]int64{}, Labels: map[string]string{}}
	var prefix string
	if err := decode(c.Attributes["name_prefix"], ctx, &prefix); err != nil {
		return nil, err
	}
	// A name as Terraform makes one from name_prefix (a unique suffix).
	t.Name = prefix + "20261201000000"
	if err := decode(c.Attributes["machine_type"], ctx, &t.MachineType); err != nil {
		return nil, err
	}
	if a := c.Attributes["metadata"]; a != nil {
		if err := decode(a, ctx, &t.Metadata); err != nil {
			return nil, err
		}
	}
	if a := c.Attributes["labels"]; a != nil {
		if err := decode(a, ctx, &t.Labels); err != nil {
			return nil, err
		}
	}
	for _, b := range c.Blocks {
		switch b.Type {
		case "disk":
			d, _, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "boot"}, {Name: "disk_size_gb"}, {Name: "disk_type"}}})
			if diags.HasErrors() {
				return nil, diags
			}
			var boot bool
			if err := decode(d.Attributes["boot"], ctx, &boot); err != nil || !boot {
				continue
			}
			if err := decode(d.Attributes["disk_size_gb"], ctx, &t.DiskSizeGb); err != nil {
				return nil, err
			}
			if err := decode(d.Attributes["disk_type"], ctx, &t.DiskType); err != nil {
				return nil, err
			}
		case "guest_accelerator":
			g, _, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "type", Required: true}, {Name: "count", Required: true}}})
			if diags.HasErrors() {
				return nil, diags
			}
			var typ string
			var n int64
			if err := decode(g.Attributes["type"], ctx, &typ); err != nil {
				return nil, err
			}
			if err := decode(g.Attributes["count"], ctx, &n); err != nil {
				return nil, err
			}
			t.Accelerators[typ] = n
		case "scheduling":
			sc, _, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "provisioning_model"}}})
			if diags.HasErrors() {
				return nil, diags
			}
			if a := sc.Attributes["provisioning_model"]; a != nil {
				var model string
				if err := decode(a, ctx, &model); err != nil {
					return nil, err
				}
				t.Spot = model == "SPOT"
			}
		}
	}
	return t, nil
}

func readMIG(body hcl.Body, ctx *hcl.EvalContext) (*MIG, string, error) {
	c, _, diags := body.PartialContent(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "zone", Required: true}, {Name: "name", Required: true}, {Name: "base_instance_name", Required: true}, {Name: "target_size"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "version"}},
	})
	if diags.HasErrors() {
		return nil, "", diags
	}
	m := &MIG{}
	for name, dst := range map[string]*string{"zone": &m.Zone, "name": &m.Name, "base_instance_name": &m.BaseInstanceName} {
		if err := decode(c.Attributes[name], ctx, dst); err != nil {
			return nil, "", err
		}
	}
	if a := c.Attributes["target_size"]; a != nil {
		if err := decode(a, ctx, &m.TargetSize); err != nil {
			return nil, "", err
		}
	}
	var tmpl string
	for _, b := range c.Blocks {
		v, _, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "instance_template", Required: true}}})
		if diags.HasErrors() {
			return nil, "", diags
		}
		trav, diags := hcl.AbsTraversalForExpr(v.Attributes["instance_template"].Expr)
		if diags.HasErrors() || len(trav) < 2 || trav.RootName() != "google_compute_instance_template" {
			return nil, "", fmt.Errorf("version.instance_template is not a reference to a google_compute_instance_template")
		}
		attr, ok := trav[1].(hcl.TraverseAttr)
		if !ok {
			return nil, "", fmt.Errorf("version.instance_template: unexpected reference")
		}
		tmpl = attr.Name
	}
	return m, tmpl, nil
}

func decode(a *hcl.Attribute, ctx *hcl.EvalContext, dst any) error {
	if a == nil {
		return fmt.Errorf("missing attribute")
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		return diags
	}
	if _, ok := dst.(*map[string]string); ok {
		var err error
		if v, err = convert.Convert(v, cty.Map(cty.String)); err != nil {
			return err
		}
	}
	return gocty.FromCtyValue(v, dst)
}
