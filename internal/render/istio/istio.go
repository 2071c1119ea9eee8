// Package istio renders out/istio of a mesh cluster: the values of the
// official Istio charts and the manifests nodegen adds to them.
package istio

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

// The mesh's artifacts of one cluster (layout.IstioDir): Helm values for
// the official Istio charts and the manifests nodegen adds to them.
//
// Helm releases, in install order, all in istio-system:
//
//	istio-base             istio/base     -f istio/base-values.yaml
//	istiod                 istio/istiod   -f istio/istiod-values.yaml
//	istio-eastwestgateway  istio/gateway  -f istio/eastwest-gateway-values.yaml
//
// The east-west gateway's values do not set the gateway chart's
// networkGateway: with it set, the chart renders the Service with its four
// fixed ports and ignores service.ports, so extra ports could only be
// patched in afterwards. The values set what networkGateway sets (the
// network label on the Service and the pods, ISTIO_META_REQUESTED_NETWORK_VIEW)
// and list Istio's four ports and the extra ones in service.ports; a test
// renders the chart both ways and finds the same objects.

// Names of the manifests' Istio objects.
const (
	crossNetworkGatewayName = "cross-network-gateway"
	istiodGatewayName       = "istiod-gateway"
	istiodVirtualService    = "istiod-vs"
	// istiodHost is istiod's Service in the primary.
	istiodHost = "istiod." + model.IstioNamespace + ".svc.cluster.local"
)

// BaseValues renders the values of the istio/base chart: the
// istio-reader ServiceAccount and its RBAC that a remote secret uses
// (kept on explicitly: the mesh depends on it), and on a remote the
// remote profile.
func BaseValues(f *model.Fleet, src *model.Source, header string) ([]byte, error) {
	mc, err := f.InMesh(src)
	if err != nil {
		return nil, err
	}
	v := map[string]any{"global": map[string]any{"enableReaderRBAC": true}}
	if mc.Role == model.MeshRoleRemote {
		v["profile"] = "remote"
	}
	return manifest.MarshalValues(header, v)
}

// IstiodValues renders the values of the istio/istiod chart. Every
// cluster gets the mesh ID, its cluster name and network. A primary of a
// primary-remote mesh with remotes also serves them as their external
// istiod (global.externalIstiod). A remote installs the chart's remote
// profile: no istiod of its own, the injection webhook and the istiod
// Service pointing at its primary's east-west gateway
// (global.remotePilotAddress), the sidecar injector path naming the
// remote's cluster and network.
func IstiodValues(f *model.Fleet, src *model.Source, header string) ([]byte, error) {
	mc, err := f.InMesh(src)
	if err != nil {
		return nil, err
	}
	name := src.Cluster.Name
	global := map[string]any{
		"meshID":       f.Mesh.ID,
		"multiCluster": map[string]any{"clusterName": name},
		"network":      mc.Network,
	}
	v := map[string]any{"global": global}
	switch mc.Role {
	case model.MeshRolePrimary:
		if f.Mesh.Model == model.MeshPrimaryRemote && len(f.Mesh.RemotesOf(name)) > 0 {
			global["externalIstiod"] = true
		}
	case model.MeshRoleRemote:
		primary := f.Mesh.PrimaryOf(name)
		pc := f.Mesh.Clusters[primary]
		if pc == nil || pc.EastWestGateway.Address == "" {
			return nil, fmt.Errorf("remote %q: its primary %q has no east-west gateway address", name, primary)
		}
		v["profile"] = "remote"
		global["remotePilotAddress"] = pc.EastWestGateway.Address
		v["istiodRemote"] = map[string]any{"injectionPath": model.InjectionPath(name, mc.Network)}
	}
	return manifest.MarshalValues(header, v)
}

// eastWestGatewayPlacement is the placement of the east-west gateway's pods:
// the node group's identity label (model.NodeGroup.SelectorLabel), and tolerations for exactly that
// group's taints.
func eastWestGatewayPlacement(src *model.Source, gw *model.EastWestGateway) (map[string]string, []corev1.Toleration, error) {
	g := src.NodeGroups[gw.NodeGroup]
	if g == nil {
		return nil, nil, fmt.Errorf("east-west gateway node group %q is not a node group of cluster %q", gw.NodeGroup, src.Cluster.Name)
	}
	return map[string]string{g.SelectorLabel(): g.Name}, manifest.Tolerations(g.Taints), nil
}

// eastWestGatewayLabels are the gateway's labels: the selector labels the
// cross-network Gateway and istiod's exposure select, and its network.
func eastWestGatewayLabels(network string) map[string]string {
	return map[string]string{
		"app":              model.EastWestGatewayName,
		"istio":            model.EastWestGatewaySelector,
		model.NetworkLabel: network,
	}
}

