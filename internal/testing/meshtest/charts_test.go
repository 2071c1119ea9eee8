package meshtest_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/istiotest"
	"github.com/nodegen/nodegen/internal/testing/meshtest"
)

// rendered is one cluster's nodegen files and the official charts rendered
// with nodegen's values.
type rendered struct {
	src                   *model.Source
	files                 layout.Files
	base, istiod, gateway istiotest.Objects
}

func renderCluster(t *testing.T, f *model.Fleet, src *model.Source) rendered {
	t.Helper()
	files, err := render.MeshFiles(f, src)
	if err != nil {
		t.Fatal(err)
	}
	values := func(path string) map[string]any {
		b, ok := files[path]
		if !ok {
			t.Fatalf("cluster %s: no %s", src.Cluster.Name, path)
		}
		return istiotest.ValuesFile(t, b)
	}
	return rendered{
		src:     src,
		files:   files,
		base:    istiotest.Render(t, istiotest.Base, model.IstioBaseRelease, model.IstioNamespace, values(layout.IstioBaseValuesPath)),
		istiod:  istiotest.Render(t, istiotest.Istiod, model.IstiodRelease, model.IstioNamespace, values(layout.IstiodValuesPath)),
		gateway: istiotest.Render(t, istiotest.Gateway, model.EastWestGatewayName, model.IstioNamespace, values(layout.EastWestGatewayValuesPath)),
	}
}

