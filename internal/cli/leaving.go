package cli

import (
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/outdir"
)

// migChanges is what the changes do to the MIGs of the rendered
// Terraform.
type migChanges struct {
	// Leaving are the MIGs the changes take out of it (a zone removed from
	// a group, a group removed or renamed): every
	// google_compute_instance_group_manager a changed .tf file's old bytes
	// name that no changed file's new bytes declare.
	Leaving []string
	// Unguarded are those of Leaving whose old block had no
	// deletion_policy (out/ rendered by a nodegen before it): the state
	// has none either, and terraform apply would delete them.
	Unguarded []string
	// Added are the MIGs the new bytes declare and the old did not, when
	// some MIG leaves: sayLeaving names them only then.
	Added []string
}

func leavingMIGs(changes []outdir.Change) migChanges {
	var tf []outdir.Change
	before := map[string]bool{}
	for _, ch := range changes {
		if path.Ext(ch.Path) != ".tf" || ch.Kind == outdir.Mode {
			continue
		}
		tf = append(tf, ch)
		for n, guarded := range migNames(ch.Path, ch.Old) {
			before[n] = before[n] || guarded
		}
	}
	if len(before) == 0 {
		// No old bytes declared a MIG, so none leaves: the new bytes
		// (every file, for a gen into an empty out/) need no parse.
		return migChanges{}
	}
	after := map[string]bool{}
	for _, ch := range tf {
		for n := range migNames(ch.Path, ch.New) {
			after[n] = true
		}
	}
	var out migChanges
	for n, guarded := range before {
		if !after[n] {
			out.Leaving = append(out.Leaving, n)
			if !guarded {
				out.Unguarded = append(out.Unguarded, n)
			}
		}
	}
	for n := range after {
		if _, had := before[n]; !had {
			out.Added = append(out.Added, n)
		}
	}
	slices.Sort(out.Leaving)
	slices.Sort(out.Unguarded)
	slices.Sort(out.Added)
	return out
}

// migNames reads the literal names of the MIGs a Terraform file declares,
// each with whether its block sets deletion_policy (none when the file
// does not parse: it was not nodegen's).
func migNames(name string, b []byte) map[string]bool {
	if len(b) == 0 {
		return nil
	}
	f, diags := hclparse.NewParser().ParseHCL(b, name)
	if diags.HasErrors() {
		return nil
	}
	out := map[string]bool{}
	for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
		if blk.Type != "resource" || len(blk.Labels) != 2 || blk.Labels[0] != gce.TFGroupManager {
			continue
		}
		if n, ok := literal(blk.Body, "name"); ok {
			_, guarded := blk.Body.Attributes["deletion_policy"]
			out[n] = out[n] || guarded
		}
	}
	return out
}

// sayLeaving tells what to run before terraform apply when MIGs leave the
// rendered Terraform: apply refuses to delete them (their deletion_policy
// is PREVENT, once an apply put it in the state), and nodegen rollout
// drains their nodes and deletes them. A MIG whose Terraform had no
// deletion_policy is not guarded: the state has none. MIGs the same
// changes add do not exist before the apply, so the leaving nodes' pods
// cannot go to them.
func sayLeaving(w io.Writer, m migChanges) {
	var guarded []string
	for _, n := range m.Leaving {
		if !slices.Contains(m.Unguarded, n) {
			guarded = append(guarded, n)
		}
	}
	if len(guarded) > 0 {
		what, verb, it := "MIG", "leaves", "it"
		if len(guarded) > 1 {
			what, verb, it = "MIGs", "leave", "them"
		}
		fmt.Fprintf(w, "nodegen: %s %s %s the source: terraform apply refuses to delete %s (deletion_policy PREVENT); run `nodegen rollout --yes` first, which drains the nodes and deletes %s, then terraform apply (the refusal needs the policy in the state: an apply of out/ with it must have run before; docs/rollout.md, \"Zones and groups that leave the source\")\n",
			what, strings.Join(guarded, ", "), verb, it, it)
	}
	if len(m.Unguarded) > 0 {
		what, verb, it, its := "MIG", "leaves", "it", "its"
		if len(m.Unguarded) > 1 {
			what, verb, it, its = "MIGs", "leave", "them", "their"
		}
		fmt.Fprintf(w, "nodegen: %s %s %s the source and had no deletion_policy in out/ (rendered by an older nodegen), so none in the state either: terraform apply would delete %s with %s VMs, undrained; run `nodegen rollout --yes` first, which drains the nodes and deletes %s, then terraform apply. The guard holds only for MIGs an apply with it reached: apply once before a zone or group leaves the source (docs/rollout.md, \"Zones and groups that leave the source\")\n",
			what, strings.Join(m.Unguarded, ", "), verb, it, its, it)
	}
	if len(m.Leaving) > 0 && len(m.Added) > 0 {
		what, verb, it, its := "MIG", "is", "it", "its"
		if len(m.Added) > 1 {
			what, verb, it, its = "MIGs", "are", "them", "their"
		}
		fmt.Fprintf(w, "nodegen: %s %s %s new: only terraform apply makes %s, so no pod drained from the leaving nodes can go to %s nodes before it; to move nodes (a group renamed, a zone replaced by another), add the new group or zone first (gen, terraform apply), then remove the old one\n",
			what, strings.Join(m.Added, ", "), verb, it, its)
	}
}
