package rollout

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Which pods a drain evicts. The rules are kubectl drain's, written from
// k8s.io/kubectl v0.37.2 pkg/drain/filters.go (that package needs the
// typed clientset, which this binary does not link), plus the two
// annotations by which a pod asks the Cluster Autoscaler and Karpenter
// not to be disrupted:
//
//   - mirrorPodFilter: a mirror pod (the kubelet's static pod) is left
//     alone; the API cannot evict it.
//   - daemonSetFilter: a running pod whose controller is an apps/v1
//     DaemonSet is left alone (kubectl's --ignore-daemonsets, always on
//     here): the DaemonSet controller would put it back, and the VM's
//     deletion ends it. A finished one is evicted.
//   - localStorageFilter: a running pod with an emptyDir volume is not
//     evicted unless --delete-emptydir-data is given: its data is lost.
//   - pods with data on the node's disks (a hostPath volume, a claim
//     bound to a local PersistentVolume) are not evicted unless
//     --delete-local-volume-data is given: the autoscaler's rule
//     (localdata.go); kubectl drain evicts them.
//   - unreplicatedFilter: a running pod that declares no controller is
//     not evicted unless --force is given: nothing creates it again.
//   - a pod annotated cluster-autoscaler.kubernetes.io/safe-to-evict:
//     "false" (kubernetes/autoscaler cluster-autoscaler-1.35.2,
//     cluster-autoscaler/utils/drain/drain.go) or karpenter.sh/do-not-disrupt:
//     "true" (kubernetes-sigs/karpenter, pkg/apis/v1/labels.go) is not
//     evicted unless --evict-do-not-disrupt is given.
//
// Finished pods (Succeeded, Failed) are always evicted, as kubectl's
// filters let them go. A pod a Job controls is evicted, and named in the
// plan: unless the Job's podFailurePolicy ignores the DisruptionTarget
// condition, its eviction counts as a failure against the Job's
// backoffLimit.

// Annotations by which a pod asks not to be evicted.
const (
	SafeToEvictAnnotation  = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	DoNotDisruptAnnotation = "karpenter.sh/do-not-disrupt"
)

// DrainOptions are the user's explicit permissions to evict what a drain
// leaves alone otherwise, as kubectl drain's flags of the same names.
type DrainOptions struct {
	// Force evicts pods that declare no controller (kubectl's --force).
	Force bool `json:"force,omitempty"`
	// DeleteEmptyDirData evicts pods with emptyDir volumes, whose data
	// goes with them (kubectl's --delete-emptydir-data).
	DeleteEmptyDirData bool `json:"deleteEmptyDirData,omitempty"`
	// EvictDoNotDisrupt evicts pods annotated safe-to-evict "false" or
	// do-not-disrupt "true".
	EvictDoNotDisrupt bool `json:"evictDoNotDisrupt,omitempty"`
	// DeleteLocalVolumeData evicts pods with hostPath volumes or claims
	// bound to local PersistentVolumes, whose data is deleted with the VM
	// (localdata.go).
	DeleteLocalVolumeData bool `json:"deleteLocalVolumeData,omitempty"`
}

// podAction is what a drain does with one pod.
type podAction int

const (
	// podLeft: the drain leaves it (DaemonSet and mirror pods).
	podLeft podAction = iota
	// podEvicted: the drain evicts it.
	podEvicted
	// podHeld: the drain does not evict it without a flag, so the node
	// cannot be drained.
	podHeld
)

// HeldPod is a pod a drain does not evict without a flag.
type HeldPod struct {
	Pod string `json:"pod"` // namespace/name
	// Why it is held, and the flag that would evict it.
	Reason string `json:"reason"`
	Flag   string `json:"flag"`
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// classify says what a drain does with the pod, and for a held pod why.
// The order of the checks is kubectl's (makeFilters): DaemonSet, mirror,
// local storage, no controller; the annotations come last.
func classify(p *corev1.Pod, o DrainOptions, local LocalClaims) (podAction, *HeldPod) {
	id := p.Namespace + "/" + p.Name
	c := metav1.GetControllerOf(p)
	if c != nil && c.Kind == "DaemonSet" && c.APIVersion == "apps/v1" && !finished(p) {
		return podLeft, nil
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return podLeft, nil
	}
	if finished(p) {
		return podEvicted, nil
	}
	var held []HeldPod
	if !o.DeleteEmptyDirData && slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.EmptyDir != nil }) {
		held = append(held, HeldPod{Pod: id, Reason: "emptyDir data", Flag: "--delete-emptydir-data"})
	}
	if !o.DeleteLocalVolumeData {
		if vols := localVolumes(p, local); len(vols) > 0 {
			held = append(held, HeldPod{Pod: id, Reason: "data on the VM's disks, lost with it: " + strings.Join(vols, ", "), Flag: "--delete-local-volume-data"})
		}
	}
	if !o.Force && c == nil {
		held = append(held, HeldPod{Pod: id, Reason: "no controller", Flag: "--force"})
	}
	if !o.EvictDoNotDisrupt {
		if p.Annotations[SafeToEvictAnnotation] == "false" {
			held = append(held, HeldPod{Pod: id, Reason: SafeToEvictAnnotation + ": \"false\"", Flag: "--evict-do-not-disrupt"})
		}
		if p.Annotations[DoNotDisruptAnnotation] == "true" {
			held = append(held, HeldPod{Pod: id, Reason: DoNotDisruptAnnotation + ": \"true\"", Flag: "--evict-do-not-disrupt"})
		}
	}
	if len(held) == 0 {
		return podEvicted, nil
	}
	h := HeldPod{Pod: id}
	var reasons, flags []string
	for _, x := range held {
		reasons = append(reasons, x.Reason)
		if !slices.Contains(flags, x.Flag) {
			flags = append(flags, x.Flag)
		}
	}
	h.Reason, h.Flag = strings.Join(reasons, ", "), strings.Join(flags, " ")
	return podHeld, &h
}

// isJobPod reports whether a Job controls the pod.
func isJobPod(p *corev1.Pod) bool {
	c := metav1.GetControllerOf(p)
	return c != nil && c.Kind == "Job" && strings.HasPrefix(c.APIVersion, "batch/")
}

// evictable are the pods of a node a drain evicts, the pods it holds, and
// the Job pods among the evicted.
func evictable(pods []corev1.Pod, o DrainOptions, local LocalClaims) (evict []corev1.Pod, held []HeldPod, jobs []string) {
	for i := range pods {
		p := &pods[i]
		switch a, h := classify(p, o, local); a {
		case podEvicted:
			evict = append(evict, *p)
			if isJobPod(p) {
				jobs = append(jobs, p.Namespace+"/"+p.Name)
			}
		case podHeld:
			held = append(held, *h)
		}
	}
	return evict, held, jobs
}

// heldText lists held pods for a person.
func heldText(held []HeldPod) string {
	var out []string
	for _, h := range held {
		out = append(out, fmt.Sprintf("%s (%s: %s evicts it)", h.Pod, h.Reason, h.Flag))
	}
	return strings.Join(out, ", ")
}
