package drift

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodecheck"
)

// Report is everything drift compared.
type Report struct {
	// Drift is true when any node or template differs from the source.
	Drift bool `json:"drift"`
	// Nodes are the nodes nodegen manages (or should), sorted by name; nil
	// when no nodes were read.
	Nodes []nodecheck.NodeResult `json:"nodes"`
	// UnmanagedNodes carry neither the identity label nor a gce:// providerID.
	UnmanagedNodes []string `json:"unmanagedNodes,omitempty"`
	// Templates are the instance templates in the order given.
	Templates []TemplateResult `json:"templates"`
}

// NewReport assembles a report and decides whether there is drift.
func NewReport(nodes []nodecheck.NodeResult, unmanaged []string, templates []TemplateResult) *Report {
	r := &Report{Nodes: nodes, UnmanagedNodes: unmanaged, Templates: templates}
	for _, n := range nodes {
		r.Drift = r.Drift || len(n.Findings) > 0
	}
	for _, t := range templates {
		r.Drift = r.Drift || len(t.Findings) > 0
	}
	return r
}

// WriteText writes the report for people: a table of nodes and one of
// templates (a row per finding, "ok" when none), the startup-script diffs,
// then a summary line.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	table := func(head string, rows [][3]string) {
		fmt.Fprintln(tw, head)
		for _, row := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", row[0], row[1], row[2])
		}
	}
	rowsOf := func(name, group string, fs []nodecheck.Finding) [][3]string {
		if group == "" {
			group = "-"
		}
		if len(fs) == 0 {
			return [][3]string{{name, group, "ok"}}
		}
		var rows [][3]string
		for i, f := range fs {
			if i == 0 {
				rows = append(rows, [3]string{name, group, f.Message})
			} else {
				rows = append(rows, [3]string{"", "", f.Message})
			}
		}
		return rows
	}
	driftNodes, driftTemplates := 0, 0
	if r.Nodes != nil {
		var rows [][3]string
		for _, n := range r.Nodes {
			rows = append(rows, rowsOf(n.Name, n.Group, n.Findings)...)
			if len(n.Findings) > 0 {
				driftNodes++
			}
		}
		table("NODE\tGROUP\tSTATUS", rows)
	}
	if r.Templates != nil {
		if r.Nodes != nil {
			fmt.Fprintln(tw)
		}
		var rows [][3]string
		for _, t := range r.Templates {
			rows = append(rows, rowsOf(t.Name, t.Group, t.Findings)...)
			if len(t.Findings) > 0 {
				driftTemplates++
			}
		}
		table("TEMPLATE\tGROUP\tSTATUS", rows)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range r.Templates {
		for _, f := range t.Findings {
			if f.Diff != "" {
				fmt.Fprintf(w, "\n%s of template %s (%s):\n%s", f.Kind, t.Name, t.File, f.Diff)
			}
		}
	}
	var parts []string
	differ := "differ"
	if r.Nodes != nil {
		parts = append(parts, fmt.Sprintf("%d of %d %s", driftNodes, len(r.Nodes), plural(len(r.Nodes), "node", "nodes")))
		if driftNodes == 1 {
			differ = "differs"
		}
	}
	if r.Templates != nil {
		parts = append(parts, fmt.Sprintf("%d of %d instance %s", driftTemplates, len(r.Templates), plural(len(r.Templates), "template", "templates")))
		if driftTemplates == 1 {
			differ = "differs"
		}
	}
	if len(parts) > 1 {
		differ = "differ"
	}
	summary := "no drift: " + strings.Join(parts, ", ") + " " + differ + " from the source"
	if r.Drift {
		summary = "drift: " + strings.Join(parts, ", ") + " " + differ + " from the source"
	}
	if len(r.UnmanagedNodes) > 0 {
		summary += fmt.Sprintf("; not managed by nodegen (no %s label, no gce:// providerID): %s", model.GroupLabel, strings.Join(r.UnmanagedNodes, ", "))
	}
	_, err := fmt.Fprintln(w, "\n"+summary)
	return err
}

// plural is one for n == 1, many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
