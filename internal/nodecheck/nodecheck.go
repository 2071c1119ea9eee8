// Package nodecheck compares a cluster's Node objects with a nodegen
// source: each node's group (as the autoscaler's GCE provider maps it, or
// by the node-group label), labels, taints, startup taint, GPUs and
// revision. drift reports what it finds; rollout says with it what
// replacing a stale node changes.
package nodecheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/sets"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// Finding kinds.
const (
	LabelMissing      = "label-missing"
	LabelExtra        = "label-extra"
	LabelDifferent    = "label-different"
	TaintMissing      = "taint-missing"
	TaintExtra        = "taint-extra"
	TaintDifferent    = "taint-different"
	StartupTaintStuck = "startup-taint-stuck"
	GPUAllocatable    = "gpu-allocatable"
	GroupRemoved      = "group-removed"
	UnknownCloudNode  = "unknown-cloud-node"
	NotInMIG          = "not-in-mig"
	// DeclaredMissing: a node the source declares outside the MIGs
	// (cluster.controlPlaneNodes, an onprem group's nodes) is not there.
	DeclaredMissing = "declared-missing"
	// Undeclared: a node outside the MIGs that the source does not
	// declare, while it declares others: the rendered caps do not count it.
	Undeclared = "undeclared"
	// ProviderIDFails: the autoscaler's GCE provider fails on the node's
	// providerID (none, or not of its form), and every release up to
	// v1.36.1 then scales nothing.
	ProviderIDFails = "provider-id"
	// ProviderIDOtherMIG: the GCE provider maps the node's providerID to
	// a MIG the node does not belong to.
	ProviderIDOtherMIG = "provider-id-other-mig"
	Stale              = "stale"
)

// Finding is one difference between the world and the source.
type Finding struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Key     string `json:"key,omitempty"`
	Want    string `json:"want,omitempty"`
	Got     string `json:"got,omitempty"`
	// Diff is a unified diff (startup scripts), generated side second.
	Diff string `json:"diff,omitempty"`
}

// NodeResult is what drift found on one node nodegen manages.
type NodeResult struct {
	Name string `json:"name"`
	// Group is the node group the node belongs to; empty when none does.
	Group string `json:"group,omitempty"`
	// MatchedBy is how: "providerID" (an instance of the group's MIG, as the
	// autoscaler maps it) or "label" (the node-group identity label).
	MatchedBy  string    `json:"matchedBy,omitempty"`
	ProviderID string    `json:"providerID,omitempty"`
	Findings   []Finding `json:"findings"`
}

// Options tune the node checks.
type Options struct {
	// Now is the time node ages are measured at.
	Now time.Time
	// StuckAfter is how long a node may keep its startup taint.
	StuckAfter time.Duration
	// Revisions are the cloud groups' current revisions, by group (the
	// value of model.RevisionLabel in each group's rendered kube-env). A
	// cloud node whose label differs is stale; without an entry for its
	// group the label is not checked.
	Revisions map[string]string
	// InstanceRevisions are Compute's revisions of the cloud nodes'
	// instances, by name: the revision the template Compute made each
	// from declares (drift.InstanceRevisions). A node's kubelet may set
	// its own label; where Compute's answer is known, it decides whether
	// the node is stale, and the label is only a hint.
	InstanceRevisions map[string]string
}

// Labels of a node that drift never reports as extra: the node's own,
// which the kubelet sets on itself (kubelet's well-known set:
// kubernetes.io/hostname, /os, /arch, their beta forms, instance type,
// zone and region, old and new), and the labels of node agents a GPU
// cluster runs: Node Feature Discovery (feature.node.kubernetes.io/…) and
// the GPU Operator and its feature discovery (nvidia.com/…). Zone, region,
// instance type, os and arch are still compared on cloud nodes.
var ownLabels = sets.New(kubeletapis.KubeletLabels()...)

