package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Local data. A node's VM is deleted with its disks, the boot disk and
// its local SSDs: what a pod keeps there is lost. kubectl drain evicts
// such pods unless they have an emptyDir volume (k8s.io/kubectl v0.37.2,
// pkg/drain/filters.go, localStorageFilter: emptyDir alone, with
// --delete-emptydir-data); the Cluster Autoscaler does not remove a node
// that runs a pod with a hostPath volume or an emptyDir not in memory
// (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// cluster-autoscaler/utils/drain/drain.go, isLocalVolume and
// HasBlockingLocalStorage), and a pod whose PVC is bound to a local
// PersistentVolume cannot be scheduled anywhere else (the PV's node
// affinity), so its scale-down simulation finds no place for it. The
// rollout holds both, as the autoscaler does: a pod with a hostPath
// volume, or with a PVC (or a generic ephemeral volume's PVC) bound to a
// PersistentVolume of type local or hostPath, is not evicted unless
// --delete-local-volume-data is given. A volume the pod names in the
// autoscaler's annotation cluster-autoscaler.kubernetes.io/
// safe-to-evict-local-volumes (a comma-separated list of volume names,
// the same file, getNonBlockingVolumes) does not hold it, as it does not
// hold the autoscaler's scale-down.

// SafeToEvictLocalVolumesAnnotation lists the pod's volumes whose loss
// does not hold its eviction.
const SafeToEvictLocalVolumesAnnotation = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"

// LocalClaims are the PersistentVolumeClaims bound to PersistentVolumes on
// a node's own disks: "namespace/claim" → what the volume is
// ("local PV NAME").
type LocalClaims map[string]string

// VolumeLister lists what LocalClaims reads. *kube.Client is one.
type VolumeLister interface {
	ListPersistentVolumeClaims(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PersistentVolumeClaimList, error)
	ListPersistentVolumes(ctx context.Context, opts metav1.ListOptions) (*corev1.PersistentVolumeList, error)
}

// claimOf is the PVC a volume of the pod uses: its own claim, or the one
// a generic ephemeral volume makes (named pod-volume:
// k8s.io/component-helpers v0.37.2, storage/ephemeral/ephemeral.go,
// VolumeClaimName); "" for another volume.
func claimOf(p *corev1.Pod, v *corev1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		return p.Name + "-" + v.Name
	}
	return ""
}

// ReadLocalClaims reads which claims of the pods are bound to a local or
// hostPath PersistentVolume. Without a pod that uses a claim it reads
// nothing.
func ReadLocalClaims(ctx context.Context, k VolumeLister, pods []corev1.Pod) (LocalClaims, error) {
	uses := false
	for i := range pods {
		for j := range pods[i].Spec.Volumes {
			uses = uses || claimOf(&pods[i], &pods[i].Spec.Volumes[j]) != ""
		}
	}
	if !uses {
		return nil, nil
	}
	pvs, err := k.ListPersistentVolumes(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing persistent volumes (which are on a node's disks): %w", err)
	}
	onNode := map[string]string{}
	for _, pv := range pvs.Items {
		switch {
		case pv.Spec.Local != nil:
			onNode[pv.Name] = "local PV " + pv.Name
		case pv.Spec.HostPath != nil:
			onNode[pv.Name] = "hostPath PV " + pv.Name
		}
	}
	if len(onNode) == 0 {
		return nil, nil
	}
	pvcs, err := k.ListPersistentVolumeClaims(ctx, metav1.NamespaceAll, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing persistent volume claims: %w", err)
	}
	out := LocalClaims{}
	for _, c := range pvcs.Items {
		if what, ok := onNode[c.Spec.VolumeName]; ok {
			out[c.Namespace+"/"+c.Name] = what
		}
	}
	return out, nil
}

// localVolumes says which of the pod's volumes keep data on the node's
// disks and hold it: hostPath volumes, and claims bound to a local or
// hostPath PV, but those the pod's safe-to-evict-local-volumes names.
func localVolumes(p *corev1.Pod, local LocalClaims) []string {
	safe := map[string]bool{}
	for _, n := range strings.Split(p.Annotations[SafeToEvictLocalVolumesAnnotation], ",") {
		safe[strings.TrimSpace(n)] = true
	}
	var out []string
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		if safe[v.Name] {
			continue
		}
		if v.HostPath != nil {
			out = append(out, fmt.Sprintf("hostPath volume %s (%s)", v.Name, v.HostPath.Path))
			continue
		}
		if c := claimOf(p, v); c != "" {
			if what, ok := local[p.Namespace+"/"+c]; ok {
				out = append(out, fmt.Sprintf("volume %s: PVC %s bound to %s", v.Name, c, what))
			}
		}
	}
	slices.Sort(out)
	return out
}
