package gce

import (
	"bytes"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// joinConfiguration is the group's JoinConfiguration with the per-VM
// values as placeholders.
func joinConfiguration(src *model.Source, g *model.NodeGroup) (*kubeadm.JoinConfiguration, error) {
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
	return kubeadm.NewJoin(kubeadm.Join{
		Token:             model.TokenPlaceholder,
		APIServerEndpoint: c.ControlPlaneEndpoint,
		CACertHashes:      c.CACertHashes,
		Name:              model.InstancePlaceholder,
		Taints:            taints,
		Labels:            labels,
		ProviderID:        c.ProviderIDTemplate(),
		PatchesDir:        model.NodePatchesDir,
		Timeouts:          kubeadm.JoinTimeouts(deadline),
	}), nil
}

// joinTemplate renders the group's JoinConfiguration as the YAML document
// the startup script carries. That the script's substitution of the
// placeholders (model.JoinPlaceholders) is safe in it is checked where
// every artifact is re-read, by package verify, on every run.
func joinTemplate(src *model.Source, g *model.NodeGroup) ([]byte, error) {
	cfg, err := joinConfiguration(src, g)
	if err != nil {
		return nil, err
	}
	return yamlout.Marshal(cfg)
}

// kubeletPatch renders the kubeadm patch (target kubeletconfiguration,
// JSON merge patch) that sets the group's reservations and eviction
// thresholds in the kubelet's configuration.
func kubeletPatch(g *model.NodeGroup) ([]byte, error) {
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