var agentLabelPrefixes = []string{"feature.node.kubernetes.io/", "nvidia.com/"}

// Taints of a node that drift never reports as extra: conditions the node
// lifecycle controller sets and lifts (node.kubernetes.io/not-ready, …) and
// the autoscaler's own scale-down marks. node.cloudprovider.kubernetes.io/
// uninitialized is reported: without a cloud-controller-manager nothing
// ever removes it.
var transientTaints = sets.New(
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnreachable,
	corev1.TaintNodeUnschedulable,
	corev1.TaintNodeMemoryPressure,
	corev1.TaintNodeDiskPressure,
	corev1.TaintNodeNetworkUnavailable,
	corev1.TaintNodePIDPressure,
	corev1.TaintNodeOutOfService,
	"node.cloudprovider.kubernetes.io/shutdown",
	model.ToBeDeletedTaint,
	model.DeletionCandidateTaint,
)

// Check compares nodes with the source. Nodes of no group that carry
// neither the identity label nor a gce:// providerID (the control plane,
// on-prem machines nodegen does not describe) are returned as unmanaged.
func Check(src *model.Source, nodes []corev1.Node, opts Options) (results []NodeResult, unmanaged []string) {
	results = []NodeResult{}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for i := range sorted {
		n := &sorted[i]
		r := NodeResult{Name: n.Name, ProviderID: n.Spec.ProviderID, Findings: []Finding{}}
		ref, isGCE := model.ParseGCEProviderID(n.Spec.ProviderID)
		isGCE = isGCE && !model.IsUnmanagedProviderID(n.Spec.ProviderID)
		label, hasLabel := n.Labels[model.GroupLabel]
		var g *model.NodeGroup
		if isGCE {
			if g = src.GroupOfInstance(ref); g != nil {
				r.MatchedBy = "providerID"
			}
		}
		if g == nil && hasLabel {
			if g = src.NodeGroups[label]; g != nil {
				r.MatchedBy = "label"
			}
		}
		switch {
		case g != nil:
			r.Group = g.Name
			r.Findings = append(r.Findings, autoscalerMapping(src, g, n)...)
			r.Findings = append(r.Findings, checkNode(src, g, n, ref, isGCE, opts)...)
		case hasLabel:
			r.Findings = []Finding{{Kind: GroupRemoved, Key: model.GroupLabel, Got: label,
				Message: fmt.Sprintf("labelled %s=%s, but the source has no node group %s (removed?)", model.GroupLabel, label, label)}}
		case isGCE:
			r.Findings = []Finding{{Kind: UnknownCloudNode, Got: n.Spec.ProviderID,
				Message: fmt.Sprintf("cloud node %s is an instance of no node group's MIG and has no %s label", n.Spec.ProviderID, model.GroupLabel)}}
		default:
			if r.Findings = autoscalerMapping(src, nil, n); len(r.Findings) == 0 {
				unmanaged = append(unmanaged, n.Name)
				continue
			}
		}
		results = append(results, r)
	}
	return declared(src, results, unmanaged)
}

// declared checks the nodes outside the MIGs against those the source
// declares, once it declares any: each declared node must be there, and a
// node outside the MIGs that it does not declare is reported, since the
// autoscaler counts it in its caps and the rendered caps do not.
func declared(src *model.Source, results []NodeResult, unmanaged []string) ([]NodeResult, []string) {
	nodes := src.DeclaredNodes()
	if len(nodes) == 0 {
		return results, unmanaged
	}
	present := map[string]bool{}
	for _, name := range unmanaged {
		present[name] = true
	}
	for _, r := range results {
		present[r.Name] = true
	}
	want := map[string]bool{}
	for _, d := range nodes {
		want[d.Name] = true
		if present[d.Name] {
			continue
		}
		where := "cluster.controlPlaneNodes"
		if d.Group != "" {
			where = "the nodes of onprem group " + d.Group
		}
		results = append(results, NodeResult{Name: d.Name, Group: d.Group, Findings: []Finding{{Kind: DeclaredMissing,
			Message: fmt.Sprintf("declared in %s but not in the cluster (not joined yet, renamed or gone?)", where)}}})
	}
	var kept []string
	for _, name := range unmanaged {
		if want[name] {
			kept = append(kept, name)
			continue
		}
		results = append(results, NodeResult{Name: name, Findings: []Finding{{Kind: Undeclared,
			Message: "outside the MIGs and not declared in the source: the autoscaler counts it in its caps, the rendered caps do not; declare it in cluster.controlPlaneNodes or an onprem group's nodes"}}})
	}
	slices.SortFunc(results, func(a, b NodeResult) int { return strings.Compare(a.Name, b.Name) })
	return results, kept
}

