// Package kubeadm holds the parts of kubeadm's v1beta4 JoinConfiguration
// that nodegen writes, for strict decoding of what the join script produces.
// The kubeadm API types live inside k8s.io/kubernetes, which is not meant to
// be imported; these mirror its JSON field names.
package kubeadm

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// APIVersion is the kubeadm configuration API nodegen writes.
const APIVersion = "kubeadm.k8s.io/v1beta4"

// JoinConfiguration is kubeadm's v1beta4 JoinConfiguration.
type JoinConfiguration struct {
	APIVersion       string                  `json:"apiVersion"`
	Kind             string                  `json:"kind"`
	DryRun           bool                    `json:"dryRun,omitempty"`
	NodeRegistration NodeRegistrationOptions `json:"nodeRegistration"`
	CACertPath       string                  `json:"caCertPath,omitempty"`
	Discovery        Discovery               `json:"discovery"`
	Patches          *Patches                `json:"patches,omitempty"`
	Timeouts         *Timeouts               `json:"timeouts,omitempty"`
	SkipPhases       []string                `json:"skipPhases,omitempty"`
}

// NodeRegistrationOptions is how the node registers.
type NodeRegistrationOptions struct {
	Name                  string         `json:"name,omitempty"`
	CRISocket             string         `json:"criSocket,omitempty"`
	Taints                []corev1.Taint `json:"taints"`
	KubeletExtraArgs      []Arg          `json:"kubeletExtraArgs,omitempty"`
	IgnorePreflightErrors []string       `json:"ignorePreflightErrors,omitempty"`
	ImagePullPolicy       string         `json:"imagePullPolicy,omitempty"`
	ImagePullSerial       *bool          `json:"imagePullSerial,omitempty"`
}

// Arg is a kubelet flag without its dashes.
type Arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Discovery says how the node finds and trusts the control plane.
type Discovery struct {
	BootstrapToken    *BootstrapTokenDiscovery `json:"bootstrapToken,omitempty"`
	File              *FileDiscovery           `json:"file,omitempty"`
	TLSBootstrapToken string                   `json:"tlsBootstrapToken,omitempty"`
}

// BootstrapTokenDiscovery is token-based discovery.
type BootstrapTokenDiscovery struct {
	Token                    string   `json:"token"`
	APIServerEndpoint        string   `json:"apiServerEndpoint,omitempty"`
	CACertHashes             []string `json:"caCertHashes,omitempty"`
	UnsafeSkipCAVerification bool     `json:"unsafeSkipCAVerification,omitempty"`
}

// FileDiscovery is kubeconfig-file discovery.
type FileDiscovery struct {
	KubeConfigPath string `json:"kubeConfigPath"`
}

// Patches points at kubeadm patch files.
type Patches struct {
	Directory string `json:"directory,omitempty"`
}

// Timeouts are kubeadm's v1beta4 timeouts (durations as strings).
type Timeouts struct {
	ControlPlaneComponentHealthCheck string `json:"controlPlaneComponentHealthCheck,omitempty"`
	KubeletHealthCheck               string `json:"kubeletHealthCheck,omitempty"`
	KubernetesAPICall                string `json:"kubernetesAPICall,omitempty"`
	EtcdAPICall                      string `json:"etcdAPICall,omitempty"`
	TLSBootstrap                     string `json:"tlsBootstrap,omitempty"`
	Discovery                        string `json:"discovery,omitempty"`
	UpgradeManifests                 string `json:"upgradeManifests,omitempty"`
}

// DecodeJoinConfiguration decodes data strictly (unknown and duplicate
// fields are errors) and checks apiVersion and kind.
func DecodeJoinConfiguration(data []byte) (*JoinConfiguration, error) {
	var c JoinConfiguration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, err
	}
	if c.APIVersion != APIVersion || c.Kind != "JoinConfiguration" {
		return nil, fmt.Errorf("got %s %s, want %s JoinConfiguration", c.APIVersion, c.Kind, APIVersion)
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
