package render_test

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/nodegen/nodegen/internal/layout"
)

// providerSchemaPath is `terraform providers schema -json` of the
// hashicorp/google provider v7.45.0 (all resources and data sources),
// verbatim but for the package-registry host names in description texts,
// which are replaced by a placeholder.
const providerSchemaPath = "testdata/terraform/google-provider-7.45.0.schema.json.gz"

type tfSchemaBlock struct {
	Attributes map[string]struct {
		Type     json.RawMessage `json:"type"`
		Required bool            `json:"required"`
		Optional bool            `json:"optional"`
		Computed bool            `json:"computed"`
		// Description is the provider's documentation of the attribute.
		Description string `json:"description"`
	} `json:"attributes"`
	BlockTypes map[string]struct {
		NestingMode string        `json:"nesting_mode"`
		MinItems    int           `json:"min_items"`
		MaxItems    int           `json:"max_items"`
		Block       tfSchemaBlock `json:"block"`
	} `json:"block_types"`
}

var (
	providerOnce    sync.Once
	providerSchemas map[string]tfSchemaBlock
	dataSchemas     map[string]tfSchemaBlock // the data sources' schemas
	ephemeralSchema map[string]tfSchemaBlock // the ephemeral resources' schemas
	providerConfig  tfSchemaBlock            // the provider block's own schema
	providerErr     error
)

// googleResources returns the provider's resource schemas by type.
func googleResources(t *testing.T) map[string]tfSchemaBlock {
	t.Helper()
	providerOnce.Do(func() {
		f, err := os.Open(providerSchemaPath)
		if err != nil {
			providerErr = err
			return
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			providerErr = err
			return
		}
		var doc struct {
			ProviderSchemas map[string]struct {
				Provider struct {
					Block tfSchemaBlock `json:"block"`
				} `json:"provider"`
				ResourceSchemas map[string]struct {
					Block tfSchemaBlock `json:"block"`
				} `json:"resource_schemas"`
				DataSourceSchemas map[string]struct {
					Block tfSchemaBlock `json:"block"`
				} `json:"data_source_schemas"`
				EphemeralResourceSchemas map[string]struct {
					Block tfSchemaBlock `json:"block"`
				} `json:"ephemeral_resource_schemas"`
			} `json:"provider_schemas"`
		}
		if providerErr = json.NewDecoder(z).Decode(&doc); providerErr != nil {
			return
		}
		p, ok := doc.ProviderSchemas["registry.terraform.io/hashicorp/google"]
		if !ok {
			providerErr = fmt.Errorf("%s: no hashicorp/google provider", providerSchemaPath)
			return
		}
		providerConfig = p.Provider.Block
		providerSchemas = map[string]tfSchemaBlock{}
		for name, r := range p.ResourceSchemas {
			providerSchemas[name] = r.Block
		}
		dataSchemas = map[string]tfSchemaBlock{}
		for name, r := range p.DataSourceSchemas {
			dataSchemas[name] = r.Block
		}
		ephemeralSchema = map[string]tfSchemaBlock{}
		for name, r := range p.EphemeralResourceSchemas {
			ephemeralSchema[name] = r.Block
		}
	})
	if providerErr != nil {
		t.Fatal(providerErr)
	}
	return providerSchemas
}

// metaArguments are Terraform's own arguments of every resource block.
var (
	metaAttributes = []string{"count", "for_each", "depends_on", "provider"}
	metaBlocks     = []string{"lifecycle", "provisioner", "connection"}
)

