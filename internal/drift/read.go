// Package drift compares the real world with a nodegen source: the Nodes
// of a cluster (kubectl get nodes -o json, or live through client-go;
// compared by package nodecheck) and the MIGs' instance templates (gcloud
// compute instance-templates describe --format=json) against the groups'
// labels, taints, GPUs and rendered kube-env and startup script.
package drift

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodecheck"
)

// ReadNodes reads the output of `kubectl get nodes -o json` (or -o yaml):
// a v1 List of Nodes, a NodeList, or a single Node. Fields this version of
// k8s.io/api does not know (from a newer server) are ignored.
func ReadNodes(file string, data []byte) ([]corev1.Node, error) {
	j, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	var head struct {
		metav1.TypeMeta
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(j, &head); err != nil {
		return nil, fmt.Errorf("%s: not kubectl output: %v", file, err)
	}
	decode := func(what string, raw []byte) (corev1.Node, error) {
		var n corev1.Node
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &n); err != nil {
			return n, fmt.Errorf("%s: %s: %v", file, what, err)
		}
		if n.Kind != "" && (n.Kind != "Node" || n.APIVersion != "v1") {
			return n, fmt.Errorf("%s: %s is a %s %s, not a v1 Node", file, what, n.APIVersion, n.Kind)
		}
		return n, nil
	}
	switch {
	case head.APIVersion == "v1" && (head.Kind == "List" || head.Kind == "NodeList"):
		nodes := make([]corev1.Node, 0, len(head.Items))
		for i, raw := range head.Items {
			n, err := decode(fmt.Sprintf("items[%d]", i), raw)
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, n)
		}
		return nodes, nil
	case head.APIVersion == "v1" && head.Kind == "Node":
		n, err := decode("the document", j)
		if err != nil {
			return nil, err
		}
		return []corev1.Node{n}, nil
	}
	return nil, fmt.Errorf("%s: want the output of kubectl get nodes -o json (a v1 List or NodeList, or a Node), got apiVersion %q kind %q", file, head.APIVersion, head.Kind)
}

// listPageSize is how many nodes ListNodes asks for at a time.
var listPageSize int64 = 500

// NodeLister lists a cluster's nodes: all that drift asks of its API.
// *kube.Client is one.
type NodeLister interface {
	ListNodes(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error)
}

// ListNodes lists every node of a cluster, page by page.
func ListNodes(ctx context.Context, nodes NodeLister) ([]corev1.Node, error) {
	var out []corev1.Node
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		l, err := nodes.ListNodes(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// CheckNodesOf lists the nodes of a live cluster and compares them with
// the source: ListNodes, then the same CheckNodes the --nodes file goes
// through.
func CheckNodesOf(ctx context.Context, src *model.Source, nodes NodeLister, opts nodecheck.Options) (results []nodecheck.NodeResult, unmanaged []string, err error) {
	list, err := ListNodes(ctx, nodes)
	if err != nil {
		return nil, nil, err
	}
	results, unmanaged = nodecheck.Check(src, list, opts)
	return results, unmanaged, nil
}