// as converts a rendered object into its typed form.
func as[T any](t *testing.T, o *istiotest.Object, what string) *T {
	t.Helper()
	if o == nil {
		t.Fatalf("%s: not rendered", what)
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return out
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

// injectorValues returns the chart values istiod's sidecar injector
// renders sidecars with (the "values" key of istio-sidecar-injector, or the
// values ConfigMap on a remote, which has no injector of its own).
func chartValues(t *testing.T, objs istiotest.Objects, configMap, key string) map[string]any {
	t.Helper()
	cm := as[corev1.ConfigMap](t, objs.Find("ConfigMap", configMap), "ConfigMap "+configMap)
	var v map[string]any
	if err := json.Unmarshal([]byte(cm.Data[key]), &v); err != nil {
		t.Fatalf("ConfigMap %s %s: %v", configMap, key, err)
	}
	return v
}

func dig(v map[string]any, path ...string) any {
	var cur any = v
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// The official charts, rendered with nodegen's values for every cluster
// of the fleet, carry the mesh ID, the cluster's name and network, the
// remote's link to its primary, the gateway's ports and its placement.
func TestChartsCarryTheMesh(t *testing.T) {
	for name, f := range map[string]*model.Fleet{"primary-remote": meshtest.Fleet(), "multi-primary": meshtest.MultiPrimary()} {
		for _, src := range f.Clusters {
			t.Run(name+"/"+src.Cluster.Name, func(t *testing.T) {
				r := renderCluster(t, f, src)
				mc := f.Mesh.Clusters[src.Cluster.Name]
				checkIstiod(t, f, r, mc)
				checkGateway(t, r, mc)
				checkReaderRBAC(t, r)
			})
		}
	}
}

func checkIstiod(t *testing.T, f *model.Fleet, r rendered, mc *model.MeshCluster) {
	t.Helper()
	name := r.src.Cluster.Name
	v := chartValues(t, r.istiod, "values", "original-values")
	for path, want := range map[string]any{
		"global.meshID":                   f.Mesh.ID,
		"global.multiCluster.clusterName": name,
		"global.network":                  mc.Network,
	} {
		if got := dig(v, strings.Split(path, ".")...); got != want {
			t.Errorf("istiod values %s = %v, want %v", path, got, want)
		}
	}
	if mc.Role == model.MeshRolePrimary {
		d := as[appsv1.Deployment](t, r.istiod.Find("Deployment", "istiod"), "Deployment istiod")
		env := envOf(d.Spec.Template.Spec.Containers[0])
		if env["CLUSTER_ID"] != name {
			t.Errorf("istiod CLUSTER_ID = %q, want %q", env["CLUSTER_ID"], name)
		}
		wantExternal := f.Mesh.Model == model.MeshPrimaryRemote && len(f.Mesh.RemotesOf(name)) > 0
		if got := env["EXTERNAL_ISTIOD"] == "true"; got != wantExternal {
			t.Errorf("istiod EXTERNAL_ISTIOD set = %v, want %v", got, wantExternal)
		}
		cm := as[corev1.ConfigMap](t, r.istiod.Find("ConfigMap", "istio"), "ConfigMap istio")
		var mesh struct {
			DefaultConfig struct {
				MeshID string `json:"meshId"`
			} `json:"defaultConfig"`
		}
		if err := yaml.Unmarshal([]byte(cm.Data["mesh"]), &mesh); err != nil {
			t.Fatal(err)
		}
		if mesh.DefaultConfig.MeshID != f.Mesh.ID {
			t.Errorf("mesh config meshId = %q, want %q", mesh.DefaultConfig.MeshID, f.Mesh.ID)
		}
		inj := chartValues(t, r.istiod, "istio-sidecar-injector", "values")
		if got := dig(inj, "global", "network"); got != mc.Network {
			t.Errorf("sidecar injector network = %v, want %s", got, mc.Network)
		}
		// istiod's Service has the ports the exposure VirtualService routes to.
		svc := as[corev1.Service](t, r.istiod.Find("Service", "istiod"), "Service istiod")
		ports := map[int32]int32{}
		for _, p := range svc.Spec.Ports {
			ports[p.Port] = p.TargetPort.IntVal
		}
		if tp, ok := ports[model.MeshPortIstiod]; !ok || (tp != 0 && tp != model.MeshPortIstiod) || ports[model.IstiodWebhookServicePort] != model.MeshPortWebhook {
			t.Errorf("istiod Service ports %v: want 15012 and 443→15017, which the exposure VirtualService routes to", ports)
		}
		return
	}
	// A remote runs no istiod: its istiod Service and EndpointSlice point
	// at the primary's east-west gateway, and its injection webhook calls
	// the primary's istiod with the remote's cluster and network.
	if r.istiod.Find("Deployment", "istiod") != nil {
		t.Error("remote renders an istiod Deployment")
	}
	primary := f.Mesh.Clusters[f.Mesh.PrimaryOf(name)]
	es := as[discoveryv1.EndpointSlice](t, r.istiod.Find("EndpointSlice", "istiod"), "EndpointSlice istiod")
	if len(es.Endpoints) != 1 || !slices.Equal(es.Endpoints[0].Addresses, []string{primary.EastWestGateway.Address}) {
		t.Errorf("istiod EndpointSlice endpoints %+v, want the primary's gateway %s", es.Endpoints, primary.EastWestGateway.Address)
	}
	if r.istiod.Find("Service", "istiod") == nil {
		t.Error("remote renders no istiod Service")
	}
	mwc := as[admissionregistrationv1.MutatingWebhookConfiguration](t, r.istiod.OfKind("MutatingWebhookConfiguration").Find("MutatingWebhookConfiguration", "istio-sidecar-injector"), "MutatingWebhookConfiguration")
	want := model.InjectionPath(name, mc.Network)
	for _, w := range mwc.Webhooks {
		if w.ClientConfig.Service == nil || w.ClientConfig.Service.Path == nil || *w.ClientConfig.Service.Path != want {
			t.Errorf("webhook %s calls %+v, want path %s", w.Name, w.ClientConfig.Service, want)
		}
	}
}

func checkGateway(t *testing.T, r rendered, mc *model.MeshCluster) {
	t.Helper()
	gw := &mc.EastWestGateway
	d := as[appsv1.Deployment](t, r.gateway.Find("Deployment", model.EastWestGatewayName), "gateway Deployment")
	if d.Spec.Replicas == nil || int(*d.Spec.Replicas) != gw.Replicas {
		t.Errorf("gateway replicas = %v, want %d", d.Spec.Replicas, gw.Replicas)
	}
	if r.gateway.Find("HorizontalPodAutoscaler", model.EastWestGatewayName) != nil {
		t.Error("gateway has an HPA: its replicas would not be the source's")
	}
	if (r.gateway.Find("PodDisruptionBudget", model.EastWestGatewayName) != nil) != (gw.Replicas > 1) {
		t.Errorf("gateway PodDisruptionBudget rendered = %v with %d replicas", !(gw.Replicas > 1), gw.Replicas)
	}
	pod := d.Spec.Template
	for k, v := range map[string]string{"istio": model.EastWestGatewaySelector, model.NetworkLabel: mc.Network} {
		if pod.Labels[k] != v {
			t.Errorf("gateway pod label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if got := envOf(pod.Spec.Containers[0])["ISTIO_META_REQUESTED_NETWORK_VIEW"]; got != mc.Network {
		t.Errorf("gateway ISTIO_META_REQUESTED_NETWORK_VIEW = %q, want %q", got, mc.Network)
	}

	svc := as[corev1.Service](t, r.gateway.Find("Service", model.EastWestGatewayName), "gateway Service")
	if svc.Labels[model.NetworkLabel] != mc.Network {
		t.Errorf("gateway Service network label = %q, want %q", svc.Labels[model.NetworkLabel], mc.Network)
	}
	if string(svc.Spec.Type) != gw.ServiceType() || svc.Spec.LoadBalancerIP != gw.Service.LoadBalancerIP || !slices.Equal(svc.Spec.ExternalIPs, gw.ExternalIPs()) {
		t.Errorf("gateway Service type %s IP %q externalIPs %v, want %s %q %v", svc.Spec.Type, svc.Spec.LoadBalancerIP, svc.Spec.ExternalIPs, gw.ServiceType(), gw.Service.LoadBalancerIP, gw.ExternalIPs())
	}
	// An internal load balancer's or a router's address is the Service's
	// externalIPs entry; a load-balancer controller's Service has none.
	if r := gw.ReachedThrough; r != nil && (r.InternalLoadBalancer != nil || r.Router != nil) && !slices.Equal(svc.Spec.ExternalIPs, []string{gw.Address}) {
		t.Errorf("gateway Service externalIPs %v, want [%s]", svc.Spec.ExternalIPs, gw.Address)
	}
	for k, v := range gw.Service.Annotations {
		if svc.Annotations[k] != v {
			t.Errorf("gateway Service annotation %s = %q, want %q", k, svc.Annotations[k], v)
		}
	}
	var got []string
	for _, p := range svc.Spec.Ports {
		got = append(got, fmt.Sprintf("%s %d→%d/%s", p.Name, p.Port, p.TargetPort.IntVal, p.Protocol))
	}
	var want []string
	for _, p := range model.MeshPorts {
		want = append(want, fmt.Sprintf("%s %d→%d/%s", p.Name, p.Port, p.Port, p.Protocol))
	}
	for _, p := range gw.ExtraPorts {
		tp := p.TargetPort
		if tp == 0 {
			tp = p.Port
		}
		want = append(want, fmt.Sprintf("%s %d→%d/%s", p.Name, p.Port, tp, p.Protocol))
	}
	if !slices.Equal(got, want) {
		t.Errorf("gateway Service ports\n got %v\nwant %v", got, want)
	}
	if !maps.Equal(svc.Spec.Selector, map[string]string{"app": model.EastWestGatewayName, "istio": model.EastWestGatewaySelector}) {
		t.Errorf("gateway Service selector %v", svc.Spec.Selector)
	}

	// Placement, as the scheduler decides it: the gateway's pods fit the
	// nodes of its group and no other group's.
	for _, g := range r.src.Groups() {
		node := &corev1.Node{}
		node.Name = g.Name + "-0"
		node.Labels = maps.Clone(g.NodeLabels)
		if g.Cloud() {
			maps.Copy(node.Labels, model.VerifiedLabels(g)) // the approver's, once it checked the VM
		}
		for _, tn := range g.Taints {
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: tn.Key, Value: tn.Value, Effect: corev1.TaintEffect(tn.Effect)})
		}
		ok, why := schedulable(&pod.Spec, node)
		if want := g.Name == gw.NodeGroup; ok != want {
			t.Errorf("gateway pod on a node of group %s: schedulable = %v (%s), want %v", g.Name, ok, why, want)
		}
	}
}

// schedulable reports whether a pod with spec could land on node: its
// required node affinity and nodeSelector match, and it tolerates every
// NoSchedule/NoExecute taint (component-helpers, as the scheduler does).
func schedulable(spec *corev1.PodSpec, node *corev1.Node) (bool, string) {
	pod := &corev1.Pod{Spec: *spec}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		return false, fmt.Sprintf("selector does not match (err %v)", err)
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	if untolerated {
		return false, "untolerated taint " + taint.ToString()
	}
	return true, ""
}

// The istio-reader ServiceAccount, which `istioctl create-remote-secret`
// issues a token for, and its ClusterRole binding come from the charts in
// every cluster.
func checkReaderRBAC(t *testing.T, r rendered) {
	t.Helper()
	const sa = "istio-reader-service-account"
	if r.base.Find("ServiceAccount", sa) == nil {
		t.Errorf("base chart renders no ServiceAccount %s", sa)
	}
	crb := as[rbacv1.ClusterRoleBinding](t, r.istiod.Find("ClusterRoleBinding", "istio-reader-clusterrole-istio-system"), "reader ClusterRoleBinding")
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != sa || crb.Subjects[0].Namespace != model.IstioNamespace {
		t.Errorf("reader binding subjects %+v, want %s/%s", crb.Subjects, model.IstioNamespace, sa)
	}
}

// nodegen's gateway values render what the chart's networkGateway renders
// (the Service's four ports and network label, the pods' network label
// and requested network view), plus the extra ports networkGateway would
// drop.
func TestGatewayValuesMatchNetworkGateway(t *testing.T) {
	f := meshtest.Fleet()
	mc := f.Mesh.Clusters[meshtest.Remote]
	extra := mc.EastWestGateway.ExtraPorts
	mc.EastWestGateway.ExtraPorts = nil
	ours := renderCluster(t, f, f.Cluster(meshtest.Remote)).gateway
	ref := istiotest.Render(t, istiotest.Gateway, model.EastWestGatewayName, model.IstioNamespace, map[string]any{
		"name":           model.EastWestGatewayName,
		"labels":         map[string]any{"istio": model.EastWestGatewaySelector},
		"networkGateway": mc.Network,
	})
	s1 := as[corev1.Service](t, ours.Find("Service", model.EastWestGatewayName), "ours")
	s2 := as[corev1.Service](t, ref.Find("Service", model.EastWestGatewayName), "networkGateway")
	if fmt.Sprint(s1.Spec.Ports) != fmt.Sprint(s2.Spec.Ports) || !maps.Equal(s1.Spec.Selector, s2.Spec.Selector) ||
		s1.Labels[model.NetworkLabel] != s2.Labels[model.NetworkLabel] {
		t.Errorf("Service differs from networkGateway's:\n ours %v %v %v\n ref  %v %v %v", s1.Spec.Ports, s1.Spec.Selector, s1.Labels, s2.Spec.Ports, s2.Spec.Selector, s2.Labels)
	}
	d1 := as[appsv1.Deployment](t, ours.Find("Deployment", model.EastWestGatewayName), "ours")
	d2 := as[appsv1.Deployment](t, ref.Find("Deployment", model.EastWestGatewayName), "networkGateway")
	if !maps.Equal(d1.Spec.Template.Labels, d2.Spec.Template.Labels) || !maps.Equal(d1.Spec.Selector.MatchLabels, d2.Spec.Selector.MatchLabels) {
		t.Errorf("pod labels differ:\n ours %v\n ref  %v", d1.Spec.Template.Labels, d2.Spec.Template.Labels)
	}
	if e1, e2 := envOf(d1.Spec.Template.Spec.Containers[0]), envOf(d2.Spec.Template.Spec.Containers[0]); !maps.Equal(e1, e2) {
		t.Errorf("env differs:\n ours %v\n ref  %v", e1, e2)
	}
	// With networkGateway set, service.ports (and so any extra port) is
	// ignored: the reason nodegen does not set it.
	withExtra := istiotest.Render(t, istiotest.Gateway, model.EastWestGatewayName, model.IstioNamespace, map[string]any{
		"networkGateway": mc.Network,
		"service":        map[string]any{"ports": []any{map[string]any{"name": extra[0].Name, "port": extra[0].Port}}},
	})
	s3 := as[corev1.Service](t, withExtra.Find("Service", model.EastWestGatewayName), "networkGateway with service.ports")
	if len(s3.Spec.Ports) != len(model.MeshPorts) {
		t.Errorf("networkGateway with service.ports rendered %d ports; the chart no longer drops service.ports, nodegen could set networkGateway", len(s3.Spec.Ports))
	}
}
