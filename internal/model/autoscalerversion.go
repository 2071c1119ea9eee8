package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The Cluster Autoscaler releases nodegen knows, and which of them fail on
// a node whose providerID the GCE provider cannot parse (an empty one, as
// every kubeadm node outside the MIGs has): the error of NodeGroupForNode
// (providerid.go) stops the loop, so nothing scales, up or down, as long
// as one such node exists.
//
// Read at each tag of kubernetes/autoscaler (cluster-autoscaler-<version>),
// files under cluster-autoscaler/:
//   - up to 1.34.3: processors/nodeinfosprovider/mixed_nodeinfos_processor.go
//     Process returns the error for any node ("Failed to get node infos");
//     1.34.4 logs it and skips the node instead.
//   - up to 1.34.5: core/scaleup/resource/manager.go ResourcesLeft calls
//     core/utils/utils.go FilterOutNodesFromNotAutoscaledGroups, which
//     returns the error: every scale-up fails.
//   - 1.35.0 on: core/scaleup/orchestrator/orchestrator.go builds a quotas
//     tracker for every scale-up; resourcequotas/usage.go calculateUsages
//     calls NodeGroupForNode on every node and returns the error ("could
//     not create quotas tracker: failed to get node group for node ...").
//     The tracker is built whether or not caps are set. From 1.36.0 the
//     scale-down planner builds one too (core/scaledown/planner/planner.go).
//   - up to 1.35.2: core/scaledown/resource/limits.go returns the error
//     while computing the cluster's custom-resource usage for scale-down
//     ("cannot get node group for node ..."); 1.36.0 replaced it with the
//     planner's quotas tracker.
//
// The stand-in nodes the autoscaler makes for upcoming nodes have no
// providerID either, so from 1.35.0, while a node is upcoming (a VM that
// has not registered, or a GPU node whose GPUs are not yet allocatable),
// every other scale-up fails the same way. No providerID on a real node
// changes that: only a release with the fix does.
//
// Upstream: kubernetes/autoscaler#10140 and kubernetes-sigs/cluster-autoscaler#56
// report it; kubernetes-sigs/cluster-autoscaler#103 (the core, merged
// 2026-09-04) and kubernetes/autoscaler#10274 (the GCE provider treats
// nodes with an empty or non-GCE providerID as unmanaged, merged
// 2026-09-09) fix it, after the newest tag nodegen has read,
// cluster-autoscaler-1.36.1 (2026-07-22; no newer cluster-autoscaler tag
// existed in kubernetes/autoscaler as of 2026-08-22).

// AutoscalerBugRefs names the upstream reports and fixes, for messages.
const AutoscalerBugRefs = "kubernetes/autoscaler#10140, kubernetes-sigs/cluster-autoscaler#56; fixed by kubernetes-sigs/cluster-autoscaler#103 and kubernetes/autoscaler#10274, in no release up to v1.36.1"

// AutoscalerMinor is one minor release line of the Cluster Autoscaler.
type AutoscalerMinor struct {
	// Minor is the minor version, e.g. 35 for v1.35.x; it supports the
	// Kubernetes minor of the same number (the autoscaler's README,
	// "Releases").
	Minor int
	// LastPatch is the newest patch release tagged (cluster-autoscaler-1.<Minor>.<LastPatch>).
	LastPatch int
	// FailsWithoutProviderID: every release of the line stops scaling on a
	// node whose providerID the GCE provider cannot parse.
	FailsWithoutProviderID bool
	// UpcomingNodeBlocks: while a node is upcoming, no other scale-up
	// happens (the quotas tracker fails on the stand-in node).
	UpcomingNodeBlocks bool
}

// AutoscalerReleases are the release lines read, oldest first.
var AutoscalerReleases = []AutoscalerMinor{
	{Minor: 30, LastPatch: 7, FailsWithoutProviderID: true},
	{Minor: 31, LastPatch: 5, FailsWithoutProviderID: true},
	{Minor: 32, LastPatch: 7, FailsWithoutProviderID: true},
	{Minor: 33, LastPatch: 6, FailsWithoutProviderID: true},
	{Minor: 34, LastPatch: 5, FailsWithoutProviderID: true},
	{Minor: 35, LastPatch: 2, FailsWithoutProviderID: true, UpcomingNodeBlocks: true},
	{Minor: 36, LastPatch: 1, FailsWithoutProviderID: true, UpcomingNodeBlocks: true},
}

// AutoscalerRelease is what nodegen knows of one image tag.
type AutoscalerRelease struct {
	Tag          string
	Minor, Patch int
	// Known: the tag is a release of a line in AutoscalerReleases.
	Known bool
	// Patched: the image is nodegen's build of the release with its patch
	// (Cluster.AutoscalerRelease), which has neither fault.
	Patched bool
	AutoscalerMinor
}

