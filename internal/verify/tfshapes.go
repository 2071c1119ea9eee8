package verify

import (
	"bytes"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nodegen/nodegen/internal/model"
)

// tfShapes reads the node groups' Terraform files, which differ from
// group to group mostly in names and values, with HCL's native syntax
// parser (hclsyntax.ParseConfig, as Terraform reads a .tf file) once per
// shape of each of their top-level blocks.
//
// A file is read as segments: a segment is the lines of one top-level
// block, from the line after the previous block's closing line (blank
// and comment lines before the block included) to its own closing line,
// which is "}" alone; the lines after the last block are the file's
// tail. Each segment either matches a segment already parsed (a
// reference) everywhere but inside the reference's free leaves, and is
// read from the reference's syntax tree with the new leaves' bytes as
// their values, or is parsed on its own and becomes a reference. Where
// a segment ends, the scanner is at the top level at the start of a
// line (a reference ended there, or the parse of the piece closed its
// one block on its last line), so the file's tokens are its segments'
// tokens in turn, and its body their blocks in turn; with no attribute
// at the top level nothing relates one block to another, and the file
// parses without a diagnostic when each segment does. A file that does
// not read so (a diagnostic, an attribute at the top level, a byte-order
// mark) is parsed in full.
//
// A free leaf is a token's bytes that the new bytes replace with the same
// token, as long as they keep to its rule (the scanner's rules, in
// hashicorp/hcl v2.25.0 hclsyntax/scan_tokens.rl):
//
//   - a quoted template literal (TokenQuotedLit) that a closing quote
//     follows and that is no block's first label: printable ASCII but for
//     ", \, $, %, { and }, at least one byte (what ends it, an escape or
//     a template sequence, never among them, nor a brace that would make
//     one with a $ or % before the leaf; ASCII needs no normalizing);
//   - an identifier after a dot (TokenIdent, an attribute of a
//     traversal): an ASCII identifier, [A-Za-z_][A-Za-z0-9_-]*;
//   - a number literal of digits alone (TokenNumberLit): digits;
//   - a line comment's text after its # or //: valid UTF-8 without
//     control characters but tab.
//
// The reference's own leaf keeps to the same rule, and the byte after it
// ends the token for any new bytes (a closing quote; a byte that is no
// identifier's or number's). A segment matches a reference line by line:
// each line is the reference's with its leaves' bytes replaced, the
// bytes between them the reference's own. The scanner then reads the
// segment as the same tokens, each leaf the same token type with the new
// bytes, and the parser builds the same block with the new values at the
// leaves. TestTerraformShapeIsParse holds the reading to the scanner and
// the parser on every file it reads by segments.
type tfShapes struct {
	mu   sync.Mutex
	segs []*tfSeg
	// byLen holds the references by their number of lines, a block's
	// (whose closing line is its only "}" line, so that a segment of
	// its shape ends at the first such line) under n, a tail's under -n.
	byLen map[int][]*tfSeg
}

// maxSegments bounds the references kept.
const maxSegments = 64

// tfSeg is a segment parsed on its own; kept as a reference, with its
// free leaves (findLeaves).
type tfSeg struct {
	block  *hclsyntax.Block // nil for a tail
	lines  [][]byte
	leaves [][]tfLeaf // by line index, in order
	all    []tfLeaf   // in order
	// byStart finds a leaf by its first byte's offset in the segment.
	byStart map[int]int
	data    []byte // the segment's bytes, as parsed
}

type tfLeafKind uint8

const (
	tfQuoted tfLeafKind = iota
	tfIdent
	tfDigits
	tfComment
)

// tfLeaf is a free leaf: bytes [start, end) of its line, the index-th
// leaf of the segment.
type tfLeaf struct {
	start, end int
	kind       tfLeafKind
	index      int
	// offset is start's offset in the segment, endOffset end's.
	offset, endOffset int
}

// tfRead is a group's Terraform file as verify reads it: the parser's
// diagnostics and its instance template, read back.
type tfRead struct {
	diags    hcl.Diagnostics
	template *model.InstanceTemplate
	// rendered are the paths, relative to out/, that the template's
	// Rendered metadata items read, in their order.
	rendered []string
	err      error // from readTemplate
}

// tfMatch is a segment of a file read by a reference: its first line in
// the file, and the bytes of its leaves (nil: the reference's own).
type tfMatch struct {
	seg  *tfSeg
	line int
	vals [][]byte
}

// read reads data, a .tf file named name, by segments, or parses it in
// full.
func (s *tfShapes) read(data []byte, name string) tfRead {
	if r, _, ok := s.segments(data); ok {
		return r
	}
	f, diags := hclsyntax.ParseConfig(data, name, hcl.InitialPos)
	out := tfRead{diags: diags}
	if diags.HasErrors() {
		out.err = diags
		return out
	}
	var blocks []tfBlock
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		blocks = append(blocks, tfBlock{block: b})
	}
	out.template, out.rendered, out.err = readTemplate(blocks)
	return out
}

