// Package deviceplugin is the NVIDIA device plugin's configuration file
// (NVIDIA/k8s-device-plugin api/config/v1), the fields nodegen writes, and
// how the plugin reads them: render writes the entries of the GPU
// Operator's device-plugin ConfigMap with it, verify reads them back.
package deviceplugin

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/model"
)

// Config is the device plugin's configuration file.
type Config struct {
	Version string   `json:"version"`
	Sharing *Sharing `json:"sharing,omitempty"`
}

// Sharing is the config's sharing section.
type Sharing struct {
	TimeSlicing *TimeSlicing `json:"timeSlicing,omitempty"`
}

// TimeSlicing advertises each device of a resource Replicas times. With
// renameByDefault false the resource keeps its name (nvidia.com/gpu), so
// the node's nvidia.com/gpu capacity is GPUs × replicas.
type TimeSlicing struct {
	RenameByDefault bool       `json:"renameByDefault"`
	Resources       []Resource `json:"resources"`
}

// Resource is one replicated resource.
type Resource struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
}

// Decode decodes one configuration file strictly.
func Decode(data []byte) (*Config, error) {
	var c Config
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
func (c *Config) AdvertisedGPUs(gpus int) int {
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
