package gcefake

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
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
		Variables: map[string]cty.Value{
			"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(tfDir)}),
			// The module's extra network tags: none.
			"var": cty.ObjectVal(map[string]cty.Value{"network_tags": cty.ListValEmpty(cty.String)}),
		},
		Functions: map[string]function.Function{"concat": stdlib.ConcatFunc, "file": function.New(&function.Spec{
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
		healing  *healingRes
	}
	var migs []migRes
	checks := map[string]healthCheck{} // by resource name
	var firewalls []firewall
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
				m, tmpl, healing, err := readMIG(b.Body, ctx)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", e.Name(), b.Labels[1], err)
				}
				m.Project = s.Project
				migs = append(migs, migRes{m, tmpl, healing})
			case "google_compute_health_check":
				hc, err := readHealthCheck(b.Body, ctx)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", e.Name(), b.Labels[1], err)
				}
				checks[b.Labels[1]] = hc
			case "google_compute_firewall":
				fw, err := readFirewall(b.Body, ctx)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", e.Name(), b.Labels[1], err)
				}
				firewalls = append(firewalls, fw)
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
		if h := m.healing; h != nil {
			hc, ok := checks[h.check]
			if !ok {
				return fmt.Errorf("MIG %s: no health check resource %s", m.mig.Name, h.check)
			}
			a := &Autohealing{InitialDelay: h.initialDelay, CheckInterval: hc.interval, UnhealthyThreshold: hc.unhealthy,
				Repair:              h.onHealth == "REPAIR" || (h.onHealth == "DEFAULT_ACTION" || h.onHealth == "") && h.onFailure != "DO_NOTHING",
				ForceUpdateOnRepair: h.forceUpdate == "YES"}
			for _, fw := range firewalls {
				if slices.Contains(fw.tcpPorts, strconv.Itoa(hc.port)) {
					a.Tags = append(a.Tags, fw.targetTags...)
				}
			}
			m.mig.Autohealing = a
		}
		s.AddMIG(m.mig)
	}
	return nil
}

// healingRes is what a MIG resource says of autohealing: the health
// check resource it names, the initial delay, and its
// instance_lifecycle_policy's values ("" when unset).
type healingRes struct {
	check                            string
	initialDelay                     time.Duration
	onFailure, onHealth, forceUpdate string
}

// healthCheck is a google_compute_health_check of HTTP.
type healthCheck struct {
	interval  time.Duration
	unhealthy int
	port      int
}

// firewall is a google_compute_firewall's allowed TCP ports and target tags.
type firewall struct {
	tcpPorts, targetTags []string
}

// loopback reports whether a kubelet bind address serves the VM alone.
func loopback(addr string) bool {
	ip := net.ParseIP(addr)
	return addr == "localhost" || ip != nil && ip.IsLoopback()
}

// healthzBind is the kubelet's healthzBindAddress in a startup script's
// kubelet configuration, the kubelet's default 127.0.0.1 when unset.
var healthzBind = regexp.MustCompile(`(?m)^healthzBindAddress: *"?([^"\s]+)"?\s*$`)

func readHealthCheck(body hcl.Body, ctx *hcl.EvalContext) (healthCheck, error) {
	c, _, diags := body.PartialContent(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "check_interval_sec", Required: true}, {Name: "unhealthy_threshold", Required: true}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "http_health_check"}},
	})
	if diags.HasErrors() {
		return healthCheck{}, diags
	}
	var hc healthCheck
	var sec int64
	if err := decode(c.Attributes["check_interval_sec"], ctx, &sec); err != nil {
		return hc, err
	}
	hc.interval = time.Duration(sec) * time.Second
	if err := decode(c.Attributes["unhealthy_threshold"], ctx, &hc.unhealthy); err != nil {
		return hc, err
	}
	for _, b := range c.Blocks {
		h, _, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "port", Required: true}}})
		if diags.HasErrors() {
			return hc, diags
		}
		if err := decode(h.Attributes["port"], ctx, &hc.port); err != nil {
			return hc, err
		}
	}
	if hc.port == 0 {
		return hc, fmt.Errorf("not an HTTP health check with a port")
	}
	return hc, nil
}

func readFirewall(body hcl.Body, ctx *hcl.EvalContext) (firewall, error) {
	c, _, diags := body.PartialContent(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "target_tags"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "allow"}},
	})
	if diags.HasErrors() {
		return firewall{}, diags
	}
	var fw firewall
	if a := c.Attributes["target_tags"]; a != nil {
		if err := decode(a, ctx, &fw.targetTags); err != nil {
			return fw, err
		}
	}
	for _, b := range c.Blocks {
		al, _, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "protocol", Required: true}, {Name: "ports"}}})
		if diags.HasErrors() {
			return fw, diags
		}
		var proto string
		var ports []string
		if err := decode(al.Attributes["protocol"], ctx, &proto); err != nil {
			return fw, err
		}
		if a := al.Attributes["ports"]; a != nil {
			if err := decode(a, ctx, &ports); err != nil {
				return fw, err
			}
		}
		if proto == "tcp" {
			fw.tcpPorts = append(fw.tcpPorts, ports...)
		}
	}
	return fw, nil
}

