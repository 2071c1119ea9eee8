package terraform_test

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render/terraform"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestFormatHCL: a group rendered again and again with what formatHCL
// keys by type alone (names, strings, numbers) or by width (label keys)
// changed, one render after the other so that each finds the layouts of
// the ones before: every file is exactly the canonical file
// hclwrite.Format makes of it. Label keys longer than the generated ones
// (nodegen-node-group) move the alignment of the labels map.
func TestFormatHCL(t *testing.T) {
	src, _ := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	for i, c := range []struct {
		description string
		labels      map[string]string
	}{
		{"", map[string]string{"example.com/aa": "x"}},
		{"short", map[string]string{"example.com/ab": "a much longer value"}},
		{"", map[string]string{"example.com/abcdefgh": "x"}},
		{"", map[string]string{"example.com/abcdefghij": "x"}},
		{"", map[string]string{"example.com/abcdefgi": "y"}},
		{"é漢字 and a \"quote\"", map[string]string{"example.com/abcdefgh": "é"}},
		{"", map[string]string{"in": "x", "example.com/abcdefgh": "z"}},
		{"", map[string]string{"io": "x", "example.com/abcdefgh": "z"}},
		{"", map[string]string{"io": "x", "example.com/ab": "z"}},
	} {
		g.Description = c.description
		g.Labels = maps.Clone(c.labels)
		g.NodeLabels = maps.Clone(c.labels)
		g.BootDiskSizeGb = 100 + 50*i
		files := layout.Files{}
		if err := terraform.Terraform(src, files); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range files.Paths() {
			if !strings.HasSuffix(p, ".tf") {
				continue
			}
			n++
			if got := hclwrite.Format(files[p]); !bytes.Equal(got, files[p]) {
				t.Errorf("labels %v: %s is not canonical; hclwrite.Format gives:\n%s\nnodegen wrote:\n%s", c.labels, p, got, files[p])
			}
		}
		if want := len(src.CloudGroups()); n < want {
			t.Fatalf("%d .tf files, want at least %d", n, want)
		}
	}
}
