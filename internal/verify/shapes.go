package verify

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/gce"
)

// scriptShapes reads the startup scripts of a cluster's groups, which
// differ from group to group only in a few values, with the bash parser
// once per shape: a script that matches a script already parsed (a
// reference) everywhere but inside the reference's free leaves is read
// from the reference's syntax tree instead of being parsed again.
//
// A free leaf is a part of a line whose bytes do not change how bash
// reads anything after them, as long as the new bytes keep to a rule:
//
//   - a comment's text after its '#' (comments end at the newline, and a
//     line has none inside): any bytes;
//   - the value of a single-quoted string ('...', not $'...') that opens
//     and closes on the line and is not a heredoc's delimiter: any bytes
//     but ', which alone ends it;
//   - an assignment's value that is a word of digits alone: digits.
//
// The body of a quoted heredoc (<<'D', so that bash expands nothing in
// it) is free as a whole: any lines up to the first line that is D.
//
// The match walks the two scripts line by line: each line is the
// reference's, or differs from it inside one free leaf of the line (the
// bytes before and after the difference the reference's own), or is in a
// quoted heredoc's body. At the start of each line bash is then in the
// state it is in at the same line of the reference, so it reads the same
// commands, with the new values in the same leaves, and the script parses
// as the reference did; its quoted heredocs are the lines that stand in
// the reference's bodies. TestScriptShapeIsParse holds the match to the
// parser's own reading of every script it accepts.
type scriptShapes struct {
	mu   sync.Mutex
	refs []*shapeRef
}

// maxShapes bounds the references kept, and so the references a script
// is tried against before it is parsed in full.
const maxShapes = 16

// heredocs returns the quoted heredocs of a startup script, or the bash
// parser's error, after checking that the script fits in GCE metadata.
func (s *scriptShapes) heredocs(data []byte) (heredocs, error) {
	if len(data) > gce.MetadataValueLimit {
		return nil, fmt.Errorf("%d bytes, over GCE's metadata value limit of %d", len(data), gce.MetadataValueLimit)
	}
	lines := splitLines(data)
	s.mu.Lock()
	refs := s.refs
	s.mu.Unlock()
	for _, r := range refs {
		if h, ok := r.match(lines); ok {
			return h, nil
		}
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(bytes.NewReader(data), "")
	if err != nil {
		return nil, err
	}
	if r := newShapeRef(f, lines); r != nil {
		s.mu.Lock()
		if len(s.refs) < maxShapes {
			s.refs = append(s.refs, r)
		}
		s.mu.Unlock()
	}
	return quotedHeredocs(f), nil
}

// shapeRef is a script parsed in full, with what the match needs of its
// syntax tree.
type shapeRef struct {
	lines  [][]byte
	leaves map[int][]leaf  // by line index
	bodies map[int]hdocRef // quoted heredocs' bodies, by their first line
}

type leafKind uint8

const (
	commentLeaf leafKind = iota
	quotedLeaf
	digitsLeaf
)

// leaf is a free leaf: bytes [start, end) of its line.
type leaf struct {
	start, end int
	kind       leafKind
}

// hdocRef is a quoted heredoc's body: the lines from its first to end,
// the line that is delim.
type hdocRef struct {
	delim string
	end   int
}

// newShapeRef records the free leaves and quoted heredoc bodies of a
// parsed script, or returns nil when the script has a shape the match
// does not take (a heredoc body that does not start a line of its own,
// or two heredocs on one line).
func newShapeRef(f *syntax.File, lines [][]byte) *shapeRef {
	r := &shapeRef{lines: lines, leaves: map[int][]leaf{}, bodies: map[int]hdocRef{}}
	ok := true
	hdocLines := map[uint]bool{}
	// A heredoc's delimiter is read by the parser: its quotes are no
	// free leaf. Walk visits a redirect before its word.
	delims := map[*syntax.SglQuoted]bool{}
	add := func(line uint, l leaf) { r.leaves[int(line)-1] = append(r.leaves[int(line)-1], l) }
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Comment:
			line := r.line(n.Hash.Line())
			if line == nil || n.Hash.Col() > uint(len(line)) || line[n.Hash.Col()-1] != '#' {
				ok = false
				break
			}
			add(n.Hash.Line(), leaf{start: int(n.Hash.Col()), end: len(line), kind: commentLeaf})
		case *syntax.SglQuoted:
			if !n.Dollar && !delims[n] && n.Left.Line() == n.Right.Line() {
				add(n.Left.Line(), leaf{start: int(n.Left.Col()), end: int(n.Right.Col()) - 1, kind: quotedLeaf})
			}
		case *syntax.Assign:
			if l := digitsWord(n.Value); !n.Naked && l != nil && l.ValuePos.Line() == l.ValueEnd.Line() {
				line := r.line(l.ValueEnd.Line())
				end := int(l.ValueEnd.Col()) - 1
				if line != nil && (end == len(line) || line[end] == ' ' || line[end] == '\t' || line[end] == ';') {
					add(l.ValuePos.Line(), leaf{start: int(l.ValuePos.Col()) - 1, end: end, kind: digitsLeaf})
				}
			}
		case *syntax.Redirect:
			if n.Op != syntax.Hdoc && n.Op != syntax.DashHdoc {
				break
			}
			if n.Word != nil {
				for _, p := range n.Word.Parts {
					if sq, ok := p.(*syntax.SglQuoted); ok {
						delims[sq] = true
					}
				}
			}
			if hdocLines[n.OpPos.Line()] {
				ok = false
			}
			hdocLines[n.OpPos.Line()] = true
			delim, quoted := quotedWord(n.Word)
			if n.Op != syntax.Hdoc || !quoted || n.Hdoc == nil || len(n.Hdoc.Parts) == 0 {
				break
			}
			first := int(n.Hdoc.Pos().Line()) - 1
			if n.Hdoc.Pos().Col() != 1 || first <= int(n.OpPos.Line())-1 {
				ok = false
				break
			}
			end := -1
			for i := first; i < len(lines); i++ {
				if string(lines[i]) == delim {
					end = i
					break
				}
			}
			if end <= first {
				ok = false
				break
			}
			r.bodies[first] = hdocRef{delim: delim, end: end}
		}
		return true
	})
	if !ok {
		return nil
	}
	return r
}

