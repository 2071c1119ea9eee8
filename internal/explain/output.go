package explain

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the report as a table: one row per workload and group,
// one more row per further reason, then a summary line.
func WriteTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tGROUP\tVERDICT\tDETAIL")
	for _, wr := range r.Workloads {
		first := wr.Workload + " (" + wr.Source + ")"
		for _, gr := range wr.Groups {
			details := groupDetails(gr)
			for i, d := range details {
				wl, group, verdict := "", "", ""
				if i == 0 {
					wl, group, verdict = first, gr.Group, verdictText(gr.Verdict)
					first = ""
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", wl, group, verdict, d)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, wr := range r.Workloads {
		if wr.Preferred != nil {
			fmt.Fprintf(w, "%s: the priority expander prefers %s (priority %d)\n", wr.Workload, strings.Join(wr.Preferred, ", "), *wr.PreferredPriority)
		}
	}
	if p := r.Plan; p != nil {
		fmt.Fprintf(w, "\nplan, %s; in the order of %s:\n", PlanEstimate, p.Order)
		for _, s := range p.Steps {
			fmt.Fprintf(w, "  %s\n", s)
		}
		for _, q := range p.Pending {
			fmt.Fprintf(w, "  %s: %d %s %s pending: %s\n", q.Workload, q.Pods, plural(q.Pods, "pod", "pods"), plural(q.Pods, "stays", "stay"), q.Reason)
		}
		fmt.Fprintln(w)
	}
	for _, s := range r.SpotFallbacks {
		fmt.Fprintln(w, s)
	}
	for _, n := range r.Autoscaler {
		fmt.Fprintf(w, "autoscaler: %s\n", n.Message)
	}
	for _, b := range r.InitBudgets {
		fmt.Fprintf(w, "init budget: %s\n", b.Message)
	}
	if m := r.PodMTU; m != nil {
		fmt.Fprintf(w, "pod network: MTU %s; the paths a pod packet takes:\n", m.Derivation)
		for _, p := range m.Paths {
			fmt.Fprintf(w, "  %d  %s\n", p.MTU, p.What)
		}
	}
	var none []string
	for _, wr := range r.Workloads {
		if !wr.Fits {
			none = append(none, wr.Workload)
		}
	}
	switch {
	case len(r.Workloads) == 0:
		_, err := fmt.Fprintln(w, "\nno workloads found")
		return err
	case len(none) == 0:
		_, err := fmt.Fprintf(w, "\nevery workload fits an autoscaled node group (%d)\n", len(r.Workloads))
		return err
	default:
		noun, verb := "workloads", "fit"
		if len(r.Workloads) == 1 {
			noun = "workload"
		}
		if len(none) == 1 {
			verb = "fits"
		}
		_, err := fmt.Fprintf(w, "\n%d of %d %s %s no autoscaled node group: %s\n", len(none), len(r.Workloads), noun, verb, strings.Join(none, ", "))
		return err
	}
}

func groupDetails(gr GroupResult) []string {
	switch gr.Verdict {
	case Fits:
		return append([]string{"zones " + strings.Join(gr.Zones, ", ")}, gr.Notes...)
	case NotAutoscaled:
		return []string{"kind " + gr.Kind}
	}
	var out []string
	for _, r := range gr.Reasons {
		m := r.Message
		if r.Zone != "" {
			m = r.Zone + ": " + m
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}

func verdictText(v string) string {
	switch v {
	case NoFit:
		return "does not fit"
	case NotAutoscaled:
		return "not autoscaled"
	}
	return v
}
