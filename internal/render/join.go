package render

import (
	"bytes"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// StateDir is where the startup script keeps its files on the VM: the
// join configuration (removed at every boot and on exit) and the kubeadm
// patches directory.
const StateDir = "/var/lib/nodegen"

// PatchesDir is the kubeadm patches directory the JoinConfiguration names.
const PatchesDir = StateDir + "/patches"

// JoinTimeouts are kubeadm's own timeouts of one join attempt for a
// script with the given deadline: kubeadm's defaults (discovery and TLS
// bootstrap 5m, API calls 1m), each cut to a third of the deadline so
// that an attempt that times out leaves room for another.
func JoinTimeouts(deadline time.Duration) *kubeadm.Timeouts {
	third := (deadline / 3).Truncate(time.Second)
	d := func(def time.Duration) *metav1.Duration {
		return &metav1.Duration{Duration: min(def, third)}
	}
	return &kubeadm.Timeouts{
		Discovery:         d(5 * time.Minute),
		TLSBootstrap:      d(5 * time.Minute),
		KubernetesAPICall: d(time.Minute),
	}
}

// JoinConfiguration is the group's JoinConfiguration with the per-VM
// values as placeholders.
func JoinConfiguration(src *model.Source, g *model.NodeGroup) (*kubeadm.JoinConfiguration, error) {
	c := &src.Cluster
	deadline, err := c.JoinDeadline(g)
	if err != nil {
		return nil, err
	}
	labels := c.JoinLabels(g, model.ZonePlaceholder)
	taints := []corev1.Taint{}
	for _, t := range g.JoinTaints() {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return &kubeadm.JoinConfiguration{
		APIVersion: kubeadm.APIVersion,
		Kind:       kubeadm.JoinKind,
		Discovery: kubeadm.Discovery{BootstrapToken: &kubeadm.BootstrapTokenDiscovery{
			Token:             model.TokenPlaceholder,
			APIServerEndpoint: c.ControlPlaneEndpoint,
			CACertHashes:      c.CACertHashes,
		}},
		NodeRegistration: kubeadm.NodeRegistrationOptions{
			Name:   model.InstancePlaceholder,
			Taints: taints,
			KubeletExtraArgs: []kubeadm.Arg{
				{Name: "node-labels", Value: joinPairs(labels, "=")},
				{Name: "provider-id", Value: c.ProviderIDTemplate()},
			},
		},
		Patches:  &kubeadm.Patches{Directory: PatchesDir},
		Timeouts: JoinTimeouts(deadline),
	}, nil
}

// JoinTemplate renders the group's JoinConfiguration as the YAML document
// the startup script carries. That the script's substitution of the
// placeholders (model.JoinPlaceholders) is safe in it is checked where
// every artifact is re-read, by package verify, on every run.
func JoinTemplate(src *model.Source, g *model.NodeGroup) ([]byte, error) {
	cfg, err := JoinConfiguration(src, g)
	if err != nil {
		return nil, err
	}
	return yamlout.Marshal(cfg)
}

// KubeletPatch renders the kubeadm patch (target kubeletconfiguration,
// JSON merge patch) that sets the group's reservations and eviction
// thresholds in the kubelet's configuration.
func KubeletPatch(g *model.NodeGroup) ([]byte, error) {
	p := kubeadm.KubeletConfigurationPatch{APIVersion: kubeadm.KubeletAPIVersion, Kind: kubeadm.KubeletKind}
	if g.Kubelet != nil {
		p.KubeReserved, p.SystemReserved = g.Kubelet.KubeReserved, g.Kubelet.SystemReserved
	}
	kubeletCapacity(g, &p)
	if g.Autohealed() {
		// The MIG's health check reaches the kubelet's health endpoint
		// from Google's health checkers (terraform_autohealing.go).
		p.HealthzBindAddress = model.KubeletHealthzBindAddress
	}
	b, err := yamlout.Marshal(p)
	if err != nil {
		return nil, err
	}
	if bytes.Contains(b, []byte(model.KubeletPatchHeredocDelimiter)) {
		return nil, fmt.Errorf("the kubelet configuration contains its heredoc delimiter %s", model.KubeletPatchHeredocDelimiter)
	}
	return b, nil
}
