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
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/pipeline"
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
	// Trees are the clusters' trees in out/ (layout.ClusterDir: "" for a
	// one-cluster source) whose Terraform a MIG leaves.
	Trees []string
}

func leavingMIGs(changes []outdir.Change) migChanges {
	var tf []outdir.Change
	before := map[string]bool{}
	tree := map[string]string{}
	for _, ch := range changes {
		if path.Ext(ch.Path) != ".tf" || ch.Kind == outdir.Mode {
			continue
		}
		tf = append(tf, ch)
		for n, guarded := range migNames(ch.Path, ch.Old) {
			before[n] = before[n] || guarded
			tree[n], _, _ = strings.Cut(ch.Path, layout.TerraformDir+"/")
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
			if !slices.Contains(out.Trees, tree[n]) {
				out.Trees = append(out.Trees, tree[n])
			}
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
	slices.Sort(out.Trees)
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
// rendered Terraform, in order: the autoscaler's helm upgrade (upgrade
// gives the command for a cluster's tree in out/), for a running
// autoscaler whose --nodes names a deleted MIG scales no group at all;
// nodegen rollout, which drains their nodes and deletes them (and
// refuses while the autoscaler still names one); then terraform apply,
// which refuses to delete them itself (their deletion_policy is PREVENT,
// once an apply put it in the state). A MIG whose Terraform had no
// deletion_policy is not guarded: the state has none. MIGs the same
// changes add do not exist before the apply, so the leaving nodes' pods
// cannot go to them.
func sayLeaving(w io.Writer, m migChanges, upgrade func(tree string) string) {
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
		fmt.Fprintf(w, "nodegen: %s %s %s the source: terraform apply refuses to delete %s (deletion_policy PREVENT; the refusal needs the policy in the state: an apply of out/ with it must have run before)\n",
			what, strings.Join(guarded, ", "), verb, it)
	}
	if len(m.Unguarded) > 0 {
		what, verb, it, its := "MIG", "leaves", "it", "its"
		if len(m.Unguarded) > 1 {
			what, verb, it, its = "MIGs", "leave", "them", "their"
		}
		fmt.Fprintf(w, "nodegen: %s %s %s the source and had no deletion_policy in out/ (rendered by an older nodegen), so none in the state either: terraform apply would delete %s with %s VMs, undrained. The guard holds only for MIGs an apply with it reached: apply once before a zone or group leaves the source\n",
			what, strings.Join(m.Unguarded, ", "), verb, it, its)
	}
	if len(m.Leaving) > 0 {
		var cmds []string
		for _, tree := range m.Trees {
			cmds = append(cmds, "`"+upgrade(tree)+"`")
		}
		fmt.Fprintf(w, "nodegen: so, in this order: 1. %s: the running autoscaler stops sizing the leaving MIGs (while its --nodes names a deleted MIG it scales no group at all, and during the drain it could scale the MIG up again; nodegen rollout --yes refuses while it names one); 2. `nodegen rollout --yes`: drains their nodes and deletes the MIGs; 3. terraform apply (docs/rollout.md, \"Zones and groups that leave the source\")\n",
			strings.Join(cmds, " and "))
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

// autoscalerUpgrade is sayLeaving's upgrade for a pipeline's result: the
// helm upgrade of the autoscaler of the cluster of a tree in out/, with
// its values.yaml as the user names it.
func autoscalerUpgrade(f *ioFlags, r *pipeline.Result) func(tree string) string {
	return func(tree string) string {
		ns := ""
		for _, c := range r.Clusters {
			if c.Dir == tree {
				ns = c.Member.Source.Cluster.Autoscaler.Namespace
			}
		}
		return model.AutoscalerUpgrade(ns, outPath(f, tree+layout.AutoscalerValuesPath))
	}
}
