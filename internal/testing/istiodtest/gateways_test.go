package istiodtest_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/serviceregistry/kube/controller"
	"istio.io/istio/pkg/cluster"
	kubelib "istio.io/istio/pkg/kube"
	"istio.io/istio/pkg/network"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	ngmodel "github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/istiotest"
	"github.com/nodegen/nodegen/internal/testing/meshtest"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// gatewayService renders the official gateway chart with a cluster's
// gateway values and returns its Service, decoded into the Kubernetes type.
func gatewayService(t *testing.T, values []byte) *corev1.Service {
	t.Helper()
	objs := istiotest.Render(t, istiotest.Gateway, ngmodel.EastWestGatewayName, ngmodel.IstioNamespace, istiotest.ValuesFile(t, values))
	o := objs.Find("Service", ngmodel.EastWestGatewayName)
	if o == nil {
		t.Fatal("the gateway chart renders no Service")
	}
	svc := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, svc, true); err != nil {
		t.Fatalf("gateway Service: %v", err)
	}
	return svc
}

// networkGateways runs istiod's Kubernetes service registry for the
// cluster id over the cluster's objects and returns the network gateways
// it computes, once they settle.
func networkGateways(t *testing.T, id string, objs ...runtime.Object) []model.NetworkGateway {
	t.Helper()
	client := kubelib.NewFakeClient(objs...)
	c, _ := controller.NewFakeControllerWithOptions(t, controller.FakeControllerOptions{
		Client:          client,
		ClusterID:       cluster.ID(id),
		SystemNamespace: ngmodel.IstioNamespace,
		DomainSuffix:    "cluster.local",
	})
	var gws []model.NetworkGateway
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if gws = c.NetworkGateways(); len(gws) > 0 {
			break
		}
	}
	return gws
}

func readYAML(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func readTree(t *testing.T, dir string) layout.Files {
	t.Helper()
	files := layout.Files{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func remotePilotAddress(t *testing.T, files layout.Files) string {
	t.Helper()
	var v struct {
		Global struct {
			RemotePilotAddress string `json:"remotePilotAddress"`
		} `json:"global"`
	}
	readYAML(t, files[layout.IstiodValuesPath], &v)
	return v.Global.RemotePilotAddress
}

// lbAddress is the reserved address of the cluster's internal load
// balancer in its Terraform module, as hclparse reads it.
func lbAddress(t *testing.T, files layout.Files) string {
	t.Helper()
	b, ok := files[layout.MeshLBPath]
	if !ok {
		t.Fatalf("no %s", layout.MeshLBPath)
	}
	f, diags := hclparse.NewParser().ParseHCL(b, layout.MeshLBPath)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
		if blk.Type == "resource" && blk.Labels[0] == gce.TFAddress {
			v, diags := blk.Body.Attributes["address"].Expr.Value(nil)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			return v.AsString()
		}
	}
	t.Fatalf("%s: no %s", layout.MeshLBPath, gce.TFAddress)
	return ""
}

// For each network of the shipped mesh example (examples/mesh/out, kept
// equal to its rendering by the golden test), istiod's own registry
// code, fed the gateway Service the official chart renders with the
// committed values, computes one network gateway: on the cluster's
// network, at port 15443, at the address the other cluster uses. For
// cloud-serve that is onprem-gpu's remotePilotAddress and the address of
// the internal load balancer in cloud-serve's Terraform; for onprem-gpu,
// the address the source gives its router.
func TestExampleGatewayAddresses(t *testing.T) {
	root := filepath.Join(testsrc.RepoRoot(), "examples", "mesh")
	l, err := source.Load(filepath.Join(root, "nodegroups"))
	if err != nil {
		t.Fatal(err)
	}
	mesh := l.Fleet.Mesh
	trees := map[string]layout.Files{}
	for _, name := range mesh.Names() {
		trees[name] = readTree(t, filepath.Join(root, "out", name))
	}
	const primary, remote = "cloud-serve", "onprem-gpu"
	uses := map[string]string{
		primary: remotePilotAddress(t, trees[remote]),
		remote:  mesh.Clusters[remote].EastWestGateway.Address,
	}
	if lb := lbAddress(t, trees[primary]); lb != uses[primary] {
		t.Errorf("%s: internal load balancer at %s, %s's remotePilotAddress %s", primary, lb, remote, uses[primary])
	}
	for _, name := range mesh.Names() {
		t.Run(name, func(t *testing.T) {
			files := trees[name]
			var ns corev1.Namespace
			readYAML(t, files[layout.IstioNamespacePath], &ns)
			networkName := ns.Labels[ngmodel.NetworkLabel]
			if networkName == "" || networkName != mesh.Clusters[name].Network {
				t.Fatalf("namespace network %q, source %q", networkName, mesh.Clusters[name].Network)
			}
			svc := gatewayService(t, files[layout.EastWestGatewayValuesPath])
			gws := networkGateways(t, name, &ns, svc)
			want := []model.NetworkGateway{{Network: network.ID(networkName), Cluster: cluster.ID(name), Addr: uses[name], Port: ngmodel.MeshPortTLS}}
			if !slices.EqualFunc(gws, want, sameGateway) {
				t.Errorf("istiod's network gateways of %s: %+v\nwant %+v", name, gws, want)
			}
		})
	}
}

// A gateway Service of type LoadBalancer in a cluster with no controller
// serving it has no address in its status, and istiod computes no
// gateway for its network: what nodegen's gateways were before the
// source named what provides the address. Once a load-balancer controller
// (MetalLB in the test fleet) writes the address into the status, istiod
// finds it.
func TestLoadBalancerNeedsItsController(t *testing.T) {
	f := meshtest.Fleet()
	src := f.Cluster(meshtest.Remote)
	files, err := render.MeshFiles(f, src)
	if err != nil {
		t.Fatal(err)
	}
	svc := gatewayService(t, files[layout.EastWestGatewayValuesPath])
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Spec.ExternalIPs) != 0 {
		t.Fatalf("the remote's gateway Service: type %s, externalIPs %v", svc.Spec.Type, svc.Spec.ExternalIPs)
	}
	if gws := networkGateways(t, meshtest.Remote, svc.DeepCopy()); len(gws) != 0 {
		t.Errorf("a LoadBalancer Service with no address in its status: istiod computes %+v", gws)
	}
	served := svc.DeepCopy()
	served.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: meshtest.RemoteLBAddress}}
	gws := networkGateways(t, meshtest.Remote, served)
	want := []model.NetworkGateway{{Network: network.ID(meshtest.RemoteNetwork), Cluster: cluster.ID(meshtest.Remote), Addr: meshtest.RemoteLBAddress, Port: ngmodel.MeshPortTLS}}
	if !slices.EqualFunc(gws, want, sameGateway) {
		t.Errorf("the address in the status: istiod computes %+v, want %+v", gws, want)
	}
}

// sameGateway compares what reaches a gateway: its network, cluster,
// address and port.
func sameGateway(a, b model.NetworkGateway) bool {
	return a.Network == b.Network && a.Cluster == b.Cluster && a.Addr == b.Addr && a.Port == b.Port
}
