package source

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"cuelang.org/go/cue/token"
)

// hashCommentHint says, for an error on a line that starts with "#"
// followed by a space, another "#", "!" or nothing (a shell or YAML
// comment, not a CUE definition like #Foo), or on the line after one,
// that CUE comments start with "//". It returns "" for any other error.
func hashCommentHint(pos token.Pos) string {
	lines := linesAt(pos)
	if lines == nil {
		return ""
	}
	// The error is on the comment's line or, after a "#" alone, the next.
	for _, n := range []int{pos.Line(), pos.Line() - 1} {
		if n >= 1 && hashComment(string(lines[n-1])) {
			return "; a comment in CUE starts with //, not # (line " + strconv.Itoa(n) + ")"
		}
	}
	return ""
}

// linesAt returns the lines of the file pos is in, nil when it cannot be
// read or pos is not on one of its lines.
func linesAt(pos token.Pos) [][]byte {
	if !pos.IsValid() || pos.Filename() == "" {
		return nil
	}
	b, err := os.ReadFile(pos.Filename())
	if err != nil {
		return nil
	}
	lines := bytes.Split(b, []byte("\n"))
	if pos.Line() < 1 || pos.Line() > len(lines) {
		return nil
	}
	return lines
}

func hashComment(line string) bool {
	line = strings.TrimLeft(line, " \t")
	if !strings.HasPrefix(line, "#") {
		return false
	}
	rest := strings.TrimRight(line[1:], "\r")
	return rest == "" || strings.ContainsAny(rest[:1], " \t#!")
}

// unquotedLabel matches a line that starts with a label CUE would have
// quoted, a name with ".", "/" or "-" in it (a Kubernetes label key, an
// annotation, a node group's name), and the colon after it.
var unquotedLabel = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*(?:[./-][A-Za-z0-9_]+)+)\s*:[^:=]`)

// unquotedLabelHint says, for CUE's "missing ','" on a line that starts
// with such a label (CUE parses example.com/pool: as a division, then
// misses the comma the field's end needs), how the label is written; ""
// for any other error.
func unquotedLabelHint(pos token.Pos, msg string) string {
	if !strings.HasPrefix(msg, "missing ','") {
		return ""
	}
	lines := linesAt(pos)
	if lines == nil {
		return ""
	}
	m := unquotedLabel.FindStringSubmatch(string(lines[pos.Line()-1]) + " ")
	if m == nil {
		return ""
	}
	return fmt.Sprintf(`; a label with ".", "/" or "-" in it is quoted in CUE: write %q:`, m[1])
}
