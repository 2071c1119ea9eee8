package k8s

import (
	"fmt"
	"strings"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// CalicoPoolName is the name of the pods' IP pool in both install
// methods.
const CalicoPoolName = "nodegen-pods"

// Calico renders the pod network's Calico objects (cluster.podNetwork)
// into out/calico/: the tigera-operator's Installation, and for a
// manifest install the FelixConfiguration and IPPool, both with the pod
// MTU decided in the model (model.Cluster.PodMTU) and one IP pool that
// encapsulates every pod packet between nodes. It renders nothing without
// a pod network, or when the pod MTU is unknown (vet refuses that source).
//
// The objects are those of tigera-operator v1.43.0 (Calico v3.32.0): the
// Installation CRD (tigera/operator pkg/imports/crds/operator/operator.tigera.io_installations.yaml)
// and Calico's crd.projectcalico.org/v1 FelixConfiguration and IPPool
// (pkg/imports/crds/calico/v1.crd.projectcalico.org/), which the tests
// install in a real API server and dry-run these files against.
func Calico(src *model.Source, files layout.Files) error {
	pn := src.Cluster.PodNetwork
	m := src.Cluster.PodMTU()
	if pn == nil || m == nil || m.Computed == 0 {
		return nil
	}
	header := layout.HashHeader(src.Name)
	derivation := fmt.Sprintf("# The pod MTU %s: the smallest\n# MTU of the paths a pod packet takes, less %s's overhead (nodegen explain).\n", m.Stated(), pn.Encapsulation)

	vxlan, ipip := "Never", "Never"
	bgp := "Disabled" // VXLAN: Felix programs the routes (the Installation CRD's clusterRoutingMode)
	if pn.Encapsulation == model.EncapIPIP {
		ipip, bgp = "Always", "Enabled" // IP in IP's routes come from BIRD, over BGP (tcp/179)
	} else {
		vxlan = "Always"
	}

	installation := map[string]any{
		"apiVersion": "operator.tigera.io/v1",
		"kind":       "Installation",
		"metadata":   map[string]any{"name": "default"},
		"spec": map[string]any{
			"calicoNetwork": map[string]any{
				"bgp": bgp,
				"mtu": m.MTU,
				"ipPools": []any{map[string]any{
					"name":          CalicoPoolName,
					"cidr":          pn.PodCIDR,
					"encapsulation": pn.Encapsulation,
					"natOutgoing":   "Enabled",
				}},
			},
		},
	}
	y, err := yamlout.Marshal(installation)
	if err != nil {
		return err
	}
	files[layout.CalicoOperatorPath] = concat(header,
		"#\n# The tigera-operator's Installation of cluster "+src.Cluster.Name+"'s pod network\n",
		"# (kubectl create -f, before the operator's first reconcile; docs/vpn.md).\n",
		derivation,
		"# One IP pool, "+pn.Encapsulation+" between every pair of nodes, NAT for traffic\n",
		"# leaving the pool (the VPC routes no pod address).\n",
		"---\n", string(y))

	felixMTU := "vxlanMTU"
	if pn.Encapsulation == model.EncapIPIP {
		felixMTU = "ipipMTU"
	}
	felix := map[string]any{
		"apiVersion": "crd.projectcalico.org/v1",
		"kind":       "FelixConfiguration",
		"metadata":   map[string]any{"name": "default"},
		"spec":       map[string]any{felixMTU: m.MTU},
	}
	pool := map[string]any{
		"apiVersion": "crd.projectcalico.org/v1",
		"kind":       "IPPool",
		"metadata":   map[string]any{"name": CalicoPoolName},
		"spec": map[string]any{
			"cidr":        pn.PodCIDR,
			"vxlanMode":   vxlan,
			"ipipMode":    ipip,
			"natOutgoing": true,
		},
	}
	fy, err := yamlout.Marshal(felix)
	if err != nil {
		return err
	}
	py, err := yamlout.Marshal(pool)
	if err != nil {
		return err
	}
	files[layout.CalicoManifestPath] = concat(header,
		"#\n# Cluster "+src.Cluster.Name+"'s pod network for a manifest install of Calico (calico.yaml,\n",
		"# no operator; docs/vpn.md). Apply it with the manifest, and set the\n",
		fmt.Sprintf("# calico-config ConfigMap's veth_mtu to %d too (the pods' interfaces).\n", m.MTU),
		derivation,
		"---\n", string(fy), "---\n", string(py))
	return nil
}

func concat(parts ...string) []byte { return []byte(strings.Join(parts, "")) }
