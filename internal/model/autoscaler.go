package model

import (
	"fmt"
	"strings"
)

// This file is the one place that says which taints and labels the Cluster
// Autoscaler's GCE template code treats specially. Validation
// (internal/validate), the kube-env reader the verification and the tests
// use (internal/kubeenv) and the renderer (internal/render) all ask it, so
// the template node nodegen checks is the one the autoscaler builds.
//
// Sources (kubernetes/autoscaler tag cluster-autoscaler-1.36.1, commit
// 35e8a280425c, read 2026-11-30; paths relative to cluster-autoscaler/, and
// checked by running the autoscaler's own template code on nodegen's
// kube-env):
//   - kubernetes/autoscaler cluster-autoscaler/utils/taints/taints.go (the
//     core now lives in sigs.k8s.io/cluster-autoscaler, same file):
//     ToBeDeletedTaint, DeletionCandidateTaint, IgnoreTaintPrefix,
//     StartupTaintPrefix, StatusTaintPrefix, NodeConditionTaints,
//     NewTaintConfig (the prefixes), TaintConfig.IsStartupTaint and
//     IsStatusTaint, SanitizeTaints (what a template node loses).
//   - cluster-autoscaler/cloudprovider/gce/templates.go: BuildGenericLabels
//     (kubernetes.io/arch, kubernetes.io/os, kubernetes.io/hostname = the
//     template's name, node.kubernetes.io/instance-type,
//     topology.kubernetes.io/region and zone, topology.gke.io/zone),
//     BuildCapacity/extractExtendedResourcesFromKubeEnv and the node label
//     prefix clusterautoscaler-nodetemplate-resources. (a label under it
//     becomes template capacity).
//   - cluster-autoscaler/cloudprovider/gce/gce_cloud_provider.go GPULabel and
//     dynamicresources.go (cloud.google.com/gke-gpu-dra-driver: the GPUs are
//     then taken to be exposed through DRA, not nvidia.com/gpu).
//   - k8s.io/api/core/v1 well_known_taints.go and
//     k8s.io/cloud-provider/api/well_known_taints.go for the condition keys.

// Autoscaler taint keys and prefixes (utils/taints/taints.go).
const (
	StatusTaintPrefix        = "status-taint.cluster-autoscaler.kubernetes.io/"
	IgnoreTaintPrefix        = "ignore-taint.cluster-autoscaler.kubernetes.io/" // deprecated alias of StartupTaintPrefix
	ToBeDeletedTaint         = "ToBeDeletedByClusterAutoscaler"
	DeletionCandidateTaint   = "DeletionCandidateOfClusterAutoscaler"
	NodeTemplateResourcesPfx = "clusterautoscaler-nodetemplate-resources."
	GPUDRALabel              = "cloud.google.com/gke-gpu-dra-driver"
)

// nodeConditionTaints is the autoscaler's NodeConditionTaints: keys set by
// the node lifecycle controller, the cloud controller manager, GKE's node
// termination handler and AWS, dropped from every template node.
var nodeConditionTaints = map[string]bool{
	"node.kubernetes.io/not-ready":                   true,
	"node.kubernetes.io/unreachable":                 true,
	"node.kubernetes.io/unschedulable":               true,
	"node.kubernetes.io/memory-pressure":             true,
	"node.kubernetes.io/disk-pressure":               true,
	"node.kubernetes.io/network-unavailable":         true,
	"node.kubernetes.io/pid-pressure":                true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
	"node.cloudprovider.kubernetes.io/shutdown":      true,
	"cloud.google.com/impending-node-termination":    true,
	"NodeWithImpairedVolumes":                        true,
}

// TaintClass says how the autoscaler treats a taint key.
type TaintClass int

const (
	// TaintPlain: kept on the template node like on the real node.
	TaintPlain TaintClass = iota
	// TaintStartup: dropped from the template; a node carrying it counts
	// as starting (unready) until it is removed (startup-taint. and the
	// deprecated ignore-taint. prefixes, or --startup-taint).
	TaintStartup
	// TaintStatus: dropped from the template; the node stays ready but
	// is left out of scale-up (status-taint. prefix).
	TaintStatus
	// TaintAutoscalerOwn: the autoscaler's own scale-down markers.
	TaintAutoscalerOwn
	// TaintCondition: a node-condition taint other controllers manage.
	TaintCondition
)