// LookupAutoscalerRelease reads an image tag "v1.<minor>.<patch>". err is
// set when the tag is not of that form.
func LookupAutoscalerRelease(tag string) (AutoscalerRelease, error) {
	minor, patch, err := parseAutoscalerTag(tag)
	if err != nil {
		return AutoscalerRelease{}, err
	}
	r := AutoscalerRelease{Tag: tag, Minor: minor, Patch: patch}
	for _, m := range AutoscalerReleases {
		if m.Minor == minor && patch <= m.LastPatch {
			r.Known, r.AutoscalerMinor = true, m
		}
	}
	return r, nil
}

func parseAutoscalerTag(tag string) (minor, patch int, err error) {
	parts := strings.Split(strings.TrimPrefix(tag, "v"), ".")
	if !strings.HasPrefix(tag, "v") || len(parts) != 3 || parts[0] != "1" {
		return 0, 0, fmt.Errorf("autoscaler image tag %q is not v1.<minor>.<patch>", tag)
	}
	if minor, err = strconv.Atoi(parts[1]); err == nil {
		patch, err = strconv.Atoi(parts[2])
	}
	if err != nil {
		return 0, 0, fmt.Errorf("autoscaler image tag %q is not v1.<minor>.<patch>", tag)
	}
	return minor, patch, nil
}

// DefaultAutoscalerTag is the image tag for a Kubernetes minor: the newest
// patch of the same minor that nodegen has read (a .0 release never picks
// up the line's fixes), or v1.<minor>.0 for a minor it does not know.
func DefaultAutoscalerTag(kubernetesMinor int) string {
	for _, m := range AutoscalerReleases {
		if m.Minor == kubernetesMinor {
			return fmt.Sprintf("v1.%d.%d", m.Minor, m.LastPatch)
		}
	}
	return fmt.Sprintf("v1.%d.0", kubernetesMinor)
}

// NewestAutoscalerRelease is the newest tag in AutoscalerReleases.
func NewestAutoscalerRelease() string {
	m := AutoscalerReleases[len(AutoscalerReleases)-1]
	return fmt.Sprintf("v1.%d.%d", m.Minor, m.LastPatch)
}

// AutoscalerRelease is the release of the cluster's autoscaler image tag.
//
// With the patched image (cluster.autoscaler.patchedImage) of a release
// nodegen has the patch for, the release has neither fault: the patch
// makes the GCE provider's NodeGroupForNode answer "no node group" for a
// node without a GCE providerID, and both faults start from its error
// (see the top of this file).
func (c *Cluster) AutoscalerRelease() (AutoscalerRelease, error) {
	r, err := LookupAutoscalerRelease(c.AutoscalerImageTag())
	if err == nil && c.Autoscaler.PatchedImage != nil && slices.Contains(AutoscalerPatchedReleases, r.Tag) {
		r.Patched = true
		r.FailsWithoutProviderID, r.UpcomingNodeBlocks = false, false
	}
	return r, err
}

// AutoscalerPatchedReleases are the releases nodegen has its patch of the
// GCE provider for (templates/autoscaler-gce-nodegroupfornode.patch,
// written against kubernetes/autoscaler tag cluster-autoscaler-1.35.2,
// cluster-autoscaler/cloudprovider/gce/gce_cloud_provider.go, and built
// and run by the system tests at that tag).
var AutoscalerPatchedReleases = []string{"v1.35.2"}

// AutoscalerSourceCommit is the commit of each patched release's tag in
// kubernetes/autoscaler, which the image build checks out.
var AutoscalerSourceCommit = map[string]string{
	"v1.35.2": "2d42588803c71fe9b35dcd9e3669ac6bb550ca22",
}

// DefaultMaxNodeStartupTime is the default of the autoscaler's
// --max-node-startup-time, which the GCE provider does not read per MIG
// from kube-env: how long after registering a node that is not ready
// still counts as upcoming (clusterstate/clusterstate.go
// MaxNodeStartupTime, and config/flags/flags.go, at
// cluster-autoscaler-1.35.2). nodegen renders the flag only when a
// group's init budget needs more (Source.MaxNodeStartupTime).
const DefaultMaxNodeStartupTime = 15 * time.Minute

// ProvisionTimes lists, per autoscaled group, the maxNodeProvisionTime the
// autoscaler really applies to its MIGs: the kube-env autoscaling_options
// value where the group sets one (it wins over the flag), else
// --max-node-provision-time. Entries are "<group> <duration>", by group.
func (s *Source) ProvisionTimes() []string {
	var out []string
	for _, g := range s.Groups() {
		if !g.Autoscaled() {
			continue
		}
		out = append(out, g.Name+" "+FormatDuration(s.Cluster.MaxNodeProvisionTime(g)))
	}
	return out
}

// PriorityExpanderConfigMapName is the ConfigMap the autoscaler's priority
// expander reads, in the autoscaler's --namespace (kubernetes/autoscaler
// cluster-autoscaler-1.35.2, cluster-autoscaler/expander/priority/priority.go:
// PriorityConfigMapName).
const PriorityExpanderConfigMapName = "cluster-autoscaler-priority-expander"
