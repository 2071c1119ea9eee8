package k8s

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/nodegen/nodegen/internal/deviceplugin"
	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// gpuOperatorTolerations are the tolerations the GPU Operator's operands
// and NFD workers need on the GPU groups' nodes: the operator's default
// nvidia.com/gpu toleration plus every taint of every GPU group, the
// startup taints included. Without them the operator never validates a
// tainted node and its startup taint is never removed.
func gpuOperatorTolerations(src *model.Source) []corev1.Toleration {
	out := []corev1.Toleration{{Key: model.GPUResource, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	for _, g := range src.GPUGroups() {
		for _, t := range g.JoinTaints() {
			taint := &corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
			if !corev1helpers.TolerationsTolerateTaint(klog.Background(), out, taint, false) {
				out = append(out, manifest.Tolerations([]model.Taint{t})...)
			}
		}
	}
	return out
}

// gpuOperatorValues renders the GPU Operator Helm values.
func gpuOperatorValues(src *model.Source, header string) ([]byte, error) {
	tols := gpuOperatorTolerations(src)
	nfd := append([]corev1.Toleration{{
		Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpEqual, Value: "", Effect: corev1.TaintEffectNoSchedule,
	}}, tols...)
	values := map[string]any{
		"daemonsets":             map[string]any{"tolerations": tols},
		"node-feature-discovery": map[string]any{"worker": map[string]any{"tolerations": nfd}},
		// Written out, not left to the chart's default: every GPU node
		// advertises nvidia.com/gpu, as the autoscaler's template for its
		// group does ("mixed" would advertise nvidia.com/mig-<profile>
		// only, and the autoscaler takes a node with the GPU label and
		// no nvidia.com/gpu for an unready GPU node for ever:
		// cluster-autoscaler-1.35.2 processors/customresources/
		// gpu_processor.go). vet refuses the MIG labels nodegen does not
		// model (validate.migLabels).
		"mig": map[string]any{"strategy": "single"},
	}
	// The driver and the toolkit: the operator's when an image does not
	// hold them; off when every GPU family bakes them (the chart's
	// "pre-installed drivers and NVIDIA Container Toolkit" case: values
	// driver.enabled and toolkit.enabled, NVIDIA/gpu-operator v26.7.0
	// deployments/gpu-operator/values.yaml).
	host := src.HostDriver()
	values["driver"] = map[string]any{"enabled": !host}
	values["toolkit"] = map[string]any{"enabled": !host}
	// The operand images a GPU image pulls at build, pinned here to the
	// same versions (model.GPUOperatorImages): the validator's version
	// otherwise follows the chart's appVersion.
	for _, im := range model.GPUOperatorImages(host) {
		sec, _ := values[im.Key].(map[string]any)
		if sec == nil {
			sec = map[string]any{}
			values[im.Key] = sec
		}
		sec["repository"], sec["image"], sec["version"] = im.Repository, im.Image, im.Version
	}
	dp, err := devicePluginValues(src)
	if err != nil {
		return nil, err
	}
	if dp != nil {
		sec := values["devicePlugin"].(map[string]any)
		for k, v := range dp {
			sec[k] = v
		}
	}
	return manifest.MarshalValues(header, values)
}

// The GPU Operator's device-plugin ConfigMap nodegen has the chart create
// (values devicePlugin.config.{create,name,default,data}). Each GPU group
// that shares its GPUs has an entry named after it, selected on its nodes
// by the nvidia.com/device-plugin.config label; every other GPU node gets
// the default entry, which shares nothing.
const (
	devicePluginConfigMap     = "nodegen-device-plugin-config"
	devicePluginDefaultConfig = "nodegen-exclusive"
)

// devicePluginConfigs returns the ConfigMap's entries by name, or nil when
// no group shares its GPUs (then nodegen leaves the device plugin's
// configuration to the chart).
func devicePluginConfigs(src *model.Source) map[string]deviceplugin.Config {
	var out map[string]deviceplugin.Config
	for _, g := range src.GPUGroups() {
		if !g.SharesGPUs() {
			continue
		}
		if out == nil {
			out = map[string]deviceplugin.Config{devicePluginDefaultConfig: {Version: "v1"}}
		}
		out[g.DevicePluginConfig()] = deviceplugin.Config{Version: "v1", Sharing: &deviceplugin.Sharing{
			TimeSlicing: &deviceplugin.TimeSlicing{Resources: []deviceplugin.Resource{{Name: model.GPUResource, Replicas: g.GPUReplicas()}}},
		}}
	}
	return out
}

// devicePluginValues is the GPU Operator values' devicePlugin section, or
// nil when no group shares its GPUs.
func devicePluginValues(src *model.Source) (map[string]any, error) {
	cfgs := devicePluginConfigs(src)
	if cfgs == nil {
		return nil, nil
	}
	data := make(map[string]string, len(cfgs))
	for name, c := range cfgs {
		b, err := yamlout.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("device plugin config %s: %w", name, err)
		}
		data[name] = string(b)
	}
	return map[string]any{"config": map[string]any{
		"create":  true,
		"name":    devicePluginConfigMap,
		"default": devicePluginDefaultConfig,
		"data":    data,
	}}, nil
}
