package validate

import (
	"strings"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// maxPods checks a cloud group's kubelet maxPods against the pods every
// node of the group runs before any workload (model.NodeDaemonPods) and
// against the node's pod range (cluster.nodeCidrMaskSize): below the
// first, the GPU Operator's operands cannot all start and the startup
// taint is never removed; above the second, the pods past the range never
// get an address and stay ContainerCreating.
func (c *checker) maxPods(g *model.NodeGroup, base []cue.Selector) {
	if !g.Cloud() {
		return
	}
	n := g.MaxPods()
	p := join(base, "kubelet", "maxPods")
	daemons := model.NodeDaemonPods(g, c.hostDriver)
	if n < len(daemons)+1 {
		c.at(p, "maxPods %d leaves no room on the node: it runs %d DaemonSet pods before any workload (%s), so at least %d is needed for one workload pod", n, len(daemons), strings.Join(daemons, ", "), len(daemons)+1)
	}
	if mask := c.src.Cluster.NodeCIDRMaskSize; mask > 0 && n > model.PodAddresses(mask) {
		c.at(p, "maxPods %d is more than a node's pod range holds: with cluster.nodeCidrMaskSize %d a node gets %d pod addresses, and the pods past them never start; lower maxPods, or widen the range (a smaller nodeCidrMaskSize, set on the control plane's kube-controller-manager too)", n, mask, model.PodAddresses(mask))
	}
}
