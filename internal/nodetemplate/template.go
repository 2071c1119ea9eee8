// Package nodetemplate is the Cluster Autoscaler's view of a node group:
// the node it simulates when it scales a group up from zero, built from the
// group's kube-env as the autoscaler's GCE provider reads it, and the
// capacity facts it derives (kernel and OS reservations, local SSD
// storage, allocatable) from the group's machine shape (model.Shape).
package nodetemplate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
)

const (
	kib = 1024
	mib = 1024 * kib
	gib = 1024 * mib

	// TemplatePods is the pods capacity the GCE provider gives every
	// template node (cloudprovider/gce/templates.go: BuildCapacity), before
	// kube-env extended_resources override it.
	TemplatePods = 110
	// KubeProxyMilliCPU is the CPU request of the static kube-proxy pod
	// the autoscaler puts on every GCE template node
	// (cloudprovider/utils.go: BuildKubeProxy, KubeProxyCpuRequestMillis).
	KubeProxyMilliCPU = 100
	// GKEZoneLabel is the zone label the autoscaler adds to every GCE
	// template node for the PD CSI driver's topology.
	GKEZoneLabel = "topology.gke.io/zone"
)

// TemplateNode builds the node the Cluster Autoscaler simulates when it
// scales one zonal MIG of g up from zero, from the group's kube-env value
// read as the autoscaler reads it (internal/kubeenv) and the group's
// machine shape as the model decided it (g.Shape).
// flagged are the startup-taint keys given to the autoscaler with
// --startup-taint.
//
// As the autoscaler's GCE provider does (cloudprovider/gce/templates.go:
// BuildNodeFromTemplate, BuildCapacity, CalculateAllocatable):
//   - labels: kube-env node_labels, then the generic labels it adds
//     (kubernetes.io/arch and /os, node.kubernetes.io/instance-type,
//     topology.kubernetes.io/zone and /region, topology.gke.io/zone,
//     kubernetes.io/hostname), which win on conflict;
//   - taints: kube-env node_taints without startup taints;
//   - capacity: pods 110; cpu = the machine type's vCPUs; memory = its
//     memory minus the autoscaler's estimate of what the Linux kernel
//     reserves (KernelReserved); nvidia.com/gpu = the group's GPU count
//     (the template's guestAccelerators); ephemeral-storage = the boot disk
//     minus the autoscaler's estimate of the OS partition
//     (OSReservedEphemeralStorage); then kube-env extended_resources, which
//     override;
//   - allocatable: capacity minus kube_reserved (cpu, memory,
//     ephemeral-storage), minus evictionHard memory.available from memory
//     and nodefs.available × capacity from ephemeral-storage. Without
//     kube_reserved the autoscaler sets allocatable = capacity.
//
// The node's name is "<template prefix>template" (the autoscaler appends a
// random number to the instance template's name).
func TemplateNode(c *model.Cluster, g *model.NodeGroup, zone string, kubeEnv []byte, flagged []string) (*corev1.Node, error) {
	t, err := kubeenv.ReadTemplate(kubeEnv)
	if err != nil {
		return nil, fmt.Errorf("kube-env: %w", err)
	}
	cpu, mem, err := g.Shape.Resources()
	if err != nil {
		return nil, err
	}
	capacity := corev1.ResourceList{
		corev1.ResourcePods:   *resource.NewQuantity(TemplatePods, resource.DecimalSI),
		corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem-KernelReserved(mem, t.OS, t.OSDistribution, t.Arch), resource.DecimalSI),
	}
	if g.GPU != nil && strings.HasPrefix(g.GPU.Type, "nvidia-") {
		capacity[model.GPUResource] = *resource.NewQuantity(int64(g.GPU.Count), resource.DecimalSI)
	}
	if t.LocalSSDCount > 0 {
		storage, err := LocalSSDEphemeralStorage(int64(g.LocalSSDCount), t.LocalSSDCount, t.OSDistribution)
		if err != nil {
			return nil, err
		}
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(storage, resource.DecimalSI)
	} else if g.BootDiskSizeGb > 0 && !t.BlockBootDiskEphemeral {
		disk := int64(g.BootDiskSizeGb) * gib
		storage := max(disk-OSReservedEphemeralStorage(disk, t.OSDistribution, t.Arch), 0)
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(storage, resource.DecimalSI)
	}
	for name, v := range t.ExtendedResources {
		if q, err := resource.ParseQuantity(v); err == nil && q.Sign() >= 0 {
			capacity[corev1.ResourceName(name)] = q
		}
	}
	allocatable := capacity.DeepCopy()
	if t.KubeReserved != nil {
		allocatable = Allocatable(capacity, t.KubeReserved, t.EvictionHard)
	}

	name := c.TemplatePrefix(g) + "template"
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[corev1.LabelArchStable] = t.Arch
	labels[corev1.LabelOSStable] = t.OS
	labels[corev1.LabelInstanceTypeStable] = g.MachineType
	labels[corev1.LabelTopologyZone] = zone
	labels[corev1.LabelTopologyRegion] = gce.ZoneRegion(zone)
	labels[GKEZoneLabel] = zone
	labels[corev1.LabelHostname] = name

	var taints []corev1.Taint
	for _, tt := range t.SanitizedTaints(flagged...) {
		taints = append(taints, corev1.Taint{Key: tt.Key, Value: tt.Value, Effect: corev1.TaintEffect(tt.Effect)})
	}
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}, nil
}

