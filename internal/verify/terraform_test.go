package verify

import (
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

func TestTerraform(t *testing.T) {
	_, files := testsrc.Example(t)
	if err := terraform(files, nil); err != nil {
		t.Fatalf("the example's module: %v", err)
	}
	// Canonical formatting is render's job, proven on its output by
	// internal/render/terraform's TestTerraformParsesAndIsCanonical.
	cases := map[string]string{
		"invalid HCL":         "locals {\n  a = \n}\n",
		"unclosed block":      "locals {\n  a = 1\n",
		"unterminated string": "locals {\n  a = \"x\n}\n",
	}
	for name, body := range cases {
		bad := layout.Files{layout.TerraformMainPath: []byte(body)}
		err := terraform(bad, nil)
		if err == nil || !strings.Contains(err.Error(), layout.TerraformMainPath) {
			t.Errorf("%s: error %v, want one naming %s", name, err, layout.TerraformMainPath)
		}
	}
}
