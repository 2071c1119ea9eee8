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

// leavingMIGs names the MIGs the changes take out of the rendered
// Terraform (a zone removed from a group, a group removed or renamed):
// the name of every google_compute_instance_group_manager of a changed
// .tf file's old bytes that no changed file's new bytes declare.
func leavingMIGs(changes []outdir.Change) []string {
	var before, after []string
	for _, ch := range changes {
		if path.Ext(ch.Path) != ".tf" || ch.Kind == outdir.Mode {
			continue
		}
		before = append(before, migNames(ch.Path, ch.Old)...)
		after = append(after, migNames(ch.Path, ch.New)...)
	}
	var out []string
	for _, n := range before {
		if !slices.Contains(after, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// migNames reads the literal names of the MIGs a Terraform file declares
// (none when it does not parse: it was not nodegen's).
func migNames(name string, b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	f, diags := hclparse.NewParser().ParseHCL(b, name)
	if diags.HasErrors() {
		return nil
	}
	var out []string
	for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
		if blk.Type != "resource" || len(blk.Labels) != 2 || blk.Labels[0] != gce.TFGroupManager {
			continue
		}
		a, ok := blk.Body.Attributes["name"]
		if !ok {
			continue
		}
		if v, diags := a.Expr.Value(nil); !diags.HasErrors() && v.Type().FriendlyName() == "string" && v.IsKnown() && !v.IsNull() {
			out = append(out, v.AsString())
		}
	}
	return out
}

// sayLeaving tells what to run before terraform apply when MIGs leave the
// rendered Terraform: apply refuses to delete them (their deletion_policy
// is PREVENT), and nodegen rollout drains their nodes and deletes them.
func sayLeaving(w io.Writer, migs []string) {
	if len(migs) == 0 {
		return
	}
	what, verb, it := "MIG", "leaves", "it"
	if len(migs) > 1 {
		what, verb, it = "MIGs", "leave", "them"
	}
	fmt.Fprintf(w, "nodegen: %s %s %s the source: terraform apply refuses to delete %s (deletion_policy PREVENT); run `nodegen rollout --yes` first, which drains the nodes and deletes %s, then terraform apply (docs/rollout.md, \"Zones and groups that leave the source\")\n",
		what, strings.Join(migs, ", "), verb, it, it)
}
