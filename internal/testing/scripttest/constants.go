package scripttest

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// WithConstants returns script with the values of some of its constants
// replaced: for each name of values, the script must have exactly one
// top-level assignment line, "NAME=..." or "readonly NAME=..." at the
// start of a line, whose value (the rest of the line) becomes the given
// one, shell-quoted. The shipped scripts read no environment override of
// their endpoints, paths and delays; a test that needs another value (a
// fake's URL, a short deadline) rewrites the one line that sets it. A
// name with no such line or more than one is an error, so that a renamed
// constant fails the test rather than being left as it was.
func WithConstants(script []byte, values map[string]string) ([]byte, error) {
	lines := bytes.SplitAfter(script, []byte("\n"))
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if !constantName(name) {
			return nil, fmt.Errorf("%q is not a shell variable name", name)
		}
		at := assignments(lines, name)
		switch len(at) {
		case 0:
			return nil, fmt.Errorf("the script has no line %s=... or readonly %s=...", name, name)
		case 1:
		default:
			return nil, fmt.Errorf("the script assigns %s on %d lines (%s), want one", name, len(at), lineNumbers(at))
		}
		i := at[0]
		prefix, _, _ := bytes.Cut(lines[i], []byte("="))
		end := ""
		if bytes.HasSuffix(lines[i], []byte("\n")) {
			end = "\n"
		}
		lines[i] = []byte(string(prefix) + "=" + shellQuote(values[name]) + end)
	}
	return bytes.Join(lines, nil), nil
}

// Constant returns the value of the constant name of script: the rest of
// its one top-level assignment line (as WithConstants finds it), which
// must be a plain word (no quotes, expansions, escapes or blanks). A test
// that maps a constant's production value (a path the workload mounts) to
// one of its own reads it here.
func Constant(script []byte, name string) (string, error) {
	lines := bytes.SplitAfter(script, []byte("\n"))
	at := assignments(lines, name)
	if len(at) != 1 {
		return "", fmt.Errorf("the script assigns %s on %d top-level lines, want one", name, len(at))
	}
	_, v, _ := bytes.Cut(bytes.TrimSuffix(lines[at[0]], []byte("\n")), []byte("="))
	if len(v) == 0 || bytes.ContainsAny(v, "'\"$`\\ \t;&|<>(){}*?[]#~") {
		return "", fmt.Errorf("line %d: %s is not set to a plain word: %s", at[0]+1, name, v)
	}
	return string(v), nil
}

// hasConstant reports whether script has exactly one top-level assignment
// line of name, which WithConstants can replace.
func hasConstant(script []byte, name string) bool {
	return len(assignments(bytes.SplitAfter(script, []byte("\n")), name)) == 1
}

// assignments returns the indexes of the lines that assign name at the
// top level.
func assignments(lines [][]byte, name string) []int {
	var at []int
	for i, l := range lines {
		if bytes.HasPrefix(l, []byte(name+"=")) || bytes.HasPrefix(l, []byte("readonly "+name+"=")) {
			at = append(at, i)
		}
	}
	return at
}

func lineNumbers(at []int) string {
	s := make([]string, len(at))
	for i, n := range at {
		s[i] = fmt.Sprintf("line %d", n+1)
	}
	return strings.Join(s, ", ")
}

func constantName(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// shellQuote quotes s as one word for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
