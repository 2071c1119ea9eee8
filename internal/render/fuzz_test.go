package render_test

import (
	"bytes"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render/terraform"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/validate"
)

// The fuzz targets below check nodegen's promises on inputs nobody wrote
// by hand. Run one for a while with, e.g.:
//
//	go test ./internal/render -run '^$' -fuzz '^FuzzTerraformCanonical$' -fuzztime 10s
//
// Without -fuzz they run their seeds (f.Add and testdata/fuzz) as tests.

// TestGroupSeedsValid makes sure the fuzz targets' seeds are groups nodegen
// accepts, so that they exercise the round trips and not the rejection.
func TestGroupSeedsValid(t *testing.T) {
	example := testsrc.ExampleJSON(t)
	for _, s := range testsrc.GroupSeeds {
		if src, _, ok := testsrc.FuzzedSource(t, example, s.Labels, s.Taints, s.StartupKey, s.Arm, s.GPUs); !ok {
			t.Errorf("seed %+v is not valid: %v", s, validate.Source(src, testsrc.NoPos{}))
		}
	}
}

// FuzzTerraformCanonical: for any group nodegen accepts, whatever its
// labels, taints and description, every Terraform file is canonical:
// hclwrite.Format (terraform fmt's formatter) leaves it byte for byte as
// nodegen wrote it, and it parses.
func FuzzTerraformCanonical(f *testing.F) {
	example := testsrc.ExampleJSON(f)
	for i, s := range testsrc.GroupSeeds {
		f.Add(s.Labels, s.Taints, s.StartupKey, []string{"", "GPU burst pool", "a \"quoted\" ${x} %{y} line\nand é漢字 # not a comment"}[i%3], s.Arm, s.GPUs)
	}
	f.Fuzz(func(t *testing.T, labels, taints, startupKey, description string, arm bool, gpus uint8) {
		src, g, ok := testsrc.FuzzedSource(t, example, labels, taints, startupKey, arm, gpus)
		if !ok {
			return
		}
		g.Description = description
		if len(validate.Source(src, testsrc.NoPos{})) > 0 {
			return
		}
		files := layout.Files{}
		if err := terraform.Terraform(src, files); err != nil {
			t.Fatalf("valid source, Terraform: %v", err)
		}
		for _, p := range files.Paths() {
			b := files[p]
			if got := hclwrite.Format(b); !bytes.Equal(got, b) {
				t.Errorf("%s is not canonical; hclwrite.Format gives:\n%s\nnodegen wrote:\n%s", p, got, b)
			}
			if _, diags := hclsyntax.ParseConfig(b, p, hcl.InitialPos); diags.HasErrors() {
				t.Errorf("%s: %v", p, diags)
			}
		}
	})
}