// checkBlock checks a body against a provider block schema: every
// attribute exists and may be set (not computed-only), every constant
// value converts to the attribute's type, every required attribute is
// set, every nested block exists with the right number of occurrences.
func checkBlock(where string, body *hclsyntax.Body, s tfSchemaBlock, resource bool) []string {
	var errs []string
	for _, name := range slices.Sorted(maps.Keys(body.Attributes)) {
		if resource && slices.Contains(metaAttributes, name) {
			continue
		}
		a, ok := s.Attributes[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("%s: attribute %s is not in the provider schema", where, name))
			continue
		case a.Computed && !a.Optional && !a.Required:
			errs = append(errs, fmt.Sprintf("%s: attribute %s is computed only", where, name))
			continue
		}
		expr := body.Attributes[name].Expr
		if len(expr.Variables()) > 0 || len(a.Type) == 0 {
			continue // known at plan time only
		}
		v, diags := expr.Value(nil)
		if diags.HasErrors() {
			errs = append(errs, fmt.Sprintf("%s.%s: %s", where, name, diags.Error()))
			continue
		}
		typ, err := ctyjson.UnmarshalType(a.Type)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s.%s: schema type: %v", where, name, err))
			continue
		}
		if _, err := convert.Convert(v, typ); err != nil {
			errs = append(errs, fmt.Sprintf("%s.%s: %s is not a %s: %v", where, name, v.GoString(), typ.FriendlyName(), err))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Attributes)) {
		if _, set := body.Attributes[name]; s.Attributes[name].Required && !set {
			errs = append(errs, fmt.Sprintf("%s: required attribute %s is not set", where, name))
		}
	}
	counts := map[string]int{}
	for _, b := range body.Blocks {
		if resource && slices.Contains(metaBlocks, b.Type) {
			continue
		}
		counts[b.Type]++
		bt, ok := s.BlockTypes[b.Type]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: block %s is not in the provider schema", where, b.Type))
			continue
		}
		if len(b.Labels) > 0 {
			errs = append(errs, fmt.Sprintf("%s: block %s has labels", where, b.Type))
		}
		errs = append(errs, checkBlock(where+"/"+b.Type, b.Body, bt.Block, false)...)
	}
	for _, name := range slices.Sorted(maps.Keys(s.BlockTypes)) {
		bt, n := s.BlockTypes[name], counts[name]
		if n < bt.MinItems || (bt.MaxItems > 0 && n > bt.MaxItems) || (bt.NestingMode == "single" && n > 1) {
			errs = append(errs, fmt.Sprintf("%s: %d %s blocks, the schema allows %d to %d (%s)", where, n, name, bt.MinItems, bt.MaxItems, bt.NestingMode))
		}
	}
	return errs
}

// checkProviderSchema checks every resource of the module against the
// provider schema and returns the problems.
func checkProviderSchema(t *testing.T, files layout.Files) []string {
	t.Helper()
	schemas := googleResources(t)
	parser := hclparse.NewParser()
	var errs []string
	for _, p := range files.Paths() {
		if !strings.HasSuffix(p, ".tf") {
			continue
		}
		f, diags := parser.ParseHCL(files[p], p)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", p, diags.Error())
		}
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			if b.Type != "resource" && b.Type != "data" && b.Type != "ephemeral" {
				continue
			}
			where := fmt.Sprintf("%s: %s.%s", p, b.Labels[0], b.Labels[1])
			s, ok := schemas[b.Labels[0]]
			switch b.Type {
			case "data":
				where = fmt.Sprintf("%s: data.%s.%s", p, b.Labels[0], b.Labels[1])
				s, ok = dataSchemas[b.Labels[0]]
			case "ephemeral":
				where = fmt.Sprintf("%s: ephemeral.%s.%s", p, b.Labels[0], b.Labels[1])
				s, ok = ephemeralSchema[b.Labels[0]]
			}
			if !ok {
				errs = append(errs, where+": no such "+b.Type+" type in the provider")
				continue
			}
			errs = append(errs, checkBlock(where, b.Body, s, true)...)
		}
	}
	return errs
}

// TestTerraformMatchesProviderSchema checks every resource type, attribute
// and nested block nodegen writes against the real provider's schema, for
// every shape of the join secret, and proves the check catches a typo.
func TestTerraformMatchesProviderSchema(t *testing.T) {
	for name, spec := range map[string]srcSpec{
		"secret created":   {},
		"secret iam only":  {Cluster: `joinToken: secretManager: terraform: "iam"`},
		"secret unmanaged": {Cluster: `joinToken: secretManager: terraform: "none"`},
		"metadata key":     {MetadataKey: "kubeadm-join-token"},
	} {
		_, files := spec.mustRender(t)
		for _, e := range checkProviderSchema(t, files) {
			t.Errorf("%s: %s", name, e)
		}
	}

	_, files := srcSpec{}.mustRender(t)
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
