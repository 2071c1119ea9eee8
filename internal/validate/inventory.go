package validate

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// declaredNodes refuses a node declared twice (in the control plane and a
// group, or in two groups): a Node has one name, and both the caps and
// drift would count it twice.
func (c *checker) declaredNodes() {
	seen := map[string]string{}
	for _, n := range c.src.DeclaredNodes() {
		where := "cluster.controlPlaneNodes"
		path := sel("cluster", "controlPlaneNodes", n.Name)
		if n.Group != "" {
			where = "nodeGroups." + n.Group + ".nodes"
			path = sel("nodeGroups", n.Group, "nodes", n.Name)
		}
		if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
			// A Node's name (kubernetes v1.37.2,
			// pkg/apis/core/validation/validation.go ValidateNodeName).
			c.atKey(path, "node name %q is not a Node name: %s", n.Name, strings.Join(errs, "; "))
			continue
		}
		if errs := validation.IsValidLabelValue(n.Name); len(errs) > 0 {
			// The kubelet registers its Node under its hostname (or
			// --hostname-override, which kubeadm sets to the node name) and
			// labels it kubernetes.io/hostname with the same name
			// (kubernetes v1.37.2, cmd/kubelet/app/server.go RunKubelet,
			// pkg/kubelet/kubelet_node_status.go initialNode): a name the
			// label cannot hold is a Node the API server refuses to create.
			c.atKey(path, "node name %q is %d characters: the kubelet labels its Node kubernetes.io/hostname=<node name>, and a label value is at most 63 characters, so the API server would refuse the Node; use a shorter name", n.Name, len(n.Name))
			continue
		}
		if first, ok := seen[n.Name]; ok {
			c.atKey(path, "node %s is already declared in %s: a Node belongs to one group", n.Name, first)
			continue
		}
		seen[n.Name] = where
		if strings.HasPrefix(n.Name, c.src.Cluster.Name+"-") {
			for _, g := range c.src.CloudGroups() {
				if strings.HasPrefix(n.Name, c.src.Cluster.BaseInstanceName(g)+"-") {
					c.atKey(path, "node %s has the name of a VM of cloud group %s (%s-<suffix>): declared nodes are outside the MIGs", n.Name, g.Name, c.src.Cluster.BaseInstanceName(g))
				}
			}
		}
	}
}

// undeclaredOnprem warns, when caps are set, of each onprem group that
// declares no nodes: the autoscaler counts its servers in every cap, and
// nodegen, not knowing them, cannot add them to the rendered caps, so
// they take from the cloud's budget.
func (c *checker) undeclaredOnprem() {
	for _, g := range c.src.OnpremWithoutNodes() {
		c.atKey(sel("nodeGroups", g.Name),
			"warning: onprem group %s declares no nodes, and the autoscaler counts every Node in cluster.autoscaler.caps: its servers take from the cloud's budget; declare them (nodes: {\"<node name>\": {cpu: N, memoryGiB: N}}) so that nodegen adds them to the caps it renders",
			g.Name)
	}
}

// outsideClause ends a message about a cap's room for the cloud groups:
// what the nodes outside the MIGs do to it. The rendered caps add the
// declared ones; undeclared on-prem servers take from the room. Nothing
// for a GPU cap: the autoscaler counts none of their GPUs (they lack the
// label cloud.google.com/gke-accelerator, model.FixedCapacity).
func (c *checker) outsideClause(res capResource) string {
	if strings.HasSuffix(res.what, " GPUs") {
		return ""
	}
	if len(c.src.OnpremWithoutNodes()) > 0 {
		return ", before counting the on-prem nodes the source does not declare"
	}
	if len(c.src.Cluster.ControlPlaneNodes) == 0 {
		return ", before counting the control-plane nodes (declare them in cluster.controlPlaneNodes)"
	}
	return " (the rendered caps add the declared nodes outside the MIGs)"
}
