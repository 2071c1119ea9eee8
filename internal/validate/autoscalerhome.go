package validate

import (
	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// The autoscaler's node group is the one cloud group whose pods reach the
// GCE metadata server, and so the autoscaler's node's service account (the
// cluster's Compute rights and the join secret's renewal). nodegen renders
// onto it only the jobs that need those rights: the Cluster Autoscaler,
// the join-token renewer, the node garbage collector and the node CSR
// approver. The other workloads it renders are placed by group: the taint
// remover and the GPU Operator's operands on GPU groups (the autoscaler's
// group may have no GPU: autoscalerGroup), and a mesh's east-west gateway
// on the group its cluster names, which notOnAutoscalerHome refuses.

// notOnAutoscalerHome reports, at p, a rendered workload named what that
// would run on the autoscaler's group g.
func (c *checker) notOnAutoscalerHome(src *model.Source, g *model.NodeGroup, what string, p []cue.Selector) {
	if g.Name != src.Cluster.Autoscaler.NodeGroup {
		return
	}
	c.at(p, "node group %q is the autoscaler's (cluster.autoscaler.nodeGroup): its pods reach the GCE metadata server and the cluster's Compute and join-secret rights, so nothing but the autoscaler and nodegen's jobs may run there; place the %s on another group", g.Name, what)
}
