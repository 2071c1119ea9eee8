package docs

import (
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// onpremProviderID writes the docs' section on the providerID of the nodes
// outside the MIGs: why, the command for the nodes that exist, the kubelet
// setting for those that join later.
func (d *docWriter) onpremProviderID() error {
	c := &d.src.Cluster
	d.p("\n## Nodes outside the MIGs: providerID\n\n")
	rel, err := c.AutoscalerRelease()
	affected := err != nil || !rel.Known || rel.FailsWithoutProviderID
	if !c.SetsOnpremProviderID() {
		d.p("`cluster.onpremProviderID` is `none`: nodegen gives the control plane and the on-prem nodes no providerID.")
		if affected {
			d.p(" The Cluster Autoscaler %s fails on a node without one and then scales nothing, up or down.", c.AutoscalerImageTag())
		}
		d.p("\n")
		return nil
	}
	d.p("The Cluster Autoscaler's GCE provider maps every Node to a node group by its `spec.providerID`. Releases up to %s fail on a Node without one (kubeadm gives the control plane and on-prem nodes none) and then scale nothing, up or down (%s; `docs/autoscaler-version.md` in nodegen). ",
		model.NewestAutoscalerRelease(), mdText(model.AutoscalerBugRefs))
	d.p("Every Node outside the MIGs, the control plane included, gets `%s<node name>`: the provider parses it and finds no MIG (no GCE project is `%s`), so the autoscaler leaves the node alone. The node garbage collector only considers providerIDs in project `%s`.\n",
		model.UnmanagedProviderIDPrefix, model.UnmanagedProject, c.GCP.Project)
	d.p("\n`spec.providerID` can be set once, on a Node that has none, and never changed.\n")
	d.p("\n**Nodes that exist**: once, and again after any on-prem node joined without the setting below:\n\n```sh\nbash out/%s%s\n```\n", d.src.Tree, layout.OnpremProviderIDPath)
	d.p("\nIt patches every Node without a providerID that is not in a cloud group; `--dry-run` only prints. A cloud node without one is reported, not patched.\n")
	snippet, err := onpremJoinSnippet()
	if err != nil {
		return err
	}
	d.p("\n**Nodes that join later**: the kubelet writes its `--provider-id` into the Node it creates.")
	var joins []string
	for _, g := range d.src.Groups() {
		if g.Kind == model.KindOnPrem {
			joins = append(joins, code("out/"+d.src.Tree+layout.OnpremJoinPath(g.Name)))
		}
	}
	if len(joins) > 0 {
		d.p(" A new server of an onprem group joins with its group's join script (%s, in the group's section below), whose JoinConfiguration sets it.", strings.Join(joins, ", "))
	}
	d.p(" A control-plane node that joins later, or a server in no onprem group, needs it in the `JoinConfiguration` (or `InitConfiguration`) given to kubeadm, with `%s` the node's name (kubeadm's default is the host name, lower-cased):\n\n```yaml\n%s```\n",
		OnpremNodeNamePlaceholder, snippet)
	return nil
}

// OnpremNodeNamePlaceholder stands for a node's name in the kubelet setting
// out/docs shows for on-prem nodes that join later.
const OnpremNodeNamePlaceholder = "<node-name>"

// onpremNodeRegistration is the part of a kubeadm JoinConfiguration (or
// InitConfiguration, for a control-plane node) that gives an on-prem node
// its providerID when it registers: the kubelet's --provider-id, which it
// writes into the Node it creates.
func onpremNodeRegistration(node string) kubeadm.NodeRegistrationOptions {
	return kubeadm.NodeRegistrationOptions{
		KubeletExtraArgs: []kubeadm.Arg{{Name: "provider-id", Value: model.UnmanagedProviderID(node)}},
	}
}

// onpremJoinSnippet is onpremNodeRegistration with the node name's
// placeholder, as YAML under nodeRegistration: what out/docs shows.
func onpremJoinSnippet() ([]byte, error) {
	r := onpremNodeRegistration(OnpremNodeNamePlaceholder)
	return yaml.Marshal(map[string]any{"nodeRegistration": map[string]any{"kubeletExtraArgs": r.KubeletExtraArgs}})
}
