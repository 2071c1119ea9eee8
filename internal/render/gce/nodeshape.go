package gce

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
)

// kubeletCapacity sets the capacity policy's kubelet settings in the
// patch: the full hard eviction set (the source's signals, the kubelet's
// defaults for the others, since a partial evictionHard disables the
// defaults it leaves out), maxPods and the graceful shutdown periods.
func kubeletCapacity(g *model.NodeGroup, p *kubeadm.KubeletConfigurationPatch) {
	p.EvictionHard = g.EvictionHard()
	p.MaxPods = int32(g.MaxPods())
	if g.Kubelet == nil {
		return
	}
	for _, f := range []struct {
		val model.Duration
		dst **metav1.Duration
	}{
		{g.Kubelet.ShutdownGracePeriod, &p.ShutdownGracePeriod},
		{g.Kubelet.ShutdownGracePeriodCriticalPods, &p.ShutdownGracePeriodCriticalPods},
	} {
		if !f.val.IsZero() {
			*f.dst = &metav1.Duration{Duration: f.val.Duration()}
		}
	}
}

// extendedResources is the group's kube-env extended_resources: the
// template's pods capacity (the GCE provider gives every template 110
// pods and has no max-pods variable, but extended_resources overrides any
// capacity entry, pods included) and, for GPU groups, nvidia.com/gpu as the
// device plugin will advertise it (count × time-slicing replicas).
func extendedResources(g *model.NodeGroup) map[string]string {
	out := map[string]string{"pods": strconv.Itoa(g.MaxPods())}
	if g.GPU != nil {
		out[model.GPUResource] = strconv.Itoa(g.AdvertisedGPUs())
	}
	return out
}

// localSSDVars are the kube-env variables that make the autoscaler count
// the group's local SSDs, not its boot disk, as ephemeral storage.
func localSSDVars(g *model.NodeGroup) []kubeenv.Var {
	if g.LocalSSDCount == 0 {
		return nil
	}
	return []kubeenv.Var{
		{Name: kubeenv.VarLocalSSDCount, Value: strconv.Itoa(g.LocalSSDCount)},
		{Name: kubeenv.VarBlockEphemeralBootDisk, Value: "true"},
	}
}