// autoscalerMapping checks the node's providerID as the autoscaler's GCE
// provider maps it (model.Source.AutoscalerNodeGroup): an error stops
// every scale-up and scale-down of the releases that have the bug; a node
// outside the MIGs (g nil or not autoscaled) must map to none, and a node
// of an autoscaled group to one of its own MIGs. With
// cluster.onpremProviderID "none", nodes outside the MIGs are not expected
// to have one.
func autoscalerMapping(src *model.Source, g *model.NodeGroup, n *corev1.Node) []Finding {
	pid := n.Spec.ProviderID
	mig, ok, err := src.AutoscalerNodeGroup(pid)
	outside := g == nil || !g.Cloud()
	tag := src.Cluster.AutoscalerImageTag()
	switch {
	case err != nil && outside && !src.Cluster.SetsOnpremProviderID():
		return nil
	case err != nil && outside:
		what := "no providerID"
		if pid != "" {
			what = fmt.Sprintf("providerID %q, which the GCE provider cannot parse", pid)
		}
		return []Finding{{Kind: ProviderIDFails, Key: "spec.providerID", Got: pid, Want: model.UnmanagedProviderID(n.Name),
			Message: fmt.Sprintf("%s: the Cluster Autoscaler's GCE provider fails on it, so %s scales nothing, up or down (kubernetes/autoscaler#10140); run out/%s%s",
				what, tag, src.Tree, layout.OnpremProviderIDPath)}}
	case err != nil:
		return nil // a cloud node: not-in-mig says it
	case ok && (outside || !g.Autoscaled() || mig.Group != g):
		return []Finding{{Kind: ProviderIDOtherMIG, Key: "spec.providerID", Got: pid,
			Message: fmt.Sprintf("providerID %q: the Cluster Autoscaler takes this node for an instance of MIG %s (same project and zone, name starting with %s), which it does not belong to",
				pid, src.Cluster.MIGName(mig.Group, mig.Zone), src.Cluster.BaseInstanceName(mig.Group))}}
	}
	return nil
}

