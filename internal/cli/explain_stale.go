package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/rollout"
)

// staleTemplates tells, for each autoscaled group with stale nodes among
// the nodes of nodesFile, that the autoscaler builds its template from
// one of those nodes rather than from kube-env (it prefers a healthy node
// of the group), so that its scale-ups follow the old labels and taints
// until nodegen rollout replaced them; and what the rollout changes.
func staleTemplates(s *streams, w io.Writer, src *model.Source, rendered layout.Files, nodesFile string) error {
	data, err := readInput(s, nodesFile)
	if err != nil {
		return err
	}
	nodes, err := drift.ReadNodes(nodesFile, data)
	if err != nil {
		return err
	}
	revs, err := rollout.Revisions(src, rendered)
	if err != nil {
		return err
	}
	plan := rollout.MakePlan(src, revs, nodes)
	var b strings.Builder
	for _, g := range plan.Groups {
		stale := g.Stale()
		if stale == 0 || !src.NodeGroups[g.Group].Autoscaled() {
			continue
		}
		var names, current []string
		for _, m := range g.MIGs {
			for _, n := range m.Stale {
				names = append(names, n.Name)
			}
			current = append(current, m.Current...)
		}
		fmt.Fprintf(&b, "\n%s: %d stale %s (%s) at another revision than the source's %s.", g.Group, stale, plural(stale, "node", "nodes"), strings.Join(names, ", "), g.Revision)
		if len(current) == 0 {
			b.WriteString(" Until nodegen rollout replaces them, the autoscaler builds the group's template from one of them, not from kube-env, so its scale-ups follow the old nodes' labels and taints; the verdicts above are the source's, as after the rollout.\n")
		} else {
			b.WriteString(" The autoscaler builds the group's template from one of its healthy nodes, the old ones included, so until nodegen rollout replaced them its scale-ups may follow the old labels and taints; the verdicts above are the source's, as after the rollout.\n")
		}
		for _, c := range g.Changes {
			fmt.Fprintf(&b, "  after the rollout: %s\n", c)
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
