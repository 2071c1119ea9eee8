package terraform

import (
	"bytes"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// TestFormatHCLLayouts formats files one after the other that differ in
// what the formatter measures (attribute names, object keys, quoted keys,
// a non-ASCII key, the keyword "in", a comment after a value) or in what
// it does not (values): each must come out as hclwrite formats it, the
// later ones after formatHCL has remembered the layouts of the earlier.
func TestFormatHCLLayouts(t *testing.T) {
	build := func(attr, key, value string, comment bool) func() *hclwrite.File {
		return func() *hclwrite.File {
			f := hclwrite.NewEmptyFile()
			b := f.Body().AppendNewBlock("resource", []string{"t", value}).Body()
			b.SetAttributeValue(attr, cty.StringVal(value))
			b.SetAttributeValue("name", cty.StringVal(value+value))
			b.SetAttributeValue("labels", cty.MapVal(map[string]cty.Value{key: cty.StringVal(value), "fixed-key": cty.StringVal("v")}))
			b.SetAttributeRaw("ref", hclwrite.TokensForTraversal(traversal("local", key)))
			if comment {
				b.AppendUnstructuredTokens(hclwrite.Tokens{
					{Type: hclsyntax.TokenIdent, Bytes: []byte(attr)},
					{Type: hclsyntax.TokenEqual, Bytes: []byte("=")},
					{Type: hclsyntax.TokenNumberLit, Bytes: []byte(value)},
					{Type: hclsyntax.TokenComment, Bytes: []byte("# note\n")},
					{Type: hclsyntax.TokenIdent, Bytes: []byte("other")},
					{Type: hclsyntax.TokenEqual, Bytes: []byte("=")},
					{Type: hclsyntax.TokenNumberLit, Bytes: []byte("1")},
					{Type: hclsyntax.TokenComment, Bytes: []byte("# note\n")},
				})
				b.SetAttributeValue("after", cty.True)
			}
			return f
		}
	}
	for _, f := range []func() *hclwrite.File{
		build("a", "k", "1", false),
		build("a", "k", "123456789", false), // the same layout
		build("abcdefgh", "k", "1", false),
		build("a", "kkkkkkkkkkkk", "1", false),
		build("a", "kkkkkkkkkkké", "1", false),
		build("a", "kkkkkkkkkkkkk", "1", false), // as many bytes as the one before
		build("a", "kkkkkkkkkkk漢", "1", false),
		build("a", "in", "1", false),
		build("a", "io", "1", false),
		build("a", "k", "1", true),
		build("a", "k", "123456789", true),
		build("abcdefgh", "k", "123", true),
	} {
		want := f().Bytes()
		if got := formatHCL(f()); !bytes.Equal(got, want) {
			t.Errorf("formatHCL gives\n%s\nhclwrite\n%s", got, want)
		}
		if got := hclwrite.Format(want); !bytes.Equal(got, want) {
			t.Errorf("hclwrite.Format changes File.Bytes:\n%s\n%s", got, want)
		}
	}
}