// EastWestGatewayValues renders the values of the istio/gateway chart for
// the cluster's east-west gateway.
func EastWestGatewayValues(f *model.Fleet, src *model.Source, header string) ([]byte, error) {
	mc, err := f.InMesh(src)
	if err != nil {
		return nil, err
	}
	gw := &mc.EastWestGateway
	nodeSelector, tolerations, err := eastWestGatewayPlacement(src, gw)
	if err != nil {
		return nil, err
	}
	var ports []map[string]any
	for _, p := range gw.Ports() {
		ports = append(ports, map[string]any{"name": p.Name, "port": p.Port, "targetPort": p.TargetPort, "protocol": p.Protocol})
	}
	service := map[string]any{
		"type":        gw.ServiceType(),
		"annotations": nonNil(gw.Service.Annotations),
		"ports":       ports,
	}
	if gw.Service.LoadBalancerIP != "" {
		service["loadBalancerIP"] = gw.Service.LoadBalancerIP
	}
	if ips := gw.ExternalIPs(); len(ips) > 0 {
		service["externalIPs"] = ips
	}
	if r := gw.ReachedThrough; r != nil && r.LoadBalancerController != nil && r.LoadBalancerController.LoadBalancerClass != "" {
		service["loadBalancerClass"] = r.LoadBalancerController.LoadBalancerClass
	}
	v := map[string]any{
		"name":         model.EastWestGatewayName,
		"labels":       eastWestGatewayLabels(mc.Network),
		"env":          map[string]any{"ISTIO_META_REQUESTED_NETWORK_VIEW": mc.Network},
		"replicaCount": gw.Replicas,
		"autoscaling":  map[string]any{"enabled": false},
		"service":      service,
		"nodeSelector": nodeSelector,
		"tolerations":  tolerations,
	}
	if gw.Replicas > 1 {
		v["podDisruptionBudget"] = map[string]any{"minAvailable": 1}
	}
	return manifest.MarshalValues(header, v)
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}

// Istio networking objects, as the networking.istio.io/v1 CRDs define
// them (the fields nodegen sets).
type (
	istioGateway struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            istioGatewaySpec  `json:"spec"`
	}
	istioGatewaySpec struct {
		Selector map[string]string `json:"selector"`
		Servers  []istioServer     `json:"servers"`
	}
	istioServer struct {
		Port  istioPort       `json:"port"`
		TLS   *istioServerTLS `json:"tls,omitempty"`
		Hosts []string        `json:"hosts"`
	}
	istioPort struct {
		Number   int    `json:"number"`
		Name     string `json:"name"`
		Protocol string `json:"protocol"`
	}
	istioServerTLS struct {
		Mode string `json:"mode"`
	}
	istioVirtualService struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            istioVSSpec       `json:"spec"`
	}
	istioVSSpec struct {
		Hosts    []string     `json:"hosts"`
		Gateways []string     `json:"gateways"`
		TLS      []istioTLSVS `json:"tls"`
	}
	istioTLSVS struct {
		Match []istioTLSMatch `json:"match"`
		Route []istioRoute    `json:"route"`
	}
	istioTLSMatch struct {
		Port     int      `json:"port"`
		SNIHosts []string `json:"sniHosts"`
	}
	istioRoute struct {
		Destination istioDestination `json:"destination"`
	}
	istioDestination struct {
		Host string          `json:"host"`
		Port istioPortNumber `json:"port"`
	}
	istioPortNumber struct {
		Number int `json:"number"`
	}
)

// GetObjectKind and DeepCopyObject make the Istio objects runtime.Objects
// for MarshalObjects; nodegen never copies them.
func (g *istioGateway) DeepCopyObject() runtime.Object        { c := *g; return &c }
func (v *istioVirtualService) DeepCopyObject() runtime.Object { c := *v; return &c }

var networkingV1 = metav1.TypeMeta{APIVersion: "networking.istio.io/v1"}

func meshMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: model.IstioNamespace,
		Labels:    map[string]string{"app.kubernetes.io/managed-by": "nodegen"},
	}
}

// namespaceObject is the cluster's istio-system namespace, created
// before the charts are installed: its network label tells istiod the
// network of the cluster's workloads, and on a remote the annotation names
// the primary whose istiod manages it.
func namespaceObject(f *model.Fleet, src *model.Source) (*corev1.Namespace, error) {
	mc, err := f.InMesh(src)
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   model.IstioNamespace,
			Labels: map[string]string{model.NetworkLabel: mc.Network},
		},
	}
	if mc.Role == model.MeshRoleRemote {
		ns.Annotations = map[string]string{model.ControlPlaneClustersAnnotation: f.Mesh.PrimaryOf(src.Cluster.Name)}
	}
	return ns, nil
}

