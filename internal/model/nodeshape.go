package model

import (
	"maps"
	"time"
)

// Capacity-policy labels and defaults (docs/capacity-node.md records where
// each comes from).
const (
	// SpotLabel marks Spot nodes, at join and in the autoscaler's template.
	// The autoscaler's GCE price model treats a node with
	// cloud.google.com/gke-spot=true (or gke-preemptible=true) as
	// preemptible (cloudprovider/gce/gce_price_model.go).
	SpotLabel = "cloud.google.com/gke-spot"
	// PreemptibleLabel is GKE's label of preemptible VMs, which the
	// autoscaler's price model reads as it reads SpotLabel.
	PreemptibleLabel = "cloud.google.com/gke-preemptible"
	// DevicePluginConfigLabel selects a node's entry in the GPU Operator's
	// device-plugin ConfigMap (the config-manager sidecar watches it).
	DevicePluginConfigLabel = "nvidia.com/device-plugin.config"

	// DefaultMaxPods is the kubelet's maxPods default (k8s.io/kubernetes
	// v1.37.2, pkg/kubelet/apis/config/v1beta1/defaults.go:
	// SetDefaults_KubeletConfiguration): the maxPods of a group that does
	// not set it. The schema's default is held equal to it by a test.
	DefaultMaxPods = 110
	// LocalSSDSizeGiB is the size the autoscaler's GCE provider counts per
	// local SSD (cloudprovider/gce/localssdsize) and GCE's default SCRATCH size.
	LocalSSDSizeGiB = 375
	// SpotPreemptionNotice is how long GCE gives a preempted Spot VM
	// between the ACPI soft-off signal and its hard stop.
	SpotPreemptionNotice = 30 * time.Second
)

// SpotShutdownGracePeriod and SpotShutdownGracePeriodCriticalPods are the
// kubelet shutdown periods Spot groups get by default: all of the notice,
// a third of it for critical pods.
var (
	SpotShutdownGracePeriod             = DurationOf(SpotPreemptionNotice)
	SpotShutdownGracePeriodCriticalPods = DurationOf(SpotPreemptionNotice / 3)
)

// SpotTerminationAction is what GCE does with a preempted Spot VM of a
// group: delete it. The MIG recreates the instance (same name, fresh boot
// disk) when Spot capacity returns, and the node garbage collector removes
// the Node object the deleted VM left behind.
const SpotTerminationAction = "DELETE"

// DefaultEvictionHard is the kubelet's default hard eviction set on Linux
// (k8s.io/kubernetes pkg/kubelet/eviction/defaults_linux.go, v1.37.2). A
// configuration that sets evictionHard at all replaces it, signal by
// signal, unless mergeDefaultEvictionSettings is true.
var DefaultEvictionHard = map[string]string{
	"memory.available":   "100Mi",
	"nodefs.available":   "10%",
	"nodefs.inodesFree":  "5%",
	"imagefs.available":  "15%",
	"imagefs.inodesFree": "5%",
}

// AutoscalerEvictionSignals are the evictionHard signals the autoscaler's
// GCE provider subtracts from its template (gce_reserved.go).
var AutoscalerEvictionSignals = []string{"memory.available", "nodefs.available"}

// GPUSharing is how the device plugin shares each GPU of a node.
type GPUSharing struct {
	TimeSlicing *TimeSlicing `json:"timeSlicing,omitempty"`
}

// TimeSlicing advertises each GPU Replicas times.
type TimeSlicing struct {
	Replicas int `json:"replicas"`
}

// resolveCapacity adds what the capacity policy derives: the Spot label,
// the device-plugin config label of a GPU group that shares its GPUs, and
// the Spot groups' default shutdown grace periods.
func (g *NodeGroup) resolveCapacity() {
	if !g.Cloud() {
		return
	}
	if g.Spot {
		g.NodeLabels[SpotLabel] = "true"
		if g.Kubelet != nil && g.Kubelet.ShutdownGracePeriod.IsZero() && g.Kubelet.ShutdownGracePeriodCriticalPods.IsZero() {
			g.Kubelet.ShutdownGracePeriod = SpotShutdownGracePeriod
			g.Kubelet.ShutdownGracePeriodCriticalPods = SpotShutdownGracePeriodCriticalPods
		}
	}
	if g.SharesGPUs() {
		g.NodeLabels[DevicePluginConfigLabel] = g.DevicePluginConfig()
	}
}

// SharesGPUs reports whether the group's GPUs are shared by the device plugin.
func (g *NodeGroup) SharesGPUs() bool {
	return g.GPU != nil && g.GPU.Sharing != nil && g.GPU.Sharing.TimeSlicing != nil
}

// DevicePluginConfig is the name of the group's entry in the device
// plugin's ConfigMap (and the value of its DevicePluginConfigLabel): the
// group's name, a valid ConfigMap key and label value.
func (g *NodeGroup) DevicePluginConfig() string { return g.Name }

// GPUReplicas is how many nvidia.com/gpu the device plugin advertises per
// physical GPU: the time-slicing replicas, else 1.
func (g *NodeGroup) GPUReplicas() int {
	if g.SharesGPUs() {
		return g.GPU.Sharing.TimeSlicing.Replicas
	}
	return 1
}

// AdvertisedGPUs is the nvidia.com/gpu capacity of a node of the group
// once the device plugin runs: count × replicas (0 without GPUs).
func (g *NodeGroup) AdvertisedGPUs() int {
	if g.GPU == nil {
		return 0
	}
	return g.GPU.Count * g.GPUReplicas()
}

// MaxPods is the group's kubelet maxPods.
func (g *NodeGroup) MaxPods() int {
	if g.Kubelet == nil || g.Kubelet.MaxPods == 0 {
		return DefaultMaxPods
	}
	return g.Kubelet.MaxPods
}

// EvictionHard is the full hard eviction set the group's kubelet runs
// with: the source's signals, and the kubelet's default for every other.
func (g *NodeGroup) EvictionHard() map[string]string {
	out := maps.Clone(DefaultEvictionHard)
	if g.Kubelet != nil {
		maps.Copy(out, g.Kubelet.EvictionHard)
	}
	return out
}

// AutoscalerEvictionHard is the part of EvictionHard the autoscaler reads.
func (g *NodeGroup) AutoscalerEvictionHard() map[string]string {
	all := g.EvictionHard()
	out := make(map[string]string, len(AutoscalerEvictionSignals))
	for _, k := range AutoscalerEvictionSignals {
		out[k] = all[k]
	}
	return out
}
