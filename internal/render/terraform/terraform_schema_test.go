package terraform_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/testing/tfschema"
)

// providerSchema returns the hashicorp/google provider's schema.
func providerSchema(t *testing.T) *tfschema.Provider {
	t.Helper()
	p, err := tfschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkProviderSchema checks every resource, data source, ephemeral
// resource and provider block of the module against the provider schema
// and returns the problems.
func checkProviderSchema(t *testing.T, files layout.Files) []string {
	t.Helper()
	errs, err := providerSchema(t).Check(files)
	if err != nil {
		t.Fatal(err)
	}
	return errs
}

// TestTerraformMatchesProviderSchema checks every resource type, attribute
// and nested block nodegen writes against the real provider's schema, for
// every shape of the join secret, and proves the check catches a typo.
func TestTerraformMatchesProviderSchema(t *testing.T) {
	for name, spec := range map[string]testsrc.Spec{
		"secret created":   {},
		"secret iam only":  {Cluster: `joinToken: secretManager: terraform: "iam"`},
		"secret unmanaged": {Cluster: `joinToken: secretManager: terraform: "none"`},
		"metadata key":     {MetadataKey: "kubeadm-join-token"},
	} {
		_, files := spec.MustRender(t)
		for _, e := range checkProviderSchema(t, files) {
			t.Errorf("%s: %s", name, e)
		}
	}

	_, files := testsrc.Spec{}.MustRender(t)
	for _, c := range []struct{ path, old, new string }{
		{layout.TerraformIAMPath, "  role_id ", "  role_name "},
		{layout.TerraformJoinSecretPath, "    auto {", "    automatic {"},
		{layout.TerraformGroupPath("gpu-t4"), "google_compute_instance_template", "google_compute_instance_templat"},
		{layout.TerraformGroupPath("gpu-t4"), "  machine_type = \"n1-standard-8\"\n", ""},
		{layout.TerraformGroupPath("gpu-t4"), "disk_size_gb = 100", "disk_size_gb = \"big\""},
	} {
		broken := maps.Clone(files)
		broken[c.path] = []byte(strings.Replace(string(files[c.path]), c.old, c.new, 1))
		if string(broken[c.path]) == string(files[c.path]) {
			t.Errorf("%q not found in %s", c.old, c.path)
			continue
		}
		if len(checkProviderSchema(t, broken)) == 0 {
			t.Errorf("replacing %q by %q in %s passes the schema check", c.old, c.new, c.path)
		}
	}
}
