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
		if g.Kubelet != nil && !g.Kubelet.ShutdownGracePeriod.IsZero() {
			grace = "the kubelet stops pods within shutdownGracePeriod " + g.Kubelet.ShutdownGracePeriod.String()
		}
		notes = append(notes, fmt.Sprintf("lands on Spot VMs: GCE may preempt them with %s notice (%s)", model.SpotPreemptionNotice, grace))
	}
	if g.SharesGPUs() {
		req := resourcehelper.PodRequests(w.Pod, resourcehelper.PodResourcesOptions{})
		if q, ok := req[model.GPUResource]; ok && !q.IsZero() {
			r := g.GPUReplicas()
			physical := "GPUs"
			if g.GPU.Count == 1 {
				physical = "GPU"
			}
			notes = append(notes, fmt.Sprintf("%s is time-sliced %d ways: a node advertises %d for %d physical %s; the pod's %s share GPUs with other pods, without memory isolation",
				model.GPUResource, r, g.AdvertisedGPUs(), g.GPU.Count, physical, q.String()))
		}
	}
	return notes
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
