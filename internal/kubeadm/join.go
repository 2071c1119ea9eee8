package kubeadm

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Join is what a node's JoinConfiguration says: how it finds and trusts
// the control plane, and how it registers. Every JoinConfiguration
// nodegen renders, a cloud group's and an on-prem group's, is NewJoin of
// one.
type Join struct {
	// Token, APIServerEndpoint and CACertHashes are the bootstrap-token
	// discovery.
	Token             string
	APIServerEndpoint string
	CACertHashes      []string
	// Name is the Node's name.
	Name string
	// Taints are registered with the Node; none is an empty list.
	Taints []corev1.Taint
	// Labels are the kubelet's --node-labels, written sorted by key;
	// none: no flag.
	Labels map[string]string
	// ProviderID is the kubelet's --provider-id; "": no flag.
	ProviderID string
	// PatchesDir is the kubeadm patches directory; "": none.
	PatchesDir string
	// Timeouts are the join's own timeouts; nil: kubeadm's defaults.
	Timeouts *Timeouts
}

// NewJoin is j's JoinConfiguration.
func NewJoin(j Join) *JoinConfiguration {
	taints := j.Taints
	if taints == nil {
		taints = []corev1.Taint{}
	}
	var args []Arg
	if len(j.Labels) > 0 {
		args = append(args, Arg{Name: "node-labels", Value: NodeLabels(j.Labels)})
	}
	if j.ProviderID != "" {
		args = append(args, Arg{Name: "provider-id", Value: j.ProviderID})
	}
	c := &JoinConfiguration{
		APIVersion: APIVersion,
		Kind:       JoinKind,
		Discovery: Discovery{BootstrapToken: &BootstrapTokenDiscovery{
			Token:             j.Token,
			APIServerEndpoint: j.APIServerEndpoint,
			CACertHashes:      j.CACertHashes,
		}},
		NodeRegistration: NodeRegistrationOptions{Name: j.Name, Taints: taints, KubeletExtraArgs: args},
		Timeouts:         j.Timeouts,
	}
	if j.PatchesDir != "" {
		c.Patches = &Patches{Directory: j.PatchesDir}
	}
	return c
}

// NodeLabels is the kubelet's --node-labels value of labels: key=value
// pairs joined by ',', sorted by key.
func NodeLabels(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}