// ClassifyTaint returns how the autoscaler treats a taint key; flagged are
// keys passed with --startup-taint.
func ClassifyTaint(key string, flagged ...string) TaintClass {
	switch {
	case key == ToBeDeletedTaint || key == DeletionCandidateTaint:
		return TaintAutoscalerOwn
	case nodeConditionTaints[key]:
		return TaintCondition
	case strings.HasPrefix(key, StartupTaintPrefix) || strings.HasPrefix(key, IgnoreTaintPrefix):
		return TaintStartup
	case strings.HasPrefix(key, StatusTaintPrefix):
		return TaintStatus
	}
	for _, f := range flagged {
		if f == key {
			return TaintStartup
		}
	}
	return TaintPlain
}

// IsStartupTaint reports whether the autoscaler treats key as a startup
// taint (TaintConfig.IsStartupTaint).
func IsStartupTaint(key string, flagged ...string) bool {
	return ClassifyTaint(key, flagged...) == TaintStartup
}

// SanitizedByAutoscaler reports whether the autoscaler removes a taint with
// this key from its template nodes (SanitizeTaints).
func SanitizedByAutoscaler(key string, flagged ...string) bool {
	return ClassifyTaint(key, flagged...) != TaintPlain
}

// RegularTaintProblem explains why key cannot be one of a group's taints
// (taints: registered at join and listed in kube-env), or returns "".
func RegularTaintProblem(key string) string {
	switch ClassifyTaint(key) {
	case TaintStartup:
		return fmt.Sprintf("taint %q has the autoscaler's startup-taint prefix; declare it as startupTaint instead", key)
	case TaintStatus:
		return fmt.Sprintf("taint %q has the autoscaler's status-taint prefix: the autoscaler drops it from its template node while the real node keeps it, so it would add nodes that pods without a toleration cannot use; use your own prefix (e.g. example.com/%s)", key, afterSlash(key))
	case TaintAutoscalerOwn:
		return fmt.Sprintf("taint %q is the autoscaler's own scale-down marker: it drops it from its template node and treats a node carrying it as being deleted; use your own key", key)
	case TaintCondition:
		return fmt.Sprintf("taint %q is a node-condition taint managed by Kubernetes controllers: the autoscaler drops it from its template node and the node lifecycle controller may remove it; use your own key", key)
	}
	return ""
}

// StartupTaintProblem explains why key cannot be a group's startupTaint
// (registered at join, removed by the taint remover), or returns "".
func StartupTaintProblem(key string) string {
	switch ClassifyTaint(key) {
	case TaintStatus:
		return fmt.Sprintf("taint %q has the status-taint prefix: the autoscaler takes such a node as ready and would add another VM while the GPUs come up; use %s%s", key, StartupTaintPrefix, afterSlash(key))
	case TaintAutoscalerOwn:
		return fmt.Sprintf("taint %q is the autoscaler's own scale-down marker: a node registering with it is taken for one being deleted; use a key under %s", key, StartupTaintPrefix)
	case TaintCondition:
		return fmt.Sprintf("taint %q is a node-condition taint managed by Kubernetes controllers, which may remove it before the GPUs are ready; use a key under %s", key, StartupTaintPrefix)
	}
	return ""
}

