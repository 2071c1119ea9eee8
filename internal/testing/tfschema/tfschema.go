// Package tfschema holds the hashicorp/google provider's schema and checks
// Terraform files against it as terraform validate would for what can be
// known without a plan: every resource, data source, ephemeral resource
// and provider block names types, attributes and nested blocks the
// provider has, sets every required attribute and no computed-only one,
// and every constant value converts to its attribute's type.
package tfschema

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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

// schemaGz is `terraform providers schema -json` of the hashicorp/google
// provider v7.45.0 (all resources, data sources and ephemeral resources),
// verbatim but for the package-registry host names in description texts,
// which are replaced by a placeholder.
//
//go:embed google-provider-7.45.0.schema.json.gz
var schemaGz []byte

// ProviderVersion is the release of the provider the schema is of.
const ProviderVersion = "7.45.0"

// providerAddress is the provider's key in the schema document.
const providerAddress = "registry.terraform.io/hashicorp/google"

// Open returns the schema document, JSON.
func Open() (io.ReadCloser, error) {
	return gzip.NewReader(bytes.NewReader(schemaGz))
}

// Block is a block's schema: its attributes and nested block types.
type Block struct {
	Attributes map[string]Attribute `json:"attributes"`
	BlockTypes map[string]BlockType `json:"block_types"`
}

// Attribute is an attribute's schema.
type Attribute struct {
	Type     json.RawMessage `json:"type"`
	Required bool            `json:"required"`
	Optional bool            `json:"optional"`
	Computed bool            `json:"computed"`
	// Description is the provider's documentation of the attribute.
	Description string `json:"description"`
}

// BlockType is a nested block type's schema.
type BlockType struct {
	NestingMode string `json:"nesting_mode"`
	MinItems    int    `json:"min_items"`
	MaxItems    int    `json:"max_items"`
	Block       Block  `json:"block"`
}

// Provider is the provider's schema.
type Provider struct {
	// Config is the provider block's own schema.
	Config Block
	// Resources, Data and Ephemeral are the resource, data source and
	// ephemeral resource schemas by type.
	Resources, Data, Ephemeral map[string]Block
}

var (
	once     sync.Once
	provider *Provider
	loadErr  error
)

// Load returns the provider's schema (read once).
func Load() (*Provider, error) {
	once.Do(func() {
		r, err := Open()
		if err != nil {
			loadErr = err
			return
		}
		defer r.Close()
		type schemas map[string]struct {
			Block Block `json:"block"`
		}
		var doc struct {
			ProviderSchemas map[string]struct {
				Provider struct {
					Block Block `json:"block"`
				} `json:"provider"`
				ResourceSchemas          schemas `json:"resource_schemas"`
				DataSourceSchemas        schemas `json:"data_source_schemas"`
				EphemeralResourceSchemas schemas `json:"ephemeral_resource_schemas"`
			} `json:"provider_schemas"`
		}
		if loadErr = json.NewDecoder(r).Decode(&doc); loadErr != nil {
			return
		}
		p, ok := doc.ProviderSchemas[providerAddress]
		if !ok {
			loadErr = fmt.Errorf("the provider schema has no %s", providerAddress)
			return
		}
		blocks := func(s schemas) map[string]Block {
			out := make(map[string]Block, len(s))
			for name, r := range s {
				out[name] = r.Block
			}
			return out
		}
		provider = &Provider{Config: p.Provider.Block, Resources: blocks(p.ResourceSchemas),
			Data: blocks(p.DataSourceSchemas), Ephemeral: blocks(p.EphemeralResourceSchemas)}
	})
	return provider, loadErr
}

// metaArguments are Terraform's own arguments of every resource block.
var (
	metaAttributes = []string{"count", "for_each", "depends_on", "provider"}
	metaBlocks     = []string{"lifecycle", "provisioner", "connection"}
)

// CheckBlock checks a body against a provider block schema: every
// attribute exists and may be set (not computed-only), every constant
// value converts to the attribute's type, every required attribute is
// set, every nested block exists with the right number of occurrences.
// resource admits Terraform's meta-arguments.
func CheckBlock(where string, body *hclsyntax.Body, s Block, resource bool) []string {
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
		errs = append(errs, CheckBlock(where+"/"+b.Type, b.Body, bt.Block, false)...)
	}
	for _, name := range slices.Sorted(maps.Keys(s.BlockTypes)) {
		bt, n := s.BlockTypes[name], counts[name]
		if n < bt.MinItems || (bt.MaxItems > 0 && n > bt.MaxItems) || (bt.NestingMode == "single" && n > 1) {
			errs = append(errs, fmt.Sprintf("%s: %d %s blocks, the schema allows %d to %d (%s)", where, n, name, bt.MinItems, bt.MaxItems, bt.NestingMode))
		}
	}
	return errs
}

// Check parses each .tf file of files (path → content) with hclparse and
// checks its resource, data, ephemeral and google provider blocks
// against the provider's schema. It returns the problems; an error is a
// file HCL cannot parse.
func (p *Provider) Check(files map[string][]byte) ([]string, error) {
	parser := hclparse.NewParser()
	var errs []string
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(path, ".tf") {
			continue
		}
		f, diags := parser.ParseHCL(files[path], path)
		if diags.HasErrors() {
			return nil, diags
		}
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			var (
				s     Block
				ok    bool
				where string
			)
			switch b.Type {
			case "resource":
				s, ok = p.Resources[b.Labels[0]]
				where = fmt.Sprintf("%s: %s.%s", path, b.Labels[0], b.Labels[1])
			case "data":
				s, ok = p.Data[b.Labels[0]]
				where = fmt.Sprintf("%s: data.%s.%s", path, b.Labels[0], b.Labels[1])
			case "ephemeral":
				s, ok = p.Ephemeral[b.Labels[0]]
				where = fmt.Sprintf("%s: ephemeral.%s.%s", path, b.Labels[0], b.Labels[1])
			case "provider":
				if b.Labels[0] != "google" {
					continue
				}
				errs = append(errs, CheckBlock(path+": provider google", b.Body, p.Config, false)...)
				continue
			default:
				continue
			}
			if !ok {
				errs = append(errs, where+": no such "+b.Type+" type in the provider")
				continue
			}
			errs = append(errs, CheckBlock(where, b.Body, s, true)...)
		}
	}
	return errs, nil
}

// Blocks parses every .tf file of files with hclparse and returns, per
// file, the blocks it declares at any depth as "type label label" paths
// ("resource google_compute_instance_template gpu_t4/disk"), sorted, with
// each block's attribute names. It fails the test when a file does not
// parse.
func Blocks(t testing.TB, files layout.Files) map[string][]string {
	t.Helper()
	parser := hclparse.NewParser()
	out := map[string][]string{}
	for _, p := range files.Paths() {
		if !strings.HasSuffix(p, ".tf") {
			continue
		}
		f, diags := parser.ParseHCL(files[p], p)
		if diags.HasErrors() {
			t.Fatalf("%s does not parse: %s\n%s", p, diags.Error(), files[p])
		}
		var walk func(prefix string, b *hclsyntax.Body)
		walk = func(prefix string, b *hclsyntax.Body) {
			attrs := slices.Sorted(maps.Keys(b.Attributes))
			out[p] = append(out[p], fmt.Sprintf("%s = %v", prefix, attrs))
			for _, blk := range b.Blocks {
				walk(prefix+"/"+strings.Join(append([]string{blk.Type}, blk.Labels...), " "), blk.Body)
			}
		}
		walk("", f.Body.(*hclsyntax.Body))
		slices.Sort(out[p])
	}
	return out
}