// IstioNamespace renders namespaceObject.
func Namespace(f *model.Fleet, src *model.Source, header string) ([]byte, error) {
	ns, err := namespaceObject(f, src)
	if err != nil {
		return nil, err
	}
	return manifest.MarshalObjects(header, []runtime.Object{ns})
}

// meshObjects are the cluster's Istio objects, applied once the charts
// are installed: the cross-network Gateway on the east-west gateway's port
// 15443, and on a primary with remotes the exposure of istiod (15012,
// 15017) through it.
func meshObjects(f *model.Fleet, src *model.Source) ([]runtime.Object, error) {
	mc, err := f.InMesh(src)
	if err != nil {
		return nil, err
	}
	name := src.Cluster.Name
	selector := map[string]string{"istio": model.EastWestGatewaySelector}
	cross := &istioGateway{TypeMeta: networkingV1, Metadata: meshMeta(crossNetworkGatewayName), Spec: istioGatewaySpec{
		Selector: selector,
		Servers: []istioServer{{
			Port:  istioPort{Number: model.MeshPortTLS, Name: "tls", Protocol: "TLS"},
			TLS:   &istioServerTLS{Mode: "AUTO_PASSTHROUGH"},
			Hosts: []string{"*.local"},
		}},
	}}
	cross.Kind = "Gateway"
	objs := []runtime.Object{cross}
	if mc.Role == model.MeshRolePrimary && f.Mesh.Model == model.MeshPrimaryRemote && len(f.Mesh.RemotesOf(name)) > 0 {
		gw := &istioGateway{TypeMeta: networkingV1, Metadata: meshMeta(istiodGatewayName), Spec: istioGatewaySpec{
			Selector: selector,
			Servers: []istioServer{
				{Port: istioPort{Number: model.MeshPortIstiod, Name: "tls-istiod", Protocol: "TLS"}, TLS: &istioServerTLS{Mode: "PASSTHROUGH"}, Hosts: []string{"*"}},
				{Port: istioPort{Number: model.MeshPortWebhook, Name: "tls-istiodwebhook", Protocol: "TLS"}, TLS: &istioServerTLS{Mode: "PASSTHROUGH"}, Hosts: []string{"*"}},
			},
		}}
		gw.Kind = "Gateway"
		route := func(port, to int) istioTLSVS {
			return istioTLSVS{
				Match: []istioTLSMatch{{Port: port, SNIHosts: []string{"*"}}},
				Route: []istioRoute{{Destination: istioDestination{Host: istiodHost, Port: istioPortNumber{Number: to}}}},
			}
		}
		vs := &istioVirtualService{TypeMeta: networkingV1, Metadata: meshMeta(istiodVirtualService), Spec: istioVSSpec{
			Hosts:    []string{"*"},
			Gateways: []string{istiodGatewayName},
			TLS: []istioTLSVS{
				route(model.MeshPortIstiod, model.MeshPortIstiod),
				route(model.MeshPortWebhook, model.IstiodWebhookServicePort),
			},
		}}
		vs.Kind = "VirtualService"
		objs = append(objs, gw, vs)
	}
	if extra := extraPortsGateway(&mc.EastWestGateway, selector); extra != nil {
		objs = append(objs, extra)
	}
	return objs, nil
}

// Manifests renders meshObjects as a multi-document YAML stream.
func Manifests(f *model.Fleet, src *model.Source, header string) ([]byte, error) {
	objs, err := meshObjects(f, src)
	if err != nil {
		return nil, err
	}
	return manifest.MarshalObjects(header, objs)
}

// extraPortsGateway is the Gateway with a server on each extra port the
// source gives a listener, with its protocol, hosts and TLS mode: without
// a server on a port, the gateway's Envoy has no listener there and drops
// what the Service forwards to it. nil when no extra port has a listener
// (those with a gateway field are served by the operator's own Gateway).
func extraPortsGateway(gw *model.EastWestGateway, selector map[string]string) runtime.Object {
	var servers []istioServer
	for _, p := range gw.Ports() {
		if p.Listener == nil {
			continue
		}
		s := istioServer{
			Port:  istioPort{Number: p.Port, Name: p.Name, Protocol: p.Listener.Protocol},
			Hosts: slices.Clone(p.Listener.Hosts),
		}
		if p.Listener.TLSMode != "" {
			s.TLS = &istioServerTLS{Mode: p.Listener.TLSMode}
		}
		servers = append(servers, s)
	}
	if len(servers) == 0 {
		return nil
	}
	g := &istioGateway{TypeMeta: networkingV1, Metadata: meshMeta(model.ExtraPortsGatewayName), Spec: istioGatewaySpec{Selector: selector, Servers: servers}}
	g.Kind = "Gateway"
	return g
}
