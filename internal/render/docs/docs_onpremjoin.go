package docs

import (
	"strings"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// onpremJoinTokenTTL is how long the kubeadm token the docs create for
// one on-prem join stays valid.
const onpremJoinTokenTTL = "30m"

// onpremJoin writes how a new server of the onprem group g joins: its
// group's join script, copied to it and run there as root with the
// Node's name and a kubeadm token on standard input.
func (d *docWriter) onpremJoin(g *model.NodeGroup) {
	c := &d.src.Cluster
	script := "out/" + d.src.Tree + layout.OnpremJoinPath(g.Name)
	nodes := model.SortedKeys(g.Nodes)
	node, which := g.Name+"-1", "any Node name, a DNS subdomain: the group declares no nodes"
	if len(nodes) > 0 {
		node, which = nodes[0], "one of the group's declared nodes, "+codeList(nodes)
	}
	d.p("\n**A new server** joins with %s, copied to it and run there as root with the Node's name (%s) and a bootstrap token on standard input (or in `--token-file FILE`; never on the command line). The script writes the group's JoinConfiguration to a temporary file of mode 0600, runs `kubeadm join --config` on it and removes it; `--dry-run` prints the configuration instead, the token's secret redacted. ",
		code(script), which)
	d.p("The Node registers with the group's taints")
	if c.SetsOnpremProviderID() {
		d.p(", the providerID `%s<node name>` (see the providerID section)", model.UnmanagedProviderIDPrefix)
	}
	d.p(" and the group's labels that a kubelet may set on its own Node. NodeRestriction refuses a kubelet the `node-restriction.kubernetes.io/` prefix and most `kubernetes.io` and `k8s.io` keys: ")
	var restricted []string
	for _, k := range model.SortedKeys(g.NodeLabels) {
		if !model.KubeletMaySetLabel(k) {
			restricted = append(restricted, code(k))
		}
	}
	after := "`kubectl label`"
	if len(nodes) > 0 {
		after = code("out/" + d.src.Tree + layout.OnpremLabelNodesPath)
	}
	if len(restricted) > 0 {
		d.p("%s gives the Node the group's %s once it has joined.", after, strings.Join(restricted, ", "))
	} else {
		d.p("%s would give such labels once the Node has joined; this group has none.", after)
	}
	d.p(" Here the token is one of kubeadm's own (its default group, whose nodes' certificates kube-controller-manager approves), made on a control-plane node for this one join and valid for %s:\n\n", onpremJoinTokenTTL)
	// A Node name is a DNS subdomain and the paths are made of group and
	// cluster names (RFC 1035 labels): no character in them is special to
	// the shell.
	d.p("```sh\nnode=%s     # the Node's name\nserver=\"${node}\" # the server's ssh address\nscp %s \"${server}:\"\n", node, script)
	d.p("ssh \"${%s:?set it to a control-plane node you can ssh to}\" sudo kubeadm token create --ttl %s --description nodegen-onprem-join |\n  ssh \"${server}\" sudo bash %s \"${node}\"\n```\n",
		Day0ControlPlaneHostVar, onpremJoinTokenTTL, g.Name+".sh")
}
