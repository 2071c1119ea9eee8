package verify

import (
	"fmt"
	"maps"

	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/deviceplugin"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
)

// capacity checks the capacity policy of a cloud group on both sides: the
// template node the autoscaler builds from kube-env (pods, nvidia.com/gpu,
// evictionHard, kube_reserved, local-SSD ephemeral storage, the Spot
// label), the node as its kubelet configuration patch, the GPU Operator's
// device-plugin config and the instance template make it, and the source.
// It takes the artifacts read once for every check: the kube-env, the
// startup script's quoted heredocs, the GPU Operator's values and the
// Terraform file as read.
func capacity(g *model.NodeGroup, script heredocs, env *kubeEnv, gpu *gpuValues, tf tfRead) error {
	if env.err != nil {
		return fmt.Errorf("kube-env: %w", env.err)
	}
	tmpl := env.tmpl
	docs := script[model.KubeletPatchHeredocDelimiter]
	if len(docs) != 1 {
		return fmt.Errorf("the script carries %d quoted heredocs delimited by %s, want 1", len(docs), model.KubeletPatchHeredocDelimiter)
	}
	patch, err := kubeadm.DecodeKubeletConfigurationPatch([]byte(docs[0]))
	if err != nil {
		return fmt.Errorf("kubelet configuration patch: %w", err)
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	// Eviction: the kubelet runs with every default signal, the source's
	// values win, and the autoscaler subtracts the same two it reads.
	for k := range model.DefaultEvictionHard {
		if _, ok := patch.EvictionHard[k]; !ok {
			fail("the kubelet's evictionHard lacks %s: a partial evictionHard disables the kubelet's default for it", k)
		}
	}
	if !maps.Equal(patch.EvictionHard, g.EvictionHard()) {
		fail("kubelet evictionHard %v, source %v", patch.EvictionHard, g.EvictionHard())
	}
	for _, k := range model.AutoscalerEvictionSignals {
		if tmpl.EvictionHard[k] != patch.EvictionHard[k] {
			fail("evictionHard %s: kube-env %q, kubelet %q", k, tmpl.EvictionHard[k], patch.EvictionHard[k])
		}
	}
	if len(tmpl.EvictionHard) != len(model.AutoscalerEvictionSignals) {
		fail("kube-env evictionHard %v: the autoscaler reads only %v", tmpl.EvictionHard, model.AutoscalerEvictionSignals)
	}

	// Reservations: kube_reserved is kubeReserved + systemReserved.
	if err := sameReserved(tmpl.KubeReserved, patch.KubeReserved, patch.SystemReserved); err != nil {
		fail("%v", err)
	}

	// Pods: the template's pods capacity is extended_resources' pods, or
	// the GCE provider's fixed 110.
	tmplPods := int64(nodetemplate.TemplatePods)
	if q, ok := templateQuantity(tmpl, "pods"); ok {
		tmplPods = q
	}
	kubeletPods := int64(patch.MaxPods)
	if kubeletPods == 0 {
		kubeletPods = model.DefaultMaxPods
	}
	if tmplPods != kubeletPods || kubeletPods != int64(g.MaxPods()) {
		fail("pods: template %d, kubelet maxPods %d, source %d", tmplPods, kubeletPods, g.MaxPods())
	}

	// GPUs: the template's nvidia.com/gpu is what the device plugin will
	// advertise under the config the node's label selects.
	if g.GPU != nil {
		tmplGPUs, ok := templateQuantity(tmpl, model.GPUResource)
		if !ok {
			fail("kube-env declares no %s (extended_resources)", model.GPUResource)
		}
		adv, err := gpu.advertised(g, tmpl.Labels)
		if err != nil {
			fail("device plugin: %v", err)
		} else if tmplGPUs != int64(adv) || adv != g.AdvertisedGPUs() {
			fail("%s: template %d, device plugin %d, source %d", model.GPUResource, tmplGPUs, adv, g.AdvertisedGPUs())
		}
	}

	// Spot: label on both sides iff Terraform provisions Spot VMs, and a
	// shutdown grace period within GCE's preemption notice (a template
	// that does not read back is sameTemplate's to report).
	if tf.err == nil {
		s := tf.template.Properties.Scheduling
		spot := s.ProvisioningModel == model.ProvisioningSpot
		if spot != g.Spot || (tmpl.Labels[model.SpotLabel] == "true") != spot {
			fail("spot: terraform provisioning_model %q, kube-env %s=%q, source spot %t", s.ProvisioningModel, model.SpotLabel, tmpl.Labels[model.SpotLabel], g.Spot)
		}
		if spot && s.InstanceTerminationAction != model.SpotTerminationAction {
			fail("spot: instance_termination_action %q, want %q", s.InstanceTerminationAction, model.SpotTerminationAction)
		}
		ssds := localSSDs(tf.template)
		if tmpl.LocalSSDCount != int64(ssds) || ssds != g.LocalSSDCount {
			fail("local SSDs: kube-env ephemeral_storage_local_ssd_count %d, terraform %d SCRATCH local-ssd disks, source %d", tmpl.LocalSSDCount, ssds, g.LocalSSDCount)
		}
		if tmpl.BlockBootDiskEphemeral != (ssds > 0) {
			fail("local SSDs: BLOCK_EPH_STORAGE_BOOT_DISK %t with %d local SSDs", tmpl.BlockBootDiskEphemeral, ssds)
		}
	}
	if g.Spot {
		d := durationOf(patch.ShutdownGracePeriod)
		if d <= 0 || d > model.SpotPreemptionNotice {
			fail("spot: kubelet shutdownGracePeriod %s, want more than 0 and at most GCE's preemption notice %s", d, model.SpotPreemptionNotice)
		}
	}
	if c, t := durationOf(patch.ShutdownGracePeriodCriticalPods), durationOf(patch.ShutdownGracePeriod); c > t {
		fail("kubelet shutdownGracePeriodCriticalPods %s exceeds shutdownGracePeriod %s", c, t)
	}
	if len(errs) > 0 {
		return fmt.Errorf("group %s: %s", g.Name, strings.Join(errs, "; "))
	}
	return nil
}

// localSSDs counts the template's local SSDs: its SCRATCH local-ssd
// disks.
func localSSDs(t *model.InstanceTemplate) int {
	n := 0
	for _, d := range t.Properties.Disks {
		if d.Type == model.DiskScratch && d.InitializeParams.DiskType == model.LocalSSDDiskType {
			n++
		}
	}
	return n
}

func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

// templateQuantity is an extended_resources entry as the autoscaler
// parses it (a quantity that does not parse is ignored).
func templateQuantity(t *kubeenv.Template, name string) (int64, bool) {
	s, ok := t.ExtendedResources[name]
	if !ok {
		return 0, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() < 0 {
		return 0, false
	}
	return q.Value(), true
}

// sameReserved checks kube_reserved against the sum of the kubelet's
// kubeReserved and systemReserved, per resource.
func sameReserved(tmpl map[string]string, parts ...map[string]string) error {
	sum := map[string]resource.Quantity{}
	for _, m := range parts {
		for k, v := range m {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return fmt.Errorf("kubelet reservation %s=%q: %w", k, v, err)
			}
			s := sum[k]
			s.Add(q)
			sum[k] = s
		}
	}
	if len(sum) != len(tmpl) {
		return fmt.Errorf("kube_reserved %v, kubelet kubeReserved+systemReserved %v", tmpl, sum)
	}
	for k, want := range sum {
		got, err := resource.ParseQuantity(tmpl[k])
		if err != nil || got.Cmp(want) != 0 {
			return fmt.Errorf("kube_reserved %s=%q, kubelet kubeReserved+systemReserved %s", k, tmpl[k], want.String())
		}
	}
	return nil
}

// gpuValues are the GPU Operator's values, decoded once (on first use)
// for every GPU group, with each device-plugin config decoded once.
type gpuValues struct {
	data []byte
	once sync.Once
	v    devicePluginValues
	err  error

	mu      sync.Mutex
	configs map[string]decodedConfig
}

type devicePluginValues struct {
	DevicePlugin *struct {
		Config *struct {
			Create  bool              `json:"create"`
			Name    string            `json:"name"`
			Default string            `json:"default"`
			Data    map[string]string `json:"data"`
		} `json:"config"`
	} `json:"devicePlugin"`
}

type decodedConfig struct {
	c   *deviceplugin.Config
	err error
}

func newGPUValues(data []byte) *gpuValues {
	return &gpuValues{data: data, configs: map[string]decodedConfig{}}
}

// config decodes the device-plugin config doc (the entry name of the
// values' ConfigMap) once.
func (gv *gpuValues) config(name, doc string) (*deviceplugin.Config, error) {
	gv.mu.Lock()
	defer gv.mu.Unlock()
	d, ok := gv.configs[name]
	if !ok {
		d.c, d.err = deviceplugin.Decode([]byte(doc))
		gv.configs[name] = d
	}
	return d.c, d.err
}

// advertised is the nvidia.com/gpu a node of the group gets from the
// device plugin: the GPU Operator values' devicePlugin config entry named
// by the node's nvidia.com/device-plugin.config label (else the default
// entry; with no config at all, one per GPU).
func (gv *gpuValues) advertised(g *model.NodeGroup, labels map[string]string) (int, error) {
	gv.once.Do(func() { gv.err = yaml.Unmarshal(gv.data, &gv.v) })
	if gv.err != nil {
		return 0, gv.err
	}
	v := &gv.v
	name, labelled := labels[model.DevicePluginConfigLabel]
	if v.DevicePlugin == nil || v.DevicePlugin.Config == nil {
		if labelled {
			return 0, fmt.Errorf("the node selects config %q, but the GPU Operator values set no device plugin config", name)
		}
		return g.GPU.Count, nil
	}
	if !labelled {
		name = v.DevicePlugin.Config.Default
	}
	doc, ok := v.DevicePlugin.Config.Data[name]
	if !ok {
		return 0, fmt.Errorf("config %q is not in the device plugin ConfigMap", name)
	}
	c, err := gv.config(name, doc)
	if err != nil {
		return 0, fmt.Errorf("config %q: %w", name, err)
	}
	return c.AdvertisedGPUs(g.GPU.Count), nil
}
