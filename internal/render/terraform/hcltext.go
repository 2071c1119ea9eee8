package terraform

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// hclText writes an HCL body directly in the layout hclwrite.Format gives
// it, for the files rendered once per node group: building them as
// hclwrite syntax trees and formatting those costs more than everything
// else in rendering a group's Terraform file. What the writer relies on
// of the formatter (hclwrite/format.go, v2.25): two spaces of
// indentation per open block or brace; one space around '=' and after
// ','; and the '=' of consecutive lines that each hold a whole attribute
// aligned one space after the widest name (the names' widths in
// graphemes, which are their lengths for the ASCII names written here).
// A line without a whole attribute (a comment, a blank line, a block's
// opening or closing line, the first line of a multi-line value) ends a
// run of aligned lines. FuzzTerraformCanonical and TestFormatHCL check
// every file against hclwrite.Format; verify parses every file.
type hclText struct {
	b     []byte
	depth int
	run   []hclLine // the current run of aligned attribute lines
	err   error
}

type hclLine struct{ name, value string }

func (w *hclText) indent() {
	for range w.depth {
		w.b = append(w.b, "  "...)
	}
}

// flush writes the run of attribute lines, aligned.
func (w *hclText) flush() {
	width := 0
	for _, l := range w.run {
		width = max(width, len(l.name))
	}
	for _, l := range w.run {
		w.indent()
		w.b = append(w.b, l.name...)
		for range width - len(l.name) + 1 {
			w.b = append(w.b, ' ')
		}
		w.b = append(w.b, "= "...)
		w.b = append(w.b, l.value...)
		w.b = append(w.b, '\n')
	}
	w.run = w.run[:0]
}

// attr writes the attribute name = value; value is an expression on one
// line (see the helpers below).
func (w *hclText) attr(name, value string) {
	if !asciiName(name) {
		w.fail(fmt.Errorf("attribute name %q is not printable ASCII", name))
		return
	}
	w.run = append(w.run, hclLine{name, value})
}

// object writes name = { k = v ... } with one entry a line, in order; each
// key as it is given (an identifier, or hclKey's quoted string).
func (w *hclText) object(name string, entries []hclLine) {
	w.flush()
	w.indent()
	w.b = append(w.b, name...)
	w.b = append(w.b, " = {\n"...)
	w.depth++
	for _, e := range entries {
		w.attr(e.name, e.value)
	}
	w.flush()
	w.depth--
	w.indent()
	w.b = append(w.b, "}\n"...)
}

// comment writes one "# " comment line per element of lines; a line must
// not hold a line break (comment, in terraform.go, says why).
func (w *hclText) comment(lines ...string) {
	w.flush()
	for _, l := range lines {
		if strings.ContainsAny(l, "\n\r") {
			panic(fmt.Sprintf("render: comment line with a line break: %q", l))
		}
		w.indent()
		w.b = append(w.b, "# "...)
		w.b = append(w.b, l...)
		w.b = append(w.b, '\n')
	}
}

// blank writes an empty line.
func (w *hclText) blank() {
	w.flush()
	w.b = append(w.b, '\n')
}

// open starts a block of the type with the labels (quoted).
func (w *hclText) open(typ string, labels ...string) {
	w.flush()
	w.indent()
	w.b = append(w.b, typ...)
	for _, l := range labels {
		w.b = append(w.b, ' ')
		w.b = append(w.b, hclString(l)...)
	}
	w.b = append(w.b, " {\n"...)
	w.depth++
}

// close ends the innermost block.
func (w *hclText) close() {
	w.flush()
	w.depth--
	w.indent()
	w.b = append(w.b, "}\n"...)
}

func (w *hclText) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// file returns the file: header, a blank line and the body.
func (w *hclText) file(header string) ([]byte, error) {
	w.flush()
	if w.err != nil {
		return nil, w.err
	}
	out := make([]byte, 0, len(header)+1+len(w.b))
	out = append(append(append(out, header...), '\n'), w.b...)
	return out, nil
}

func asciiName(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return s != ""
}

// hclString is s as an HCL quoted string literal, the bytes hclwrite gives
// cty.StringVal(s) (hclQuoted); printable ASCII without '"', '\', "${"
// and "%{" is its own literal.
func hclString(s string) string {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\':
			return hclQuoted(s)
		case (c == '$' || c == '%') && i+1 < len(s) && s[i+1] == '{':
			return hclQuoted(s)
		}
	}
	return `"` + s + `"`
}

// hclKey is an object key as hclwrite writes a map's key: bare when it is
// an identifier, else quoted.
func hclKey(k string) string {
	if hclsyntax.ValidIdentifier(k) {
		return k
	}
	return hclString(k)
}

// hclRef is the traversal root.attr.attr...
func hclRef(root string, attrs ...string) string {
	return strings.Join(append([]string{root}, attrs...), ".")
}

// hclCall is the function call name(args...).
func hclCall(name string, args ...string) string {
	return name + "(" + strings.Join(args, ", ") + ")"
}

// hclList is the tuple [items...].
func hclList(items ...string) string {
	return "[" + strings.Join(items, ", ") + "]"
}

// hclStrings is the list of the strings.
func hclStrings(list []string) string {
	items := make([]string, len(list))
	for i, s := range list {
		items[i] = hclString(s)
	}
	return hclList(items...)
}

func hclInt(n int64) string { return strconv.FormatInt(n, 10) }

func hclBool(b bool) string { return strconv.FormatBool(b) }
