package render

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/deviceplugin"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// The GPU Operator's device-plugin ConfigMap nodegen has the chart create
// (values devicePlugin.config.{create,name,default,data}). Each GPU group
// that shares its GPUs has an entry named after it, selected on its nodes
// by the nvidia.com/device-plugin.config label; every other GPU node gets
// the default entry, which shares nothing.
const (
	DevicePluginConfigMap     = "nodegen-device-plugin-config"
	DevicePluginDefaultConfig = "nodegen-exclusive"
)

// DevicePluginConfigs returns the ConfigMap's entries by name, or nil when
// no group shares its GPUs (then nodegen leaves the device plugin's
// configuration to the chart).
func DevicePluginConfigs(src *model.Source) map[string]deviceplugin.Config {
	var out map[string]deviceplugin.Config
	for _, g := range src.GPUGroups() {
		if !g.SharesGPUs() {
			continue
		}
		if out == nil {
			out = map[string]deviceplugin.Config{DevicePluginDefaultConfig: {Version: "v1"}}
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
	cfgs := DevicePluginConfigs(src)
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
		"name":    DevicePluginConfigMap,
		"default": DevicePluginDefaultConfig,
		"data":    data,
	}}, nil
}
