package render

import (
	"fmt"

	"sigs.k8s.io/yaml"

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

// DevicePluginConfig is the NVIDIA device plugin's configuration file
// (k8s-device-plugin api/config/v1), the fields nodegen writes.
type DevicePluginConfig struct {
	Version string               `json:"version"`
	Sharing *DevicePluginSharing `json:"sharing,omitempty"`
}

// DevicePluginSharing is the config's sharing section.
type DevicePluginSharing struct {
	TimeSlicing *DevicePluginTimeSlicing `json:"timeSlicing,omitempty"`
}

// DevicePluginTimeSlicing advertises each device of a resource Replicas
// times. With renameByDefault false the resource keeps its name
// (nvidia.com/gpu), so the node's nvidia.com/gpu capacity is GPUs × replicas.
type DevicePluginTimeSlicing struct {
	RenameByDefault bool                   `json:"renameByDefault"`
	Resources       []DevicePluginResource `json:"resources"`
}

// DevicePluginResource is one replicated resource.
type DevicePluginResource struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
}

// DevicePluginConfigs returns the ConfigMap's entries by name, or nil when
// no group shares its GPUs (then nodegen leaves the device plugin's
// configuration to the chart).
func DevicePluginConfigs(src *model.Source) map[string]DevicePluginConfig {
	var out map[string]DevicePluginConfig
	for _, g := range src.GPUGroups() {
		if !g.SharesGPUs() {
			continue
		}
		if out == nil {
			out = map[string]DevicePluginConfig{DevicePluginDefaultConfig: {Version: "v1"}}
		}
		out[g.DevicePluginConfig()] = DevicePluginConfig{Version: "v1", Sharing: &DevicePluginSharing{
			TimeSlicing: &DevicePluginTimeSlicing{Resources: []DevicePluginResource{{Name: model.GPUResource, Replicas: g.GPUReplicas()}}},
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

// DecodeDevicePluginConfig decodes one entry strictly.
func DecodeDevicePluginConfig(data []byte) (*DevicePluginConfig, error) {
	var c DevicePluginConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, err
	}
	if c.Version != "v1" {
		return nil, fmt.Errorf("version %q, want v1", c.Version)
	}
	return &c, nil
}

// AdvertisedGPUs is the nvidia.com/gpu capacity a node with gpus GPUs
// gets under this config.
func (c *DevicePluginConfig) AdvertisedGPUs(gpus int) int {
	if c.Sharing == nil || c.Sharing.TimeSlicing == nil {
		return gpus
	}
	ts := c.Sharing.TimeSlicing
	for _, r := range ts.Resources {
		if r.Name == model.GPUResource && !ts.RenameByDefault {
			return gpus * r.Replicas
		}
	}
	return gpus
}
