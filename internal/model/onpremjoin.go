package model

import (
	"strings"

	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// KubeletMaySetLabel reports whether a kubelet may give its own Node the
// label key, through --node-labels at registration: a key outside the
// kubernetes.io and k8s.io namespaces (and their subdomains), or one of
// the kubelet's own labels and namespaces there (k8s.io/kubelet
// pkg/apis/well_known_labels.go IsKubeletLabel, tag v0.37.2). The kubelet
// refuses to start with any other such key, and NodeRestriction refuses
// it too (node-restriction.kubernetes.io/ among them; kubernetes v1.37.2
// plugin/pkg/admission/noderestriction/admission.go getForbiddenLabels).
func KubeletMaySetLabel(key string) bool {
	return !kubernetesNamespace(key) || kubeletapis.IsKubeletLabel(key)
}

// kubernetesNamespace reports whether a label key's namespace is
// kubernetes.io, k8s.io or a subdomain of either.
func kubernetesNamespace(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if ns == d || strings.HasSuffix(ns, "."+d) {
			return true
		}
	}
	return false
}

// OnpremJoinLabels are the labels a new node of the onprem group g
// registers with when it joins with its group's join script: the
// NodeLabels a kubelet may set on itself (KubeletMaySetLabel).
// label-onprem-nodes.sh sets all of NodeLabels, these and the others.
func (g *NodeGroup) OnpremJoinLabels() map[string]string {
	out := make(map[string]string, len(g.NodeLabels))
	for k, v := range g.NodeLabels {
		if KubeletMaySetLabel(k) {
			out[k] = v
		}
	}
	return out
}

// OnpremJoinProviderID is the kubelet --provider-id an on-prem node named
// node joins with: UnmanagedProviderID, or "" when the source sets
// cluster.onpremProviderID to "none".
func (c *Cluster) OnpremJoinProviderID(node string) string {
	if !c.SetsOnpremProviderID() {
		return ""
	}
	return UnmanagedProviderID(node)
}