// segments reads data by segments: its template, and the segments that
// matched a reference (each with its first line), or false when data does
// not read so.
func (s *tfShapes) segments(data []byte) (tfRead, []tfMatch, bool) {
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return tfRead{}, nil, false
	}
	lines := splitLines(data)
	var read []tfMatch
	var matched []tfMatch
	for j := 0; j < len(lines); {
		k := j
		for k < len(lines)-1 && string(lines[k]) != "}" {
			k++
		}
		key := k - j + 1
		if k == len(lines)-1 {
			key = -key // a tail: no "}" line before the last
		}
		s.mu.Lock()
		cands := s.byLen[key]
		s.mu.Unlock()
		m, ok := tfMatch{}, false
		for _, r := range cands {
			if vals, hit := r.match(lines, j); hit {
				m, ok = tfMatch{seg: r, line: j, vals: vals}, true
				matched = append(matched, m)
				break
			}
		}
		if !ok {
			r := parseSegment(lines, j, k)
			if r == nil {
				return tfRead{}, nil, false
			}
			m = tfMatch{seg: r, line: j}
			s.add(r, key)
		}
		read = append(read, m)
		j += len(m.seg.lines)
	}
	var blocks []tfBlock
	for _, m := range read {
		if m.seg.block != nil {
			blocks = append(blocks, tfBlock{m.seg.block, tfValues{m.seg, m.vals}})
		}
	}
	tmpl, rendered, err := readTemplate(blocks)
	if err == errUnread {
		return tfRead{}, nil, false
	}
	return tfRead{template: tmpl, rendered: rendered, err: err}, matched, true
}

// add keeps a segment just parsed as a reference, under key, while there
// is room and its leaves are found.
func (s *tfShapes) add(r *tfSeg, key int) {
	s.mu.Lock()
	full := len(s.segs) >= maxSegments
	s.mu.Unlock()
	if full || !r.findLeaves() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.segs) < maxSegments {
		if s.byLen == nil {
			s.byLen = map[int][]*tfSeg{}
		}
		s.segs = append(s.segs, r)
		s.byLen[key] = append(s.byLen[key], r)
	}
}

// parseSegment parses the segment of lines from line j to line k: a block
// up to the next line that is "}" alone but the last, or the tail. It
// returns nil unless the piece parses without a diagnostic into one block
// whose closing brace is line k (none for a tail) and no attribute.
func parseSegment(lines [][]byte, j, k int) *tfSeg {
	tail := k == len(lines)-1
	var data []byte
	if tail {
		data = bytes.Join(lines[j:], []byte{'\n'})
	} else {
		data = append(bytes.Join(lines[j:k+1], []byte{'\n'}), '\n')
	}
	f, diags := hclsyntax.ParseConfig(data, "", hcl.InitialPos)
	if len(diags) > 0 {
		return nil
	}
	body := f.Body.(*hclsyntax.Body)
	if len(body.Attributes) > 0 {
		return nil
	}
	r := &tfSeg{lines: lines[j : k+1], data: data}
	switch {
	case tail && len(body.Blocks) == 0:
	case !tail && len(body.Blocks) == 1 && body.Blocks[0].CloseBraceRange.Start.Line == k-j+1 && body.Blocks[0].CloseBraceRange.Start.Column == 1:
		r.block = body.Blocks[0]
	default:
		return nil
	}
	return r
}