func checkNode(src *model.Source, g *model.NodeGroup, n *corev1.Node, ref model.GCERef, isGCE bool, opts Options) []Finding {
	var out []Finding
	want := cloneMap(g.NodeLabels)
	if g.Cloud() {
		if !isGCE || src.GroupOfInstance(ref) != g {
			msg := fmt.Sprintf("providerID %q is not an instance of the group's MIGs (%s-xxxx in %s of project %s)",
				n.Spec.ProviderID, src.Cluster.BaseInstanceName(g), strings.Join(g.Zones, ", "), src.Cluster.GCP.Project)
			if _, _, err := src.AutoscalerNodeGroup(n.Spec.ProviderID); err != nil {
				msg += fmt.Sprintf("; the Cluster Autoscaler's GCE provider fails on it, so %s scales nothing, up or down (kubernetes/autoscaler#10140)",
					src.Cluster.AutoscalerImageTag())
			}
			out = append(out, Finding{Kind: NotInMIG, Got: n.Spec.ProviderID, Message: msg})
		}
		// The join adds these; the autoscaler's template has them too. The
		// zone is checked below against the VM's or the group's zones.
		for k, v := range src.Cluster.BootLabels(g, "") {
			if k != model.ZoneLabel {
				want[k] = v
			}
		}
		want[corev1.LabelArchStable] = g.Arch
		want[corev1.LabelOSStable] = "linux"
		// The verified group label: the node CSR approver sets it once it
		// checked the VM (and the day-0 steps on the autoscaler's nodes),
		// so a node that just joined may not have it yet; another value
		// is reported.
		for k, v := range model.VerifiedLabels(g) {
			if _, ok := n.Labels[k]; ok {
				want[k] = v
			}
		}
		if isGCE && slices.Contains(g.Zones, ref.Zone) {
			want[model.ZoneLabel] = ref.Zone
		} else if z, ok := n.Labels[model.ZoneLabel]; ok && !slices.Contains(g.Zones, z) {
			out = append(out, Finding{Kind: LabelDifferent, Key: model.ZoneLabel, Got: z, Want: strings.Join(g.Zones, " or "),
				Message: fmt.Sprintf("label %s is %s, not one of the group's zones (%s)", model.ZoneLabel, z, strings.Join(g.Zones, ", "))})
		} else if !ok {
			out = append(out, Finding{Kind: LabelMissing, Key: model.ZoneLabel, Want: strings.Join(g.Zones, " or "),
				Message: fmt.Sprintf("label %s missing (want one of %s)", model.ZoneLabel, strings.Join(g.Zones, ", "))})
		}
	}
	got := n.Labels
	if g.Cloud() {
		if rev, ok := opts.Revisions[g.Name]; ok {
			if f, stale := staleNode(n, rev, opts.InstanceRevisions); stale {
				out = append(out, f)
			}
		}
		// nodegen's own label, compared with the revision alone.
		got = cloneMap(n.Labels)
		delete(got, model.RevisionLabel)
	}
	out = append(out, compareLabels(want, got)...)
	out = append(out, compareTaints(g, n, opts)...)
	return out
}

// staleNode reports a cloud node made from other artifacts than its
// group's current ones: the template Compute made its instance from
// declares another revision (instances, by node name), or, where Compute's
// answer is not known, its revision label is not the group's revision.
func staleNode(n *corev1.Node, rev string, instances map[string]string) (Finding, bool) {
	got, ok := n.Labels[model.RevisionLabel]
	if made, known := instances[n.Name]; known {
		if made == rev {
			return Finding{}, false
		}
		label := "no " + model.RevisionLabel + " label"
		if ok {
			label = "its label says " + got
		}
		return Finding{Kind: Stale, Key: model.RevisionLabel, Want: rev, Got: made,
			Message: fmt.Sprintf("stale: Compute made its instance from a template of revision %s (%s), the group's is %s; nodegen rollout replaces it", orNone(made), label, rev)}, true
	}
	switch {
	case !ok:
		return Finding{Kind: Stale, Key: model.RevisionLabel, Want: rev,
			Message: fmt.Sprintf("stale: no %s label (joined before its group had revisions), the group's revision is %s; nodegen rollout replaces it", model.RevisionLabel, rev)}, true
	case got != rev:
		return Finding{Kind: Stale, Key: model.RevisionLabel, Want: rev, Got: got,
			Message: fmt.Sprintf("stale: revision %s, the group's is %s; nodegen rollout replaces it", got, rev)}, true
	}
	return Finding{}, false
}

