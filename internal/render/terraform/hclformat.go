package terraform

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Formatting a Terraform file (hclwrite's File.Bytes) is the largest part
// of rendering one: the formatter measures the columns of every
// attribute name with a grapheme scanner that allocates a buffer per
// token. Yet it only ever changes the spaces before tokens, and those
// depend on the tokens' types and widths, not on what the strings say:
// files of the same blocks and names have the same layout. formatHCL
// formats one file of each layout with hclwrite and gives the others the
// same spaces. (The node groups' files, one per group, are written in
// canonical layout directly: hcltext.go.)
//
// What the formatter reads of a token (hclwrite/format.go, v2.25): its
// type and spaces; whether a comment ends with a line break (such a
// comment, like a newline token, ends a line, and is never measured:
// alone on its line, the line has no "="; after other tokens, the
// formatter aligns its start); whether an identifier is the keyword
// "in"; and the width in graphemes (Tokens.Columns) of the
// tokens before a line's "=" (the name it aligns), and of the whole line
// when it ends with a comment. So the key of a token is its type and
// spaces; a comment that ends a line by that alone; "in" by its bytes;
// the tokens before a line's first "=" and all the tokens of a line that
// holds a comment are keyed by their width, that is their length when
// they are printable ASCII (one grapheme per byte) and else by their
// bytes. What follows the "=" (the value: names, strings, numbers) is
// keyed by type alone. Two files with the same key get the same spaces
// from the formatter; FuzzTerraformCanonical and TestFormatHCL check the
// result against hclwrite.Format.

// maxLayoutBytes bounds the memory of the layouts remembered by a
// process (beyond it, files are formatted by hclwrite each time; the
// output is the same).
const maxLayoutBytes = 64 << 20

var layouts = struct {
	sync.Mutex
	spaces map[string][]int
	bytes  int
}{spaces: map[string][]int{}}

// formatHCL returns f's bytes in hclwrite's canonical formatting, the
// bytes f.Bytes() returns.
func formatHCL(f *hclwrite.File) []byte {
	tokens := f.BuildTokens(nil)
	key := layoutKey(tokens)
	layouts.Lock()
	spaces, ok := layouts.spaces[string(key)]
	layouts.Unlock()
	if ok && len(spaces) == len(tokens) {
		for i, t := range tokens {
			t.SpacesBefore = spaces[i]
		}
		return tokens.Bytes()
	}
	// File.Bytes formats the same tokens in place.
	out := f.Bytes()
	if !bytes.Equal(tokens.Bytes(), out) {
		return out // not the tokens hclwrite formatted: remember nothing
	}
	spaces = make([]int, len(tokens))
	for i, t := range tokens {
		spaces[i] = t.SpacesBefore
	}
	layouts.Lock()
	if size := len(key) + 8*len(spaces); layouts.bytes+size <= maxLayoutBytes {
		layouts.spaces[string(key)] = spaces
		layouts.bytes += size
	}
	layouts.Unlock()
	return out
}

// layoutKey is the key of tokens described above.
func layoutKey(tokens hclwrite.Tokens) []byte {
	key := make([]byte, 0, 4*len(tokens))
	for start := 0; start < len(tokens); {
		end, equal, comment := start, -1, false
		for ; end < len(tokens); end++ {
			t := tokens[end]
			if t.Type == hclsyntax.TokenComment {
				comment = true
			}
			if t.Type == hclsyntax.TokenEqual && end > start && equal < 0 {
				equal = end
			}
			if t.Type == hclsyntax.TokenNewline || t.Type == hclsyntax.TokenComment && endsLine(t) {
				end++
				break
			}
		}
		for i := start; i < end; i++ {
			t := tokens[i]
			key = binary.AppendUvarint(key, uint64(t.Type))
			key = binary.AppendUvarint(key, uint64(t.SpacesBefore))
			switch {
			case t.Type == hclsyntax.TokenComment && endsLine(t):
				key = append(key, 'n')
			case string(t.Bytes) == "in":
				key = appendBytes(key, t.Bytes)
			case comment || equal < 0 || i < equal:
				if printableASCII(t.Bytes) {
					key = append(key, 'w')
					key = binary.AppendUvarint(key, uint64(len(t.Bytes)))
				} else {
					key = appendBytes(key, t.Bytes)
				}
			}
		}
		start = end
	}
	return key
}

func endsLine(t *hclwrite.Token) bool { return len(t.Bytes) > 0 && t.Bytes[len(t.Bytes)-1] == '\n' }

func appendBytes(key, b []byte) []byte {
	key = append(key, 'b')
	key = binary.AppendUvarint(key, uint64(len(b)))
	return append(key, b...)
}

func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// objectTokens is the object constructor expression of attrs, one
// attribute a line: the tokens hclwrite.TokensForObject returns, except
// that they are not formatted on their own (hclwrite formats them again
// with the whole file, which sets the spaces before every token, so
// aligning a large object twice only costs time).
func objectTokens(attrs []hclwrite.ObjectAttrTokens) hclwrite.Tokens {
	toks := make(hclwrite.Tokens, 0, 2+4*len(attrs))
	toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenOBrace, Bytes: []byte{'{'}})
	if len(attrs) > 0 {
		toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte{'\n'}})
	}
	for _, a := range attrs {
		toks = append(toks, a.Name...)
		toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenEqual, Bytes: []byte{'='}})
		toks = append(toks, a.Value...)
		toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte{'\n'}})
	}
	return append(toks, &hclwrite.Token{Type: hclsyntax.TokenCBrace, Bytes: []byte{'}'}})
}

// stringMapTokens is m as hclwrite writes cty.MapVal of its strings
// (hclwrite.TokensForValue): keys in order, a key that is an identifier
// bare and any other quoted; unformatted, like objectTokens.
func stringMapTokens(m map[string]string) hclwrite.Tokens {
	attrs := make([]hclwrite.ObjectAttrTokens, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := hclwrite.Tokens{{Type: hclsyntax.TokenIdent, Bytes: []byte(k)}}
		if !hclsyntax.ValidIdentifier(k) {
			name = hclwrite.TokensForValue(cty.StringVal(k))
		}
		attrs = append(attrs, hclwrite.ObjectAttrTokens{Name: name, Value: hclwrite.TokensForValue(cty.StringVal(m[k]))})
	}
	return objectTokens(attrs)
}
