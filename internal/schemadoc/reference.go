package schemadoc

import (
	"bytes"
	"fmt"
	"strings"
)

// Facts is the one-line summary of a field: type, default or requirement,
// and the node-group kinds it applies to.
func (f *Field) Facts() string {
	parts := []string{"type `" + f.Type + "`"}
	switch {
	case f.Derived != "":
		parts = append(parts, "set by nodegen: "+f.Derived)
	case f.Default != "":
		parts = append(parts, "default `"+f.Default+"`")
	case f.Required:
		parts = append(parts, "required")
	default:
		parts = append(parts, "optional")
	}
	if len(f.Kinds) > 0 {
		parts = append(parts, "only for kind "+strings.Join(f.Kinds, ", "))
	}
	return strings.Join(parts, " · ")
}

// Reference renders the source reference as Markdown: one section per
// field, in schema order, then the named types.
func (s *Schema) Reference() []byte {
	var b bytes.Buffer
	b.WriteString("# nodegen source reference\n\n")
	b.WriteString("A nodegen source is a directory of plain CUE data files (`nodegroups/*.cue`: no package\n")
	b.WriteString("clause, no imports). nodegen unifies them with this schema, which is built into the binary.\n")
	b.WriteString("`" + GroupKey + "` is a node group's key in `nodeGroups`, `" + AnyKey + "` any key of a map, `" + Elem + "` an element of a list.\n")
	section := ""
	for _, f := range s.Fields {
		top, _, _ := strings.Cut(f.Path, ".")
		if top != section {
			section = top
			fmt.Fprintf(&b, "\n## %s\n", top)
		}
		fmt.Fprintf(&b, "\n### `%s`\n\n%s\n", f.Path, f.Facts())
		if f.Doc != "" {
			fmt.Fprintf(&b, "\n%s\n", f.Doc)
		}
	}
	if len(s.Defs) > 0 {
		b.WriteString("\n## Types\n")
		for _, d := range s.Defs {
			fmt.Fprintf(&b, "\n### `%s`\n\n`%s`\n", d.Name, d.Type)
			if d.Doc != "" {
				fmt.Fprintf(&b, "\n%s\n", d.Doc)
			}
		}
	}
	return b.Bytes()
}
