package validate

import (
	"strconv"
	"time"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// localSSDCounts are the local SSD counts GCE attaches to the machine
// families that take them one by one (N1; others take a subset), and the
// counts the autoscaler has a measured filesystem overhead for.
var localSSDCounts = map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 16: true, 24: true}

// nodeShape checks the group's capacity policy: Spot, the kubelet's
// graceful shutdown, local SSDs and GPU sharing.
func (c *checker) nodeShape(g *model.NodeGroup, base []cue.Selector) {
	if _, ok := g.Labels[model.SpotLabel]; ok {
		c.atKey(join(base, "labels", model.SpotLabel), "label %q is set by nodegen on Spot groups; remove it and set spot: true", model.SpotLabel)
	}
	if _, ok := g.Labels[model.PreemptibleLabel]; ok {
		c.atKey(join(base, "labels", model.PreemptibleLabel), "label %q makes the autoscaler take the group's nodes for preemptible ones (its GCE price model reads it as it reads %s), and GKE's tooling too; nodegen marks Spot groups with %s: remove it and set spot: true for Spot VMs", model.PreemptibleLabel, model.SpotLabel, model.SpotLabel)
	}
	if _, ok := g.Labels[model.DevicePluginConfigLabel]; ok {
		c.atKey(join(base, "labels", model.DevicePluginConfigLabel), "label %q is set by nodegen to select the group's device plugin config; remove it and set gpu.sharing", model.DevicePluginConfigLabel)
	}
	if g.Spot && g.Name == c.src.Cluster.Autoscaler.NodeGroup {
		c.at(join(base, "spot"), "the autoscaler's own group cannot be Spot: a preemption would stop the autoscaler until GCE has capacity again")
	}
	if k := g.Kubelet; k != nil {
		grace := c.shutdownPeriod(k.ShutdownGracePeriod, join(base, "kubelet", "shutdownGracePeriod"))
		critical := c.shutdownPeriod(k.ShutdownGracePeriodCriticalPods, join(base, "kubelet", "shutdownGracePeriodCriticalPods"))
		switch {
		case critical > grace:
			c.at(join(base, "kubelet", "shutdownGracePeriodCriticalPods"), "%s exceeds shutdownGracePeriod %s: the kubelet refuses it (it is the part of shutdownGracePeriod kept for critical pods)", k.ShutdownGracePeriodCriticalPods, orZero(k.ShutdownGracePeriod))
		case g.Spot && grace > model.SpotPreemptionNotice:
			c.at(join(base, "kubelet", "shutdownGracePeriod"), "%s is longer than GCE's Spot preemption notice (%s): GCE stops the VM after %s whatever the kubelet waits for", k.ShutdownGracePeriod, model.SpotPreemptionNotice, model.SpotPreemptionNotice)
		case g.Spot && grace == 0:
			c.at(join(base, "kubelet", "shutdownGracePeriod"), "a Spot group needs a graceful node shutdown within GCE's %s preemption notice (e.g. %q), or its pods are killed without SIGTERM", model.SpotPreemptionNotice, model.SpotShutdownGracePeriod)
		}
	}
	if n := g.LocalSSDCount; n > 0 {
		p := join(base, "localSsdCount")
		if !localSSDCounts[n] {
			c.at(p, "%d local SSDs: GCE attaches 1 to 8, 16 or 24 (fewer on some machine types)", n)
		} else {
			c.localSSDForMachine(g, p)
		}
	}
	if g.GPU != nil && g.GPU.Sharing != nil && !g.Cloud() {
		c.at(join(base, "gpu", "sharing"), "GPU sharing is rendered into the GPU Operator's device plugin config for cloud groups only; configure an on-prem group's device plugin where its nodes are managed")
	}
}

// shutdownPeriod is a kubelet shutdown period (unset is 0); it reports
// what the kubelet would refuse.
func (c *checker) shutdownPeriod(v model.Duration, p []cue.Selector) time.Duration {
	d := v.Duration()
	if d > 0 && d < time.Second {
		c.at(p, "%s: the kubelet takes zero or at least 1s", v)
	}
	return d
}

func orZero(d model.Duration) string {
	if d.IsZero() {
		return strconv.Quote("0s")
	}
	return d.String()
}