func readTemplate(body hcl.Body, ctx *hcl.EvalContext) (*Template, error) {
	c, _, diags := body.PartialContent(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "name_prefix", Required: true}, {Name: "machine_type", Required: true}, {Name: "metadata"}, {Name: "labels"}, {Name: "tags"}},
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
	if a := c.Attributes["tags"]; a != nil {
		if err := decode(a, ctx, &t.Tags); err != nil {
			return nil, err
		}
	}
	if m := healthzBind.FindStringSubmatch(t.Metadata["startup-script"]); m != nil {
		t.HealthzOpen = !loopback(m[1])
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

func readMIG(body hcl.Body, ctx *hcl.EvalContext) (*MIG, string, *healingRes, error) {
	c, _, diags := body.PartialContent(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "zone", Required: true}, {Name: "name", Required: true}, {Name: "base_instance_name", Required: true}, {Name: "target_size"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "version"}, {Type: "auto_healing_policies"}, {Type: "instance_lifecycle_policy"}},
	})
	if diags.HasErrors() {
		return nil, "", nil, diags
	}
	m := &MIG{}
	for name, dst := range map[string]*string{"zone": &m.Zone, "name": &m.Name, "base_instance_name": &m.BaseInstanceName} {
		if err := decode(c.Attributes[name], ctx, dst); err != nil {
			return nil, "", nil, err
		}
	}
	if a := c.Attributes["target_size"]; a != nil {
		if err := decode(a, ctx, &m.TargetSize); err != nil {
			return nil, "", nil, err
		}
	}
	var tmpl string
	var healing *healingRes
	var lifecycle map[string]string
	for _, b := range c.Blocks {
		switch b.Type {
		case "version":
			v, _, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "instance_template", Required: true}}})
			if diags.HasErrors() {
				return nil, "", nil, diags
			}
			name, err := refName(v.Attributes["instance_template"], "google_compute_instance_template")
			if err != nil {
				return nil, "", nil, fmt.Errorf("version.instance_template: %w", err)
			}
			tmpl = name
		case "auto_healing_policies":
			h, _, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "health_check", Required: true}, {Name: "initial_delay_sec", Required: true}}})
			if diags.HasErrors() {
				return nil, "", nil, diags
			}
			name, err := refName(h.Attributes["health_check"], "google_compute_health_check")
			if err != nil {
				return nil, "", nil, fmt.Errorf("auto_healing_policies.health_check: %w", err)
			}
			var sec int64
			if err := decode(h.Attributes["initial_delay_sec"], ctx, &sec); err != nil {
				return nil, "", nil, err
			}
			healing = &healingRes{check: name, initialDelay: time.Duration(sec) * time.Second}
		case "instance_lifecycle_policy":
			attrs, diags := b.Body.JustAttributes()
			if diags.HasErrors() {
				return nil, "", nil, diags
			}
			lifecycle = map[string]string{}
			for name, a := range attrs {
				var v string
				if err := decode(a, ctx, &v); err != nil {
					return nil, "", nil, err
				}
				lifecycle[name] = v
			}
		}
	}
	if healing != nil {
		healing.onFailure, healing.onHealth, healing.forceUpdate = lifecycle["default_action_on_failure"], lifecycle["on_failed_health_check"], lifecycle["force_update_on_repair"]
	}
	return m, tmpl, healing, nil
}

// refName is the name of the resource of type typ an attribute refers to
// (typ.name.attribute).
func refName(a *hcl.Attribute, typ string) (string, error) {
	trav, diags := hcl.AbsTraversalForExpr(a.Expr)
	if diags.HasErrors() || len(trav) < 2 || trav.RootName() != typ {
		return "", fmt.Errorf("not a reference to a %s", typ)
	}
	attr, ok := trav[1].(hcl.TraverseAttr)
	if !ok {
		return "", fmt.Errorf("unexpected reference")
	}
	return attr.Name, nil
}

func decode(a *hcl.Attribute, ctx *hcl.EvalContext, dst any) error {
	if a == nil {
		return fmt.Errorf("missing attribute")
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		return diags
	}
	var err error
	switch dst.(type) {
	case *map[string]string:
		v, err = convert.Convert(v, cty.Map(cty.String))
	case *[]string:
		v, err = convert.Convert(v, cty.List(cty.String))
	}
	if err != nil {
		return err
	}
	return gocty.FromCtyValue(v, dst)
}
