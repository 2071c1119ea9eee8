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

// startRepairing names the MIGs the changes give autohealing that repairs
// while their Terraform had none before: the MIG's VMs were made before
// their group's health check (no network tag for its firewall rule, the
// kubelet's health endpoint on 127.0.0.1), so each fails it, and the MIG
// recreates them all at once, undrained.
func startRepairing(changes []outdir.Change) []string {
	var out []string
	for _, ch := range changes {
		if path.Ext(ch.Path) != ".tf" || ch.Kind == outdir.Mode || len(ch.Old) == 0 {
			continue
		}
		before, after := migHealing(ch.Path, ch.Old), migHealing(ch.Path, ch.New)
		for name, repairs := range after {
			if healed, existed := before[name]; existed && healed == "" && repairs == gce.LifecycleActionRepair {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// migHealing reads, for each MIG a Terraform file declares by a literal
// name, what it does with a VM that fails its health check: "" without
// auto_healing_policies, else its instance_lifecycle_policy's
// on_failed_health_check (REPAIR when unset, the provider's default
// action). None when the file does not parse: it was not nodegen's.
func migHealing(name string, b []byte) map[string]string {
	f, diags := hclparse.NewParser().ParseHCL(b, name)
	if diags.HasErrors() {
		return nil
	}
	out := map[string]string{}
	for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
		if blk.Type != "resource" || len(blk.Labels) != 2 || blk.Labels[0] != gce.TFGroupManager {
			continue
		}
		mig, ok := literal(blk.Body, "name")
		if !ok {
			continue
		}
		action := ""
		for _, b := range blk.Body.Blocks {
			if b.Type == "auto_healing_policies" && action == "" {
				action = gce.LifecycleActionRepair
			}
		}
		for _, b := range blk.Body.Blocks {
			if v, ok := literal(b.Body, "on_failed_health_check"); ok && b.Type == "instance_lifecycle_policy" && action != "" && v != "DEFAULT_ACTION" {
				action = v
			}
		}
		out[mig] = action
	}
	return out
}

// literal is a body's attribute as a literal string.
func literal(body *hclsyntax.Body, name string) (string, bool) {
	a, ok := body.Attributes[name]
	if !ok {
		return "", false
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || v.Type().FriendlyName() != "string" || !v.IsKnown() || v.IsNull() {
		return "", false
	}
	return v.AsString(), true
}

// sayStartRepairing tells what to do before terraform apply when MIGs
// that had no autohealing get autohealing that repairs.
func sayStartRepairing(w io.Writer, migs []string) {
	if len(migs) == 0 {
		return
	}
	what, its := "MIG", "its"
	if len(migs) > 1 {
		what, its = "MIGs", "their"
	}
	fmt.Fprintf(w, "nodegen: %s %s start autohealing: %s VMs made before it fail the health check (no network tag for its firewall rule, the kubelet's health endpoint on 127.0.0.1) and are recreated together, undrained, once terraform apply has run; set the group's autohealing.repair to false first, apply, replace the VMs with `nodegen rollout --yes`, then set it to true (docs/node-lifecycle.md, \"Turning autohealing on\")\n",
		what, strings.Join(migs, ", "), its)
}
