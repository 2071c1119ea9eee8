package explain

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodegen/nodegen/internal/model"
)

// capacityNotes are what the capacity policy adds to a group a workload
// fits: that its pods would run on Spot VMs, and that the nvidia.com/gpu it
// requests there is a time slice of a shared GPU.
func capacityNotes(g *model.NodeGroup, w *Workload) []string {
	var notes []string
	if g.Spot {
		grace := "no graceful shutdown"
		if g.Kubelet != nil && g.Kubelet.ShutdownGracePeriod != "" {
			grace = "the kubelet stops pods within shutdownGracePeriod " + g.Kubelet.ShutdownGracePeriod
		}
		notes = append(notes, fmt.Sprintf("lands on Spot VMs: GCE may preempt them with %s notice (%s)", model.SpotPreemptionNotice, grace))
	}
	if g.SharesGPUs() {
		req := resourcehelper.PodRequests(w.Pod, resourcehelper.PodResourcesOptions{})
		if q, ok := req[model.GPUResource]; ok && !q.IsZero() {
			r := g.GPUReplicas()
			notes = append(notes, fmt.Sprintf("%s is time-sliced %d ways: a node advertises %d for %d physical GPU(s); the pod's %s share GPUs with other pods, without memory isolation",
				model.GPUResource, r, g.AdvertisedGPUs(), g.GPU.Count, q.String()))
		}
	}
	return notes
}

// localSSDOverheadKiB is the autoscaler's measured filesystem overhead of
// ephemeral storage on N local SSDs, by OS distribution and N
// (cloudprovider/gce/gce_reserved.go,
// ephemeralStorageOnLocalSSDFilesystemOverheadInKiBByOSAndDiskCount).
var localSSDOverheadKiB = map[string]map[int64]int64{
	"cos":    {1: 7289472, 2: 13725224, 3: 20031312, 4: 26332924, 5: 32634536, 6: 38946604, 7: 45254008, 8: 51556096, 16: 52837800, 24: 78686620},
	"ubuntu": {1: 7219840, 2: 13651496, 3: 19953488, 4: 26255100, 5: 32556712, 6: 38860588, 7: 45163896, 8: 51465984, 16: 52747688, 24: 78601704},
}

// LocalSSDEphemeralStorage is the template's ephemeral-storage capacity
// on local SSDs as the autoscaler computes it: an error when the template
// has fewer local SSDs than ephemeral_storage_local_ssd_count (no template
// then), else count × 375 GiB less the overhead measured for the next
// measured disk count (1-8, 16, 24); no overhead for other distributions.
func LocalSSDEphemeralStorage(attached, count int64, distribution string) (int64, error) {
	if attached < count {
		return 0, fmt.Errorf("actual local SSD count is lower than ephemeral_storage_local_ssd_count")
	}
	measured := int64(24)
	switch {
	case count <= 8:
		measured = count
	case count <= 16:
		measured = 16
	}
	storage := count * model.LocalSSDSizeGiB * gib
	return max(storage-localSSDOverheadKiB[distribution][measured]*kib, 0), nil
}

// podCountReason is the scheduler's pod-count check (NodeResourcesFit
// "Too many pods"): the pods a new node already runs (kube-proxy and the
// DaemonSets it admits, the workload's own DaemonSet aside) plus this one
// may not exceed the template's pods allocatable, the group's maxPods.
func podCountReason(w *Workload, t *Template) (Reason, bool) {
	running := 0
	for _, f := range t.Fresh {
		if f.ds != w {
			running++
		}
	}
	alloc := t.Node.Status.Allocatable[corev1.ResourcePods]
	if int64(running+1) <= alloc.Value() {
		return Reason{}, false
	}
	free := max(alloc.Value()-int64(running), 0)
	return Reason{
		Kind:        ReasonResource,
		Message:     fmt.Sprintf("too many pods: a new node allows %d pods (maxPods) and already runs %d", alloc.Value(), running),
		Resource:    string(corev1.ResourcePods),
		Requested:   "1",
		Free:        strconv.FormatInt(free, 10),
		Allocatable: alloc.String(),
	}, true
}
