// Package diag collects positioned findings about a nodegen source and
// prints them the way compilers do: file:line:col: path: message.
package diag

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue/token"
)

// Finding is one problem in a source.
type Finding struct {
	Pos  token.Pos // position of the offending value; may be token.NoPos
	Path string    // CUE path of the offending field, e.g. nodeGroups.gpu.labels
	Msg  string    // what is wrong and, where possible, how to fix it
}

// List is a set of findings. A non-empty List is an error.
type List []Finding

// Add appends a finding.
func (l *List) Add(pos token.Pos, path, format string, args ...any) {
	*l = append(*l, Finding{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Error implements error with the findings one per line, positions as given.
func (l List) Error() string {
	var b strings.Builder
	l.Print(&b, "")
	return strings.TrimSuffix(b.String(), "\n")
}

// Sorted returns the findings in file, line, column, path, message order,
// without duplicates.
func (l List) Sorted() List {
	out := slices.Clone(l)
	slices.SortFunc(out, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Filename(), b.Pos.Filename()),
			cmp.Compare(a.Pos.Line(), b.Pos.Line()),
			cmp.Compare(a.Pos.Column(), b.Pos.Column()),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.CompactFunc(out, func(a, b Finding) bool {
		return a.Pos == b.Pos && a.Path == b.Path && a.Msg == b.Msg
	})
}

// Print writes the sorted findings to w, one per line, with file names
// relative to cwd (when cwd is not empty) and forward slashes.
func (l List) Print(w io.Writer, cwd string) {
	for _, f := range l.Sorted() {
		fmt.Fprintln(w, f.Format(cwd))
	}
}

// Format renders a finding as "file:line:col: path: message".
func (f Finding) Format(cwd string) string {
	var b strings.Builder
	if f.Pos.IsValid() {
		name := f.Pos.Filename()
		if cwd != "" && filepath.IsAbs(name) {
			if rel, err := filepath.Rel(cwd, name); err == nil && !strings.HasPrefix(rel, "..") {
				name = rel
			}
		}
		fmt.Fprintf(&b, "%s:%d:%d: ", filepath.ToSlash(name), f.Pos.Line(), f.Pos.Column())
	}
	if f.Path != "" {
		b.WriteString(oneLine.Replace(f.Path))
		b.WriteString(": ")
	}
	b.WriteString(oneLine.Replace(f.Msg))
	return b.String()
}

// oneLine keeps a finding on its one line: a line break a message quotes
// from the source (a multi-line string) is written as its escape.
var oneLine = strings.NewReplacer("\r\n", `\r\n`, "\n", `\n`, "\r", `\r`)

// Path joins CUE field labels into a path, quoting labels that are not
// identifiers ("labels.\"example.com/pool\"").
func Path(labels ...string) string {
	var b strings.Builder
	for i, l := range labels {
		if i > 0 {
			b.WriteByte('.')
		}
		if isIdent(l) || isIndex(l) || strings.HasPrefix(l, "\"") || strings.HasPrefix(l, "[") {
			b.WriteString(l)
		} else {
			fmt.Fprintf(&b, "%q", l)
		}
	}
	return b.String()
}

// isIndex reports whether a label is a list index, written bare as CUE
// writes it in error paths (taints.0.key).
func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || r == '#' && i == 0:
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// GroupError is a node group's artifact that failed verification. It
// carries no position: the pipeline places it at the group's.
type GroupError struct {
	Group string // node group name
	Path  string // artifact path under out/
	Err   error
}

func (e *GroupError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *GroupError) Unwrap() error { return e.Err }
