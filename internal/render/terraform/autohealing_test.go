package terraform_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// fixedGPUGroup is a gce-static group with a GPU, whose reboot time
// defaults to the longer one.
const fixedGPUGroup = `nodeGroups: "gpu-fixed": {
	kind: "gce-static"
	zones: ["us-central1-a"]
	machineType: "n1-standard-8"
	image: "projects/acme-hybrid-ai/global/images/family/k8s-node-gpu-1-35"
	min: 1
	max: 1
	gpu: {type: "nvidia-tesla-t4", count: 1}
	labels: "example.com/pool": "gpu-fixed"
	taints: []
}
`

// autohealed is what one autohealed group's Terraform says about repairs.
type autohealed struct {
	// lifecycle is each MIG's instance_lifecycle_policy, attribute → value.
	lifecycle                    []map[string]string
	interval, timeout, unhealthy int64
}

func readAutohealed(t *testing.T, files layout.Files, group string) autohealed {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL(files[layout.TerraformGroupPath(group)], group+".tf")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var a autohealed
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		switch {
		case b.Type == "resource" && b.Labels[0] == gce.TFGroupManager:
			policy := map[string]string{}
			n := 0
			for _, lb := range b.Body.Blocks {
				if lb.Type != "instance_lifecycle_policy" {
					continue
				}
				n++
				for name := range lb.Body.Attributes {
					policy[name] = attrValue(t, lb.Body, name, nil).AsString()
				}
			}
			if n != 1 {
				t.Fatalf("MIG %s has %d instance_lifecycle_policy blocks", b.Labels[1], n)
			}
			a.lifecycle = append(a.lifecycle, policy)
		case b.Type == "resource" && b.Labels[0] == gce.TFHealthCheck:
			for name, dst := range map[string]*int64{"check_interval_sec": &a.interval, "timeout_sec": &a.timeout, "unhealthy_threshold": &a.unhealthy} {
				*dst, _ = attrValue(t, b.Body, name, nil).AsBigFloat().Int64()
			}
		}
	}
	return a
}

// withAutohealing is the tests' autoscaler.cue with the group's
// autohealing set to v.
func withAutohealing(t *testing.T, v string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testsrc.Dir(), "autoscaler.cue"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "\tmin:", "\tautohealing: "+v+"\n\tmin:", 1)
	if s == string(b) {
		t.Fatal("autoscaler.cue has no min")
	}
	return s
}

func renderWith(t *testing.T, edits map[string]string) (*model.Source, layout.Files) {
	t.Helper()
	l, err := pipeline.Load(testsrc.Copy(t, edits))
	if err != nil {
		t.Fatal(err)
	}
	src := l.Fleet.Clusters[0]
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	return src, files
}

// TestAutohealingRepairsFromCurrentTemplate: every autohealed MIG repairs
// a VM from the group's current template (force_update_on_repair YES;
// the default NO would recreate a VM made before the health check as it
// was, failing again), repairs an unhealthy VM only with
// autohealing.repair, and its health check waits out the group's reboot
// time (rebootTime, or 5m, 10m with a GPU) before the failure that makes
// a VM unhealthy, with the shortest interval that does. Turning repair off
// changes nothing the VMs are made of (no node becomes stale).
func TestAutohealingRepairsFromCurrentTemplate(t *testing.T) {
	_, def := renderWith(t, map[string]string{"gpu-fixed.cue": fixedGPUGroup})
	_, staged := renderWith(t, map[string]string{
		"gpu-fixed.cue":  fixedGPUGroup,
		"autoscaler.cue": withAutohealing(t, `{repair: false, rebootTime: "20m"}`),
	})
	for _, c := range []struct {
		name   string
		files  layout.Files
		group  string
		repair bool
		reboot time.Duration
	}{
		{"default", def, "autoscaler", true, 5 * time.Minute},
		{"default with a GPU", def, "gpu-fixed", true, 10 * time.Minute},
		{"staged, slow reboot", staged, "autoscaler", false, 20 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := readAutohealed(t, c.files, c.group)
			onHealth := "REPAIR"
			if !c.repair {
				onHealth = "DO_NOTHING"
			}
			want := map[string]string{"default_action_on_failure": "REPAIR", "on_failed_health_check": onHealth, "force_update_on_repair": "YES"}
			for _, p := range a.lifecycle {
				if fmt.Sprint(p) != fmt.Sprint(want) {
					t.Errorf("instance_lifecycle_policy %v, want %v", p, want)
				}
			}
			waited := time.Duration((a.unhealthy-1)*a.interval) * time.Second
			if waited < c.reboot || waited-time.Duration(a.unhealthy-1)*time.Second >= c.reboot && a.interval > 10 {
				t.Errorf("%d checks %d s apart wait %v before the failing one, want the shortest at least the reboot time %v", a.unhealthy, a.interval, waited, c.reboot)
			}
			if a.timeout > a.interval || a.unhealthy < 2 || a.unhealthy > 10 || a.interval > 300 {
				t.Errorf("health check interval %d s, timeout %d s, unhealthy threshold %d: outside the Compute API's ranges", a.interval, a.timeout, a.unhealthy)
			}
		})
	}
	for _, p := range []string{layout.StartupScriptPath("autoscaler"), layout.KubeEnvPath("autoscaler")} {
		if string(def[p]) != string(staged[p]) {
			t.Errorf("%s differs with autohealing.repair false", p)
		}
	}
	template := func(files layout.Files) string {
		s := string(files[layout.TerraformGroupPath("autoscaler")])
		return s[:strings.Index(s, "resource \""+gce.TFGroupManager)]
	}
	if template(def) != template(staged) {
		t.Error("the instance template differs with autohealing.repair false")
	}
}

// TestAutohealingValuesInProviderSchema: the instance lifecycle policy's
// values are among those the provider's schema lists for each attribute
// ("Valid values are: ..." in google provider v7.45.0's descriptions).
func TestAutohealingValuesInProviderSchema(t *testing.T) {
	desc := lifecycleDescriptions(t)
	_, staged := renderWith(t, map[string]string{"autoscaler.cue": withAutohealing(t, "repair: false")})
	_, def := testsrc.Spec{}.MustRender(t)
	valid := regexp.MustCompile(`Valid (?:values|options) are: ([A-Z_]+(?:, [A-Z_]+)*)\.`)
	for _, files := range []layout.Files{def, staged} {
		for _, p := range readAutohealed(t, files, "autoscaler").lifecycle {
			for name, v := range p {
				m := valid.FindStringSubmatch(desc[name])
				if m == nil {
					t.Fatalf("%s: no list of valid values in %q", name, desc[name])
				}
				if !slices.Contains(strings.Split(m[1], ", "), v) {
					t.Errorf("instance_lifecycle_policy.%s = %q, the provider's valid values are %s", name, v, m[1])
				}
			}
		}
	}
}

// lifecycleDescriptions returns the provider's description of each
// attribute of a zonal MIG's instance_lifecycle_policy.
func lifecycleDescriptions(t *testing.T) map[string]string {
	t.Helper()
	bt, ok := providerSchema(t).Resources[gce.TFGroupManager].BlockTypes["instance_lifecycle_policy"]
	if !ok {
		t.Fatal("no instance_lifecycle_policy in the provider's schema")
	}
	out := map[string]string{}
	for name, a := range bt.Block.Attributes {
		out[name] = a.Description
	}
	return out
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