// LabelProblem explains why a user label key contradicts what the
// autoscaler's GCE template or the kubelet sets, or returns "". Keys that
// nodegen derives itself are reported by the caller (see DerivedLabel).
func LabelProblem(key string) string {
	switch {
	case key == "kubernetes.io/hostname":
		return "label \"kubernetes.io/hostname\" is set by the kubelet to the node's name (and by the autoscaler to its template's name); remove it"
	case key == "kubernetes.io/arch":
		return "label \"kubernetes.io/arch\" is set by the kubelet and the autoscaler from the group's arch; set arch instead"
	case key == "kubernetes.io/os":
		return "label \"kubernetes.io/os\" is set by the kubelet and the autoscaler (linux); remove it"
	case key == "topology.gke.io/zone":
		return "label \"topology.gke.io/zone\" is set by the autoscaler on its template node from the MIG's zone; remove it (nodegen sets topology.kubernetes.io/zone)"
	case strings.HasPrefix(key, "beta.kubernetes.io/"):
		return fmt.Sprintf("label %q is a deprecated beta label the kubelet sets itself (or no longer sets); use the GA label or your own prefix", key)
	case strings.HasPrefix(key, "failure-domain.beta.kubernetes.io/"):
		return fmt.Sprintf("label %q is the deprecated zone/region label: nodegen sets topology.kubernetes.io/zone and topology.kubernetes.io/region; remove it", key)
	case strings.HasPrefix(key, NodeTemplateResourcesPfx):
		return fmt.Sprintf("label %q makes the autoscaler add capacity %q to its template node that the real node does not have; remove it", key, strings.TrimPrefix(key, NodeTemplateResourcesPfx))
	case key == GPUDRALabel:
		return fmt.Sprintf("label %q makes the autoscaler expect GPUs through DRA, not %s as the GPU Operator's device plugin publishes them; remove it", key, GPUResource)
	}
	return ""
}

// DerivedLabel reports whether nodegen itself sets label key on a group's
// nodes (identity, GPU, zone, region, instance type, revision).
func DerivedLabel(key string) bool {
	switch key {
	case GroupLabel, GPULabel, ZoneLabel, RegionLabel, InstanceTypeLabel, RevisionLabel:
		return true
	}
	return false
}

func afterSlash(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// KubeletSelfLabels are the labels the kubelet sets on its own Node that
// a pod may select and that the autoscaler's GCE template node lacks: a
// pod selecting one would never make the autoscaler scale a group up from
// zero unless kube-env declares it (TemplateLabels).
//
// What the kubelet sets at registration: kubernetes/kubernetes
// pkg/kubelet/kubelet_node_status.go initialNode (kubernetes.io/hostname,
// kubernetes.io/os, kubernetes.io/arch, beta.kubernetes.io/os,
// beta.kubernetes.io/arch; zone, region and instance type only from a
// cloud provider, which nodegen's nodes have none of: their join sets
// those as --node-labels), within the set k8s.io/kubelet pkg/apis
// well_known_labels.go (tag v0.35.2) allows. What the template has:
// kubernetes/autoscaler cluster-autoscaler-1.35.0
// cloudprovider/gce/templates.go BuildGenericLabels (kubernetes.io/arch,
// kubernetes.io/os, node.kubernetes.io/instance-type, the topology zone
// and region, topology.gke.io/zone, kubernetes.io/hostname set to the
// template's own name) plus kube-env's node_labels. So the beta os and
// arch labels are the ones to declare; the hostname is every node's own
// and no selector on it can scale from zero.
func KubeletSelfLabels(g *NodeGroup) map[string]string {
	return map[string]string{
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": g.Arch,
	}
}

// SelectorLabel is the label key a placement selects g's nodes with:
// VerifiedGroupLabel for a cloud group (the node CSR approver sets it once
// it checked the VM), GroupLabel for an on-prem group, whose servers no
// party checks before they join.
func (g *NodeGroup) SelectorLabel() string {
	if g.Cloud() {
		return VerifiedGroupLabel
	}
	return GroupLabel
}

// VerifiedLabels are the labels a cloud group's Nodes get after they
// registered, from a party that checked the VM (VerifiedGroupLabel, set
// by the node CSR approver), never from the join or the kubelet.
func VerifiedLabels(g *NodeGroup) map[string]string {
	return map[string]string{VerifiedGroupLabel: g.Name}
}

// TemplateLabels are the labels kube-env's node_labels declares for a
// cloud group: NodeLabels (which the join also registers) plus
// KubeletSelfLabels (which the kubelet sets itself) plus VerifiedLabels
// (which the approver sets once it checked the VM), so that the
// autoscaler's template node carries every label a real node of the group
// has once it is in service and a pod may select. kube-env is read by the
// autoscaler alone: the join script never passes these labels to the
// kubelet.
func (g *NodeGroup) TemplateLabels() map[string]string {
	out := make(map[string]string, len(g.NodeLabels)+3)
	for k, v := range g.NodeLabels {
		out[k] = v
	}
	for k, v := range KubeletSelfLabels(g) {
		out[k] = v
	}
	for k, v := range VerifiedLabels(g) {
		out[k] = v
	}
	return out
}