// orNone is s, or "none" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func compareLabels(want, got map[string]string) []Finding {
	var out []Finding
	for _, k := range model.SortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, Finding{Kind: LabelMissing, Key: k, Want: want[k], Message: fmt.Sprintf("label %s missing (want %s)", k, want[k])})
		case g != want[k]:
			out = append(out, Finding{Kind: LabelDifferent, Key: k, Want: want[k], Got: g, Message: fmt.Sprintf("label %s is %s, the source says %s", k, g, want[k])})
		}
	}
	for _, k := range model.SortedKeys(got) {
		if _, ok := want[k]; ok || ownLabels.Has(k) || hasAnyPrefix(k, agentLabelPrefixes) || k == model.ZoneLabel {
			continue
		}
		out = append(out, Finding{Kind: LabelExtra, Key: k, Got: got[k], Message: fmt.Sprintf("label %s=%s is not in the source", k, got[k])})
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func taintString(key, value string, effect corev1.TaintEffect) string {
	return key + "=" + value + ":" + string(effect)
}

// compareTaints compares a node's taints with the group's, handles its
// startup taint and checks its GPU allocatable.
func compareTaints(g *model.NodeGroup, n *corev1.Node, opts Options) []Finding {
	var out []Finding
	byKey := map[string][]corev1.Taint{}
	for _, t := range n.Spec.Taints {
		byKey[t.Key] = append(byKey[t.Key], t)
	}
	wantKeys := map[string]bool{}
	for _, w := range g.Taints {
		wantKeys[w.Key] = true
		ws := taintString(w.Key, w.Value, corev1.TaintEffect(w.Effect))
		got := byKey[w.Key]
		if len(got) == 0 {
			out = append(out, Finding{Kind: TaintMissing, Key: w.Key, Want: ws, Message: "taint " + ws + " missing"})
			continue
		}
		if slices.ContainsFunc(got, func(t corev1.Taint) bool { return t.Value == w.Value && string(t.Effect) == w.Effect }) {
			continue
		}
		gs := taintString(got[0].Key, got[0].Value, got[0].Effect)
		out = append(out, Finding{Kind: TaintDifferent, Key: w.Key, Want: ws, Got: gs, Message: fmt.Sprintf("taint %s, the source says %s", gs, ws)})
	}
	startupPresent := false
	age := time.Duration(-1)
	if !n.CreationTimestamp.IsZero() && !opts.Now.IsZero() {
		age = opts.Now.Sub(n.CreationTimestamp.Time)
	}
	stuck := false
	for _, t := range n.Spec.Taints {
		if wantKeys[t.Key] {
			continue
		}
		if st := g.StartupTaint; st != nil && t.Key == st.Key {
			startupPresent = true
			if age > opts.StuckAfter {
				stuck = true
				out = append(out, Finding{Kind: StartupTaintStuck, Key: t.Key, Got: taintString(t.Key, t.Value, t.Effect),
					Message: fmt.Sprintf("startup taint %s still present %s after the node was created (limit %s): GPU initialisation stuck?", t.Key, shortDuration(age), shortDuration(opts.StuckAfter))})
			}
			continue
		}
		if transientTaints.Has(t.Key) {
			continue
		}
		ts := taintString(t.Key, t.Value, t.Effect)
		out = append(out, Finding{Kind: TaintExtra, Key: t.Key, Got: ts, Message: "taint " + ts + " is not in the source"})
	}
	wantGPU := int64(0)
	if g.GPU != nil {
		wantGPU = int64(g.GPU.Count)
	}
	q := n.Status.Allocatable[model.GPUResource]
	if got := q.Value(); got != wantGPU && (!startupPresent || stuck) {
		out = append(out, Finding{Kind: GPUAllocatable, Key: model.GPUResource, Want: fmt.Sprint(wantGPU), Got: fmt.Sprint(got),
			Message: fmt.Sprintf("%s allocatable is %d, the group has %d per node", model.GPUResource, got, wantGPU)})
	}
	return out
}

// shortDuration writes a duration as kubectl writes ages (its AGE column:
// "45s", "30m", "5h10m", "3d4h", "183d"; k8s.io/apimachinery,
// pkg/util/duration.HumanDuration).
func shortDuration(d time.Duration) string { return duration.HumanDuration(d) }