// findLeaves records the free leaves of the segment.
func (r *tfSeg) findLeaves() bool {
	r.leaves = make([][]tfLeaf, len(r.lines))
	r.byStart = map[int]int{}
	toks, diags := hclsyntax.LexConfig(r.data, "", hcl.InitialPos)
	if diags.HasErrors() {
		return false
	}
	// A block's first label (a resource's type) decides what the block
	// is: it stays the reference's.
	pinned := map[int]bool{}
	if r.block != nil && len(r.block.LabelRanges) > 0 {
		pinned[r.block.LabelRanges[0].Start.Byte+1] = true
	}
	lines := r.lines
	lineStart := make([]int, len(lines))
	for i, off := 1, 0; i < len(lines); i++ {
		off += len(lines[i-1]) + 1
		lineStart[i] = off
	}
	add := func(t hclsyntax.Token, skip int, kind tfLeafKind) {
		line := t.Range.Start.Line - 1
		if line < 0 || line >= len(lines) || t.Range.End.Line-1 != line && kind != tfComment {
			return
		}
		start := t.Range.Start.Byte + skip - lineStart[line]
		end := t.Range.End.Byte - lineStart[line]
		if kind == tfComment {
			end = len(lines[line]) // the token holds the newline
		}
		if start < 0 || end > len(lines[line]) || start >= end {
			return
		}
		l := lines[line]
		if !leafOK(kind, l[start:end]) || !endsLeaf(kind, l, end) {
			return
		}
		leaf := tfLeaf{start: start, end: end, kind: kind, index: len(r.all),
			offset: lineStart[line] + start, endOffset: lineStart[line] + end}
		r.leaves[line] = append(r.leaves[line], leaf)
		r.byStart[leaf.offset] = leaf.index
		r.all = append(r.all, leaf)
	}
	for i, t := range toks {
		switch t.Type {
		case hclsyntax.TokenQuotedLit:
			if i+1 < len(toks) && toks[i+1].Type == hclsyntax.TokenCQuote && !pinned[t.Range.Start.Byte] {
				add(t, 0, tfQuoted)
			}
		case hclsyntax.TokenIdent:
			if i > 0 && toks[i-1].Type == hclsyntax.TokenDot {
				add(t, 0, tfIdent)
			}
		case hclsyntax.TokenNumberLit:
			add(t, 0, tfDigits)
		case hclsyntax.TokenComment:
			switch {
			case bytes.HasPrefix(t.Bytes, []byte("#")):
				add(t, 1, tfComment)
			case bytes.HasPrefix(t.Bytes, []byte("//")):
				add(t, 2, tfComment)
			}
		}
	}
	return true
}

// leafOK tells whether b keeps to the rule of a leaf of kind.
func leafOK(kind tfLeafKind, b []byte) bool {
	switch kind {
	case tfQuoted:
		if len(b) == 0 {
			return false
		}
		for _, c := range b {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '$' || c == '%' || c == '{' || c == '}' {
				return false
			}
		}
		return true
	case tfIdent:
		if len(b) == 0 || !(isLetter(b[0]) || b[0] == '_') {
			return false
		}
		for _, c := range b {
			if !isIdentByte(c) {
				return false
			}
		}
		return true
	case tfDigits:
		return len(b) > 0 && allDigits(b)
	case tfComment:
		if !utf8.Valid(b) {
			return false
		}
		for _, c := range b {
			if c < 0x20 && c != '\t' || c == 0x7f {
				return false
			}
		}
		return true
	}
	return false
}

// endsLeaf tells whether the byte at end of line l (or the line's end)
// ends a token of kind for any bytes of its rule before it.
func endsLeaf(kind tfLeafKind, l []byte, end int) bool {
	switch kind {
	case tfQuoted:
		return end < len(l) && l[end] == '"'
	case tfIdent:
		return end == len(l) || l[end] < utf8.RuneSelf && !isIdentByte(l[end])
	case tfDigits:
		if end == len(l) {
			return true
		}
		switch l[end] {
		case ' ', '\t', ',', ']', ')', '}':
			return true
		}
		return false
	case tfComment:
		return end == len(l)
	}
	return false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isIdentByte(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// match reads the lines of a file from line j as the reference's
// shape: the bytes of its leaves, in order, or false when they are not of
// that shape. A tail matches only at the end of the file, a block only
// before it.
func (r *tfSeg) match(lines [][]byte, j int) ([][]byte, bool) {
	if r.block == nil && j+len(r.lines) != len(lines) || r.block != nil && j+len(r.lines) >= len(lines) {
		return nil, false
	}
	vals := make([][]byte, len(r.all))
	for i, l := range r.lines {
		s := lines[j+i]
		leaves := r.leaves[i]
		if len(leaves) == 0 {
			if !bytes.Equal(l, s) {
				return nil, false
			}
			continue
		}
		p, q := 0, 0
		for _, f := range leaves {
			fixed := l[p:f.start]
			if !bytes.HasPrefix(s[q:], fixed) {
				return nil, false
			}
			q += len(fixed)
			n := leafLen(f.kind, s[q:])
			if n == 0 || !leafOK(f.kind, s[q:q+n]) {
				return nil, false
			}
			vals[f.index] = s[q : q+n]
			q += n
			p = f.end
		}
		if !bytes.Equal(l[p:], s[q:]) {
			return nil, false
		}
	}
	return vals, true
}

// leafLen is how many bytes at the start of s a leaf of kind takes: up to
// the byte that ends it.
func leafLen(kind tfLeafKind, s []byte) int {
	switch kind {
	case tfQuoted:
		n := bytes.IndexByte(s, '"')
		if n < 0 {
			return 0
		}
		return n
	case tfComment:
		return len(s)
	}
	n := 0
	for n < len(s) && (kind == tfIdent && isIdentByte(s[n]) || kind == tfDigits && s[n] >= '0' && s[n] <= '9') {
		n++
	}
	return n
}
