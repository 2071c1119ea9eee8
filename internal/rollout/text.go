package rollout

import (
	"fmt"
	"io"
	"strings"

	"github.com/nodegen/nodegen/internal/model"
)

// WriteText prints the plan for a person.
func (p Plan) WriteText(w io.Writer, autoscalerGroup string) error {
	var b strings.Builder
	onTimeout := "stop"
	if p.Policy.OnDrainTimeout == model.OnDrainTimeoutForce {
		onTimeout = "force: delete the pods a budget still protects"
	}
	fmt.Fprintf(&b, "rollout plan: surge %d per MIG, maxUnavailable %d, drain timeout %s (then %s)\n", p.Policy.Surge, p.Policy.MaxUnavailable, p.Policy.DrainTimeout, onTimeout)
	var allowed []string
	if p.Drain.Force {
		allowed = append(allowed, "pods without a controller (--force)")
	}
	if p.Drain.DeleteEmptyDirData {
		allowed = append(allowed, "pods with emptyDir data (--delete-emptydir-data)")
	}
	if p.Drain.EvictDoNotDisrupt {
		allowed = append(allowed, "pods annotated not to be disrupted (--evict-do-not-disrupt)")
	}
	if p.Drain.DeleteLocalVolumeData {
		allowed = append(allowed, "pods with data on the VM's disks (--delete-local-volume-data)")
	}
	if len(allowed) > 0 {
		fmt.Fprintf(&b, "drains also evict %s\n", strings.Join(allowed, ", "))
	}
	if !p.PodsRead {
		b.WriteString("pods not read (--nodes): the pods a drain would hold back are not listed\n")
	}
	total, held, atMax, leaving := 0, 0, 0, 0
	if len(p.Leaving) > 0 {
		b.WriteString("\nleaving the source, first: their nodes drained and deleted through their MIG, then the empty MIG deleted (terraform apply refuses to delete a MIG: its deletion_policy is PREVENT)\n")
		fmt.Fprintf(&b, "   in this order: 1. `%s` (the autoscaler stops sizing these MIGs: --yes refuses while its Deployment still names one), 2. `nodegen rollout --yes`, 3. `terraform apply`\n", p.AutoscalerUpgrade)
	}
	for _, l := range p.Leaving {
		fmt.Fprintf(&b, "   %s (MIG %s): %s\n", l.Zone, l.Name, l.Why)
		if l.Excluded {
			fmt.Fprintf(&b, "     excluded by cluster.rollout.exclude, left alone (%d %s)\n", len(l.Nodes), plural(len(l.Nodes), "node", "nodes"))
			continue
		}
		leaving += len(l.Nodes)
		var parts []string
		for _, s := range l.Nodes {
			part := s.Name
			if s.Draining {
				part += " (already cordoned: resumed)"
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(&b, "     drain and delete, one at a time, no replacement: %s\n", strings.Join(parts, ", "))
		for _, s := range l.Nodes {
			if len(s.Held) > 0 {
				held++
				fmt.Fprintf(&b, "       %s is not drained: it holds pods not evicted without a flag: %s\n", s.Name, heldText(s.Held))
			}
			if len(s.JobPods) > 0 {
				fmt.Fprintf(&b, "       %s: Job pods evicted, each a failure against its Job's backoffLimit unless the Job's podFailurePolicy ignores DisruptionTarget: %s\n", s.Name, strings.Join(s.JobPods, ", "))
			}
		}
	}
	for i, g := range p.Groups {
		kind := g.Kind
		if g.Group == autoscalerGroup {
			kind += ", the autoscaler's own node: last"
		}
		stale := g.Stale()
		switch {
		case g.Excluded:
			fmt.Fprintf(&b, "\n%d. %s (%s): excluded by cluster.rollout.exclude, left alone (%d stale)\n", i+1, g.Group, kind, stale)
			continue
		case stale == 0:
			current := 0
			for _, m := range g.MIGs {
				current += len(m.Current)
			}
			fmt.Fprintf(&b, "\n%d. %s (%s): up to date at revision %s (%d %s), untouched\n", i+1, g.Group, kind, g.Revision, current, plural(current, "node", "nodes"))
			continue
		}
		total += stale
		fmt.Fprintf(&b, "\n%d. %s (%s): %d stale %s → revision %s\n", i+1, g.Group, kind, stale, plural(stale, "node", "nodes"), g.Revision)
		for _, c := range g.Changes {
			fmt.Fprintf(&b, "   change: %s\n", c)
		}
		for _, m := range g.MIGs {
			if len(m.Stale) == 0 {
				continue
			}
			fmt.Fprintf(&b, "   %s (MIG %s, %d current):\n", m.Zone, m.Name, len(m.Current))
			switch {
			case m.Surge == 0 && m.Caps != "":
				atMax++
				fmt.Fprintf(&b, "     at the autoscaler's caps: %s leaves no room for a surge, skipped (raise the cap or make room)\n", m.Caps)
				continue
			case m.Surge == 0:
				atMax++
				fmt.Fprintf(&b, "     at the group's max of %d nodes: no room for a surge, skipped (lower its size or raise max)\n", m.Max)
				continue
			case m.Surge < p.Policy.Surge && m.Caps != "":
				fmt.Fprintf(&b, "     surge limited to %d by the autoscaler's caps: %s\n", m.Surge, m.Caps)
			case m.Surge < p.Policy.Surge:
				fmt.Fprintf(&b, "     surge limited to %d: the group's max is %d nodes per MIG\n", m.Surge, m.Max)
			}
			for j := 0; j < len(m.Stale); j += m.Surge {
				batch := m.Stale[j:min(j+m.Surge, len(m.Stale))]
				var parts []string
				for _, s := range batch {
					rev := s.Revision
					if rev == "" {
						rev = "none"
					}
					part := fmt.Sprintf("%s (revision %s) by %s", s.Name, rev, s.Replacement)
					if s.Draining {
						part += ", already cordoned: resumed"
					}
					parts = append(parts, part)
				}
				fmt.Fprintf(&b, "     surge %d, then drain and delete: %s\n", len(batch), strings.Join(parts, "; "))
				for _, s := range batch {
					if len(s.Held) > 0 {
						held++
						fmt.Fprintf(&b, "       %s is not drained: it holds pods not evicted without a flag: %s\n", s.Name, heldText(s.Held))
					}
					if len(s.JobPods) > 0 {
						fmt.Fprintf(&b, "       %s: Job pods evicted, each a failure against its Job's backoffLimit unless the Job's podFailurePolicy ignores DisruptionTarget: %s\n", s.Name, strings.Join(s.JobPods, ", "))
					}
				}
			}
		}
	}
	if total == 0 && leaving == 0 {
		b.WriteString("\nnothing to do: every cloud node is at its group's revision\n")
	} else {
		b.WriteString("\n")
		if leaving > 0 {
			fmt.Fprintf(&b, "%d %s leaving the source to drain and delete\n", leaving, plural(leaving, "node", "nodes"))
		}
		if total > 0 {
			fmt.Fprintf(&b, "%d stale %s to replace; ", total, plural(total, "node", "nodes"))
		}
		b.WriteString("run again with --yes to carry it out\n")
		b.WriteString("each replaced or removed node's VM is deleted with its disks (boot disk, local SSDs), and the data pods keep there (emptyDir, hostPath, local PersistentVolumes) with it; the drains hold such pods unless a flag allows it\n")
		if atMax > 0 {
			fmt.Fprintf(&b, "%d %s at the group's max or the autoscaler's caps: the rollout skips them, reports them and goes on\n", atMax, plural(atMax, "MIG is", "MIGs are"))
		}
		if p.UpcomingNodeFreeze && total > 0 {
			fmt.Fprintf(&b, "while a surge's replacement is upcoming (until it registers, then until it is ready), the autoscaler %s adds no node anywhere: each batch holds every scale-up (docs/rollout.md)\n", p.AutoscalerTag)
		}
		if held > 0 {
			fmt.Fprintf(&b, "%d %s pods held back: the rollout stops at the first until they are gone or the flags named allow their eviction\n", held, plural(held, "node holds", "nodes hold"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
