package terraform_test

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// Every MIG's update_policy leaves its running VMs alone for a new
// template, so that terraform apply never replaces a node behind nodegen
// rollout's back: type OPPORTUNISTIC, minimal and most disruptive action
// NONE. Read back with hclparse.
func TestTerraformUpdatePolicyLeavesRunningNodes(t *testing.T) {
	src, files := testsrc.Example(t)
	schema := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "resource", LabelNames: []string{"type", "name"}}}}
	migs := 0
	for _, g := range src.CloudGroups() {
		p := layout.TerraformGroupPath(g.Name)
		f, diags := hclparse.NewParser().ParseHCL(files[p], p)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		content, _, diags := f.Body.PartialContent(schema)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		for _, r := range content.Blocks {
			if r.Labels[0] != gce.TFGroupManager {
				continue
			}
			migs++
			inner, _, _ := r.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "update_policy"}}})
			if len(inner.Blocks) != 1 {
				t.Errorf("%s %s: %d update_policy blocks", p, r.Labels[1], len(inner.Blocks))
				continue
			}
			attrs, diags := inner.Blocks[0].Body.JustAttributes()
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			want := map[string]string{"type": "OPPORTUNISTIC", "minimal_action": "NONE", "most_disruptive_allowed_action": "NONE"}
			if len(attrs) != len(want) {
				t.Errorf("%s %s: update_policy has %d attributes, want %v", p, r.Labels[1], len(attrs), want)
			}
			for k, v := range want {
				a, ok := attrs[k]
				if !ok {
					t.Errorf("%s %s: update_policy lacks %s", p, r.Labels[1], k)
					continue
				}
				got, diags := a.Expr.Value(nil)
				if diags.HasErrors() || got.AsString() != v {
					t.Errorf("%s %s: update_policy %s = %#v, want %q", p, r.Labels[1], k, got, v)
				}
			}
		}
	}
	if want := len(src.CloudGroups()); migs < want {
		t.Errorf("%d MIGs read, want at least %d", migs, want)
	}
}
