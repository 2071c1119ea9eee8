// Package kubeadm holds the parts of kubeadm's v1beta4 JoinConfiguration,
// and of the kubelet configuration patch kubeadm applies, that nodegen
// writes. nodegen renders the join from these types, and decodes what a
// join script hands to kubeadm back into them, strictly.
//
// The kubeadm API types live inside k8s.io/kubernetes, which is not meant
// to be imported; these mirror its JSON field names (kubeadm's
// cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go) for the fields nodegen
// sets, and nothing more: a document with any other field does not decode.
package kubeadm

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// APIVersion is the kubeadm configuration API nodegen writes.
const APIVersion = "kubeadm.k8s.io/v1beta4"

// JoinKind is the kind of a JoinConfiguration.
const JoinKind = "JoinConfiguration"

// JoinConfiguration is kubeadm's v1beta4 JoinConfiguration.
type JoinConfiguration struct {
	APIVersion       string                  `json:"apiVersion"`
	Kind             string                  `json:"kind"`
	Discovery        Discovery               `json:"discovery"`
	NodeRegistration NodeRegistrationOptions `json:"nodeRegistration"`
	Patches          *Patches                `json:"patches,omitempty"`
	Timeouts         *Timeouts               `json:"timeouts,omitempty"`
}

// NodeRegistrationOptions is how the node registers.
type NodeRegistrationOptions struct {
	Name string `json:"name,omitempty"`
	// Taints are registered with the Node; an empty list (not nil) means
	// none, where nil would give a control-plane node kubeadm's default.
	Taints           []corev1.Taint `json:"taints"`
	KubeletExtraArgs []Arg          `json:"kubeletExtraArgs,omitempty"`
}

// Arg is a kubelet flag without its dashes.
type Arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Discovery says how the node finds and trusts the control plane.
type Discovery struct {
	BootstrapToken *BootstrapTokenDiscovery `json:"bootstrapToken,omitempty"`
}

// BootstrapTokenDiscovery is token-based discovery.
type BootstrapTokenDiscovery struct {
	Token             string   `json:"token"`
	APIServerEndpoint string   `json:"apiServerEndpoint,omitempty"`
	CACertHashes      []string `json:"caCertHashes,omitempty"`
}

// Patches points at kubeadm patch files.
type Patches struct {
	Directory string `json:"directory,omitempty"`
}

// Timeouts are the kubeadm v1beta4 timeouts a join uses.
type Timeouts struct {
	KubernetesAPICall *metav1.Duration `json:"kubernetesAPICall,omitempty"`
	TLSBootstrap      *metav1.Duration `json:"tlsBootstrap,omitempty"`
	Discovery         *metav1.Duration `json:"discovery,omitempty"`
}

// DecodeJoinConfiguration decodes data strictly (unknown and duplicate
// fields are errors) and checks apiVersion and kind.
func DecodeJoinConfiguration(data []byte) (*JoinConfiguration, error) {
	var c JoinConfiguration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, err
	}
	if c.APIVersion != APIVersion || c.Kind != JoinKind {
		return nil, fmt.Errorf("got %s %s, want %s %s", c.APIVersion, c.Kind, APIVersion, JoinKind)
	}
	return &c, nil
}

// ExtraArg returns the value of the last kubelet extra arg called name.
func (c *JoinConfiguration) ExtraArg(name string) (string, bool) {
	v, ok := "", false
	for _, a := range c.NodeRegistration.KubeletExtraArgs {
		if a.Name == name {
			v, ok = a.Value, true
		}
	}
	return v, ok
}

// KubeletConfigurationPatch is the kubeadm patch (target
// kubeletconfiguration, JSON merge patch) with the kubelet settings nodegen
// sets: the fields of kubelet.config.k8s.io/v1beta1 KubeletConfiguration
// it needs, each omitted when empty so the patch changes nothing else.
type KubeletConfigurationPatch struct {
	APIVersion     string            `json:"apiVersion"`
	Kind           string            `json:"kind"`
	KubeReserved   map[string]string `json:"kubeReserved,omitempty"`
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	EvictionHard   map[string]string `json:"evictionHard,omitempty"`
	// MaxPods, ShutdownGracePeriod and ShutdownGracePeriodCriticalPods
	// have the kubelet's types (int32, metav1.Duration).
	MaxPods                         int32            `json:"maxPods,omitempty"`
	ShutdownGracePeriod             *metav1.Duration `json:"shutdownGracePeriod,omitempty"`
	ShutdownGracePeriodCriticalPods *metav1.Duration `json:"shutdownGracePeriodCriticalPods,omitempty"`
	// HealthzBindAddress is where the kubelet serves its health endpoint
	// (the kubelet's default is 127.0.0.1).
	HealthzBindAddress string `json:"healthzBindAddress,omitempty"`
}

// DecodeKubeletConfigurationPatch decodes a kubelet patch strictly and
// checks apiVersion and kind.
func DecodeKubeletConfigurationPatch(data []byte) (*KubeletConfigurationPatch, error) {
	var p KubeletConfigurationPatch
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, err
	}
	if p.APIVersion != KubeletAPIVersion || p.Kind != KubeletKind {
		return nil, fmt.Errorf("got %s %s, want %s %s", p.APIVersion, p.Kind, KubeletAPIVersion, KubeletKind)
	}
	return &p, nil
}

// KubeletAPIVersion and KubeletKind name the kubelet's configuration type.
const (
	KubeletAPIVersion = "kubelet.config.k8s.io/v1beta1"
	KubeletKind       = "KubeletConfiguration"
)