// line is the line of 1-based number n, nil past the end.
func (r *shapeRef) line(n uint) []byte {
	if n < 1 || int(n) > len(r.lines) {
		return nil
	}
	return r.lines[n-1]
}

// match reads a script of lines as the reference's shape: its quoted
// heredocs, or false when it is not of that shape.
func (r *shapeRef) match(lines [][]byte) (heredocs, bool) {
	h := heredocs{}
	i, j := 0, 0
	for i < len(r.lines) {
		if b, ok := r.bodies[i]; ok {
			k := j
			for k < len(lines) && string(lines[k]) != b.delim {
				k++
			}
			if k == j || k == len(lines) {
				return nil, false // an empty body, or none that ends
			}
			var body strings.Builder
			for _, l := range lines[j:k] {
				body.Write(l)
				body.WriteByte('\n')
			}
			h[b.delim] = append(h[b.delim], body.String())
			i, j = b.end+1, k+1
			continue
		}
		if j >= len(lines) || !r.sameOrFree(i, lines[j]) {
			return nil, false
		}
		i++
		j++
	}
	if j != len(lines) {
		return nil, false
	}
	return h, true
}

// sameOrFree tells whether line s is the reference's line i, or differs
// from it inside one free leaf of the line within that leaf's rule.
func (r *shapeRef) sameOrFree(i int, s []byte) bool {
	l := r.lines[i]
	if bytes.Equal(l, s) {
		return true
	}
	p := 0
	for p < len(l) && p < len(s) && l[p] == s[p] {
		p++
	}
	q := 0
	for q < len(l)-p && q < len(s)-p && l[len(l)-1-q] == s[len(s)-1-q] {
		q++
	}
	// The parser refuses a script that is not UTF-8, in a comment as
	// anywhere ("invalid UTF-8 encoding": mvdan.cc/sh/v3 v3.14.1, syntax/lexer.go);
	// the reference's lines are.
	if !utf8.Valid(s) {
		return false
	}
	for _, f := range r.leaves[i] {
		if f.start > p || len(l)-q > f.end {
			continue
		}
		switch f.kind {
		case commentLeaf:
			return true
		case quotedLeaf:
			return bytes.IndexByte(s[p:len(s)-q], '\'') < 0
		case digitsLeaf:
			w := s[f.start : f.end+len(s)-len(l)]
			return len(w) > 0 && allDigits(w)
		}
	}
	return false
}

// splitLines splits a script at its newlines; a script that ends with one
// has an empty last line.
func splitLines(data []byte) [][]byte {
	lines := make([][]byte, 0, bytes.Count(data, []byte{'\n'})+1)
	for {
		k := bytes.IndexByte(data, '\n')
		if k < 0 {
			return append(lines, data)
		}
		lines = append(lines, data[:k])
		data = data[k+1:]
	}
}

// digitsWord is the literal of a word that is one literal of digits.
func digitsWord(w *syntax.Word) *syntax.Lit {
	if w == nil || len(w.Parts) != 1 {
		return nil
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok || l.Value == "" || !allDigits([]byte(l.Value)) {
		return nil
	}
	return l
}

// quotedWord is the value of a word that is one single-quoted string.
func quotedWord(w *syntax.Word) (string, bool) {
	if w == nil || len(w.Parts) != 1 {
		return "", false
	}
	sq, ok := w.Parts[0].(*syntax.SglQuoted)
	if !ok || sq.Dollar {
		return "", false
	}
	return sq.Value, true
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
