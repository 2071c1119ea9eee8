package terraform_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/testing/tfschema"
)

// TestTerraformRefusesToDeleteMIGs is the guard that keeps terraform apply
// from deleting a MIG whose nodes were not drained, such as one whose zone
// or group left the source: every MIG's deletion_policy evaluates to
// PREVENT, an argument the pinned provider has, which the provider honours
// from the state, so that it holds once the resource block is gone (the
// provider's own words, from its schema). nodegen rollout drains such a
// MIG's nodes and deletes the MIG; terraform's refresh then finds it gone.
func TestTerraformRefusesToDeleteMIGs(t *testing.T) {
	_, files := testsrc.Example(t)
	m := parseModule(t, files)
	migs := m.byType(gce.TFGroupManager)
	if len(migs) == 0 {
		t.Fatal("no MIG in the module")
	}
	for _, r := range migs {
		if got := m.str(t, r, r.Body, "deletion_policy"); got != "PREVENT" {
			t.Errorf("MIG %s: deletion_policy %q, want PREVENT", r.Name, got)
		}
	}

	z, err := tfschema.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var doc struct {
		ProviderSchemas map[string]struct {
			ResourceSchemas map[string]struct {
				Block struct {
					Attributes map[string]struct {
						Description string `json:"description"`
						Optional    bool   `json:"optional"`
					} `json:"attributes"`
				} `json:"block"`
			} `json:"resource_schemas"`
		} `json:"provider_schemas"`
	}
	if err := json.NewDecoder(z).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	a, ok := doc.ProviderSchemas["registry.terraform.io/hashicorp/google"].ResourceSchemas[gce.TFGroupManager].Block.Attributes["deletion_policy"]
	if !ok || !a.Optional {
		t.Fatalf("the provider's %s has no optional deletion_policy", gce.TFGroupManager)
	}
	for _, want := range []string{`the command will fail if this field is set to "PREVENT" in Terraform state`, `When set to "DELETE", deleting the resource is allowed`} {
		if !strings.Contains(strings.Join(strings.Fields(a.Description), " "), want) {
			t.Errorf("the provider's deletion_policy no longer says %q:\n%s", want, a.Description)
		}
	}
	if !strings.Contains(string(files[layout.TerraformVersionsPath]), `version = ">= 7.45.0"`) {
		t.Errorf("versions.tf admits a provider older than the one whose deletion_policy is checked:\n%s", files[layout.TerraformVersionsPath])
	}
}
