package explain

import (
	"fmt"
	"strings"

	"github.com/nodegen/nodegen/internal/autoscalerpatch"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// Kinds of the notes about the autoscaler as a whole.
const (
	// NoteProviderID: the autoscaler scales nothing while a node has no
	// providerID its GCE provider can parse.
	NoteProviderID = "provider-id"
	// NoteUpcomingNode: while a node is upcoming, no other scale-up happens.
	NoteUpcomingNode = "upcoming-node"
	// NotePatched: the autoscaler runs as nodegen's patched build, which
	// has neither fault above.
	NotePatched = "patched-build"
)

// Note is something about the autoscaler itself that holds for every
// workload and group: its release and the cluster's nodes outside the
// MIGs decide whether anything scales at all.
type Note struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Blocks is true when, as the source stands, the autoscaler scales
	// nothing, whatever the verdicts above say.
	Blocks bool `json:"blocks,omitempty"`
}

// autoscalerNotes says what the source's autoscaler release does with the
// nodes outside the MIGs and with upcoming nodes (model.AutoscalerReleases).
func autoscalerNotes(src *model.Source) []Note {
	c := &src.Cluster
	tag := c.AutoscalerImageTag()
	rel, err := c.AutoscalerRelease()
	var out []Note
	if err == nil && rel.Patched {
		out = append(out, Note{Kind: NotePatched, Message: fmt.Sprintf(
			"the Cluster Autoscaler %s runs as nodegen's build with its GCE provider patch (%s:%s, out/%s%s): a node without a GCE providerID belongs to no node group, so the nodes outside the MIGs need none and scale-ups go on while other nodes are upcoming",
			tag, c.Autoscaler.PatchedImage.Repository, autoscalerpatch.Tag(tag), src.Tree, layout.AutoscalerDockerfilePath)})
	}
	fails := err != nil || !rel.Known || rel.FailsWithoutProviderID
	switch {
	case fails && !c.SetsOnpremProviderID():
		what := "has the bug"
		if err != nil || !rel.Known {
			what = "is not in nodegen's table, so it may have the bug"
		}
		out = append(out, Note{Kind: NoteProviderID, Blocks: err == nil && rel.Known, Message: fmt.Sprintf(
			"nothing scales, up or down: the Cluster Autoscaler %s %s that stops every loop on a node without a providerID its GCE provider can parse (%s), and cluster.onpremProviderID %q leaves the control plane and the on-prem nodes without one",
			tag, what, model.AutoscalerBugRefs, c.OnpremProviderID)})
	case fails:
		out = append(out, Note{Kind: NoteProviderID, Message: fmt.Sprintf(
			"the Cluster Autoscaler %s scales nothing, up or down, while any node has no providerID its GCE provider can parse (kubernetes/autoscaler#10140): the verdicts above hold once every node outside the MIGs has %s<node name>; run out/%s%s and give later on-prem joins the kubelet's provider-id (out/%s%s)",
			tag, model.UnmanagedProviderIDPrefix, src.Tree, layout.OnpremProviderIDPath, src.Tree, layout.DocsPath)})
	}
	if upcomingFreezes(src) {
		startup, _ := src.MaxNodeStartupTime()
		var gpu []string
		for _, g := range src.GPUGroups() {
			if g.Autoscaled() {
				gpu = append(gpu, g.Name)
			}
		}
		msg := fmt.Sprintf("while any node is upcoming, the Cluster Autoscaler %s adds no node anywhere, for any pod (its quotas tracker fails on the stand-in node, which has no providerID; kubernetes-sigs/cluster-autoscaler#56): from each scale-up until the new VM registers (at most its group's maxNodeProvisionTime: %s) and then until it is ready (at most --max-node-startup-time, %s, after it registered)",
			tag, strings.Join(src.ProvisionTimes(), ", "), model.FormatDuration(startup))
		if len(gpu) > 0 {
			msg += fmt.Sprintf("; a GPU node of %s is not ready until the device plugin reports its GPUs, so the GPU initialisation blocks every other scale-up", strings.Join(gpu, ", "))
		}
		out = append(out, Note{Kind: NoteUpcomingNode, Message: msg})
	}
	return out
}