// Allocatable subtracts kube_reserved and the hard eviction thresholds from
// capacity as the autoscaler does: reserved cpu, memory and
// ephemeral-storage (other keys, negative or unparsable values ignored);
// evictionHard memory.available from memory (default 100Mi) and
// nodefs.available (a percentage, default 10%) of the ephemeral-storage
// capacity from ephemeral-storage.
func Allocatable(capacity corev1.ResourceList, kubeReserved, evictionHard map[string]string) corev1.ResourceList {
	reserved := corev1.ResourceList{}
	for k, v := range kubeReserved {
		switch corev1.ResourceName(k) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			if q, err := resource.ParseQuantity(v); err == nil && q.Sign() >= 0 {
				reserved[corev1.ResourceName(k)] = q
			}
		}
	}
	evictMem, evictRatio := evictionThresholds(evictionHard)
	out := corev1.ResourceList{}
	for k, v := range capacity {
		q := v.DeepCopy()
		if r, ok := reserved[k]; ok {
			q.Sub(r)
		}
		switch k {
		case corev1.ResourceMemory:
			q = *resource.NewQuantity(q.Value()-evictMem, resource.BinarySI)
		case corev1.ResourceEphemeralStorage:
			q = *resource.NewQuantity(q.Value()-int64(evictRatio*float64(v.Value())), resource.BinarySI)
		}
		out[k] = q
	}
	return out
}

// evictionThresholds reads evictionHard as the autoscaler does
// (gce_reserved.go: ParseEvictionHardOrGetDefault).
func evictionThresholds(m map[string]string) (memBytes int64, ratio float64) {
	memBytes, ratio = 100*mib, 0.1
	if v, ok := m["memory.available"]; ok {
		if q, err := resource.ParseQuantity(v); err == nil {
			if n, ok := q.AsInt64(); ok {
				memBytes = n
			}
		}
	}
	if v, ok := m["nodefs.available"]; ok {
		if num, found := strings.CutSuffix(v, "%"); found && !strings.Contains(num, "%") {
			if f, err := strconv.ParseFloat(num, 64); err == nil && f >= 0 && f <= 100 {
				ratio = f / 100
			}
		}
	}
	return memBytes, ratio
}

// KernelReserved is the Cluster Autoscaler's estimate of the memory the
// Linux kernel keeps from a GCE VM of physical memory mem bytes, which it
// subtracts from the template node's memory capacity
// (cloudprovider/gce/gce_reserved.go: CalculateKernelReserved, CA 1.36):
// mem/64 + 16Mi, + 64Mi above 3Gi (software IO TLB), + 8Mi up to 8Gi, and
// for cos and ubuntu a fitted correction of min(0.175% of mem, 248Mi)
// (+4Mi on ubuntu; ×0.9971 for cos on arm64). Windows: 0.
//
// It is an estimate: a real node's kernel may keep more or less, so a pod
// sized to the last MiB of the template can still miss the real node.
func KernelReserved(mem int64, os, distribution, arch string) int64 {
	if os != "linux" {
		return 0
	}
	r := mem/64 + 16*mib
	if mem > 3*gib {
		r += 64 * mib
	}
	if mem <= 8*gib {
		r += 8 * mib
	}
	correction := int64(math.Min(0.00175*float64(mem), 248*mib))
	switch distribution {
	case "cos":
		r += correction
		if arch == "arm64" {
			r = int64(math.Round(float64(r) * 0.9971))
		}
	case "ubuntu":
		r += correction + 4*mib
	}
	return r
}

// OSReservedEphemeralStorage is the autoscaler's estimate of the part of a
// boot disk of disk bytes that the OS keeps, by image family
// (gce_reserved.go: CalculateOSReservedEphemeralStorage): an OS partition
// proportional to the disk plus a constant, and an over-provisioning
// buffer of 0.1% of the disk up to 100Mi. Unknown families: 0.
func OSReservedEphemeralStorage(disk int64, distribution, arch string) int64 {
	buffer := int64(math.Min(100*mib, math.Ceil(0.001*float64(disk))))
	switch distribution {
	case "cos":
		s := int64(math.Ceil(0.015635*float64(disk))) + int64(math.Ceil(4.148*gib)) + buffer
		if arch == "arm64" {
			s += 65536 * kib
		}
		return s
	case "ubuntu":
		return int64(math.Ceil(0.03083*float64(disk))) + int64(math.Ceil(0.171*gib)) + buffer
	case "windows_ltsc", "windows_sac":
		return int64(math.Ceil(0.1133*gib)) + int64(math.Ceil(0.010*gib))
	}
	return 0
}
