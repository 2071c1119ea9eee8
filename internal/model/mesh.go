package model

import (
	"fmt"
	"slices"
)

// Fleet is a whole source: the clusters it describes and the Istio mesh
// between them.
type Fleet struct {
	// Clusters in cluster-name order. The one-cluster form has one.
	Clusters []*Source
	// Single is true for the one-cluster form (a top-level cluster and
	// nodeGroups): its out/ paths carry no cluster directory.
	Single bool
	// Mesh is the mesh between the clusters; nil without one.
	Mesh *Mesh
}

// MeshCluster returns src's place in the fleet's mesh, or nil when src
// is in none (or f is nil).
func (f *Fleet) MeshCluster(src *Source) *MeshCluster {
	if f == nil || f.Mesh == nil {
		return nil
	}
	return f.Mesh.Clusters[src.Cluster.Name]
}

// InMesh is MeshCluster, or an error when src is not in the fleet's mesh:
// what a renderer of a mesh cluster's files asks.
func (f *Fleet) InMesh(src *Source) (*MeshCluster, error) {
	mc := f.MeshCluster(src)
	if mc == nil {
		return nil, fmt.Errorf("cluster %q is not in the mesh", src.Cluster.Name)
	}
	return mc, nil
}

// Cluster returns the fleet's cluster named name, or nil.
func (f *Fleet) Cluster(name string) *Source {
	i := slices.IndexFunc(f.Clusters, func(s *Source) bool { return s.Cluster.Name == name })
	if i < 0 {
		return nil
	}
	return f.Clusters[i]
}

// Mesh models.
const (
	MeshPrimaryRemote = "primary-remote"
	MeshMultiPrimary  = "multi-primary"
)

// Mesh cluster roles.
const (
	MeshRolePrimary = "primary"
	MeshRoleRemote  = "remote"
)

// Mesh is the Istio multi-cluster mesh of a fleet.
type Mesh struct {
	ID       string                  `json:"id"`
	Model    string                  `json:"model"`
	Clusters map[string]*MeshCluster `json:"clusters"`
	// IstioVersion pins the Istio release (charts and istioctl) the
	// install steps use; "" leaves it to the operator.
	IstioVersion string `json:"istioVersion,omitempty"`
	// AcceptUnknownIstioVersion turns vet's errors about IstioVersion (a
	// release nodegen's table does not know, one not supported on a
	// cluster's Kubernetes minor) into warnings.
	AcceptUnknownIstioVersion bool `json:"acceptUnknownIstioVersion,omitempty"`
	// Trust is where the mesh's root of trust comes from; nil when the
	// source sets none.
	Trust *MeshTrust `json:"trust,omitempty"`
}

// MeshTrust is where a mesh's root of trust comes from: one of its fields
// is set.
type MeshTrust struct {
	// PluginCA: every cluster's istiod signs with an intermediate CA of
	// its own from one mesh root, given in the istio-system Secret cacerts.
	PluginCA *struct{} `json:"pluginCA,omitempty"`
	// ExternalCA: a CA outside istiod issues every cluster's workload
	// certificates from one root.
	ExternalCA *ExternalCA `json:"externalCA,omitempty"`
}

// ExternalCA names a mesh's external CA.
type ExternalCA struct {
	Name string `json:"name"`
}

// Istio's plugin-CA Secret: its name in istio-system and its keys, the
// files of a cluster's intermediate CA (istio/istio
// security/pkg/pki/ca/ca.go, the cacerts* file names istiod reads).
const (
	CACertsSecret  = "cacerts"
	CACertFile     = "ca-cert.pem"
	CAKeyFile      = "ca-key.pem"
	CARootCertFile = "root-cert.pem"
	CACertChain    = "cert-chain.pem"
)

// CACertsKeys are the keys of the cacerts Secret, in the order Istio's
// guide creates them.
var CACertsKeys = []string{CACertFile, CAKeyFile, CARootCertFile, CACertChain}

// MeshCluster is one cluster's place in the mesh.
type MeshCluster struct {
	Role            string          `json:"role"`
	Network         string          `json:"network"`
	Primary         string          `json:"primary,omitempty"`
	EastWestGateway EastWestGateway `json:"eastWestGateway"`
}

// EastWestGateway is a cluster's east-west gateway.
type EastWestGateway struct {
	NodeGroup      string         `json:"nodeGroup"`
	Replicas       int            `json:"replicas"`
	Address        string         `json:"address,omitempty"`
	ReachedThrough *GatewayReach  `json:"reachedThrough,omitempty"`
	Service        GatewayService `json:"service"`
	ExtraPorts     []GatewayPort  `json:"extraPorts"`
}

// GatewayReach is what provides a gateway's address and carries the other
// clusters' traffic to it: one of its fields is set.
type GatewayReach struct {
	InternalLoadBalancer   *InternalLoadBalancer   `json:"internalLoadBalancer,omitempty"`
	Router                 *GatewayRouter          `json:"router,omitempty"`
	LoadBalancerController *LoadBalancerController `json:"loadBalancerController,omitempty"`
}

// InternalLoadBalancer is a GCP internal passthrough load balancer nodegen
// renders in front of a cloud gateway group.
type InternalLoadBalancer struct {
	SourceRanges []string `json:"sourceRanges,omitempty"`
}

// GatewayRouter is a router delivering a gateway's address to its nodes.
type GatewayRouter struct {
	Name string `json:"name,omitempty"`
}

// LoadBalancerController is a controller in the cluster serving Services
// of type LoadBalancer.
type LoadBalancerController struct {
	Name              string `json:"name"`
	LoadBalancerClass string `json:"loadBalancerClass,omitempty"`
}

// Gateway Service types.
const (
	ServiceLoadBalancer = "LoadBalancer"
	ServiceNodePort     = "NodePort"
	ServiceClusterIP    = "ClusterIP"
)

// ServiceType is the gateway Service's type: the source's, or by default
// LoadBalancer with a load-balancer controller and ClusterIP otherwise
// (the address is then one of the Service's externalIPs).
func (g *EastWestGateway) ServiceType() string {
	switch {
	case g.Service.Type != "":
		return g.Service.Type
	case g.ReachedThrough != nil && g.ReachedThrough.LoadBalancerController != nil:
		return ServiceLoadBalancer
	}
	return ServiceClusterIP
}

// ExternalIPs are the gateway Service's externalIPs: its address, when an
// internal load balancer or a router delivers it to the nodes. kube-proxy
// forwards the address's traffic on every node to the gateway's pods, and
// istiod takes the address as the network's gateway (istio/istio
// pilot/pkg/serviceregistry/kube/conversion.go, ConvertService).
func (g *EastWestGateway) ExternalIPs() []string {
	if r := g.ReachedThrough; r != nil && (r.InternalLoadBalancer != nil || r.Router != nil) && g.Address != "" {
		return []string{g.Address}
	}
	return nil
}

// GatewayService is how an east-west gateway's Service is exposed.
type GatewayService struct {
	Type           string            `json:"type"`
	LoadBalancerIP string            `json:"loadBalancerIP,omitempty"`
	Annotations    map[string]string `json:"annotations"`
}

// GatewayPort is a port opened on an east-west gateway besides Istio's own.
type GatewayPort struct {
	Name       string `json:"name"`
	Port       int    `json:"port"`
	TargetPort int    `json:"targetPort,omitempty"`
	Protocol   string `json:"protocol"`
	// Listener is the Gateway server nodegen renders on the port; Gateway
	// the operator's own Gateway ("namespace/name") serving it instead.
	Listener *PortListener `json:"listener,omitempty"`
	Gateway  string        `json:"gateway,omitempty"`
}

// PortListener is a Gateway server on an extra port.
type PortListener struct {
	Protocol string   `json:"protocol"`
	Hosts    []string `json:"hosts"`
	TLSMode  string   `json:"tlsMode,omitempty"`
}

// Istio's fixed east-west gateway ports: the gateway's readiness port, the
// cross-network mTLS port, and istiod's XDS/CA and webhook ports that a
// primary exposes to its remotes.
const (
	MeshPortStatus  = 15021
	MeshPortTLS     = 15443
	MeshPortIstiod  = 15012
	MeshPortWebhook = 15017
	// MeshHealthPath is the gateway's readiness endpoint on its status port.
	MeshHealthPath = "/healthz/ready"
)

// MeshPorts are the east-west gateway's own Service ports by name, in the
// order Istio's gateway chart lists them.
var MeshPorts = []GatewayPort{
	{Name: "status-port", Port: MeshPortStatus, TargetPort: MeshPortStatus, Protocol: "TCP"},
	{Name: "tls", Port: MeshPortTLS, TargetPort: MeshPortTLS, Protocol: "TCP"},
	{Name: "tls-istiod", Port: MeshPortIstiod, TargetPort: MeshPortIstiod, Protocol: "TCP"},
	{Name: "tls-webhook", Port: MeshPortWebhook, TargetPort: MeshPortWebhook, Protocol: "TCP"},
}

// Well-known Istio names nodegen's mesh artifacts use.
const (
	// IstioNamespace is the namespace of istiod and the east-west gateway.
	IstioNamespace = "istio-system"
	// NetworkLabel is Istio's network label (namespace, gateway Service, pods).
	NetworkLabel = "topology.istio.io/network"
	// ControlPlaneClustersAnnotation names, on a remote's istio-system
	// namespace, the primary whose istiod manages it.
	ControlPlaneClustersAnnotation = "topology.istio.io/controlPlaneClusters"
	// EastWestGatewayName is the gateway's Helm release, Deployment and
	// Service name; EastWestGatewaySelector its istio= label.
	EastWestGatewayName     = "istio-eastwestgateway"
	EastWestGatewaySelector = "eastwestgateway"
	// IstioBaseRelease and IstiodRelease are the Helm releases of the
	// istio/base and istio/istiod charts.
	IstioBaseRelease = "istio-base"
	IstiodRelease    = "istiod"
	// ExtraPortsGatewayName is the Gateway with a server on every extra
	// port the source gives a listener (EastWestGateway.ListenerPorts).
	ExtraPortsGatewayName = "eastwest-extra-ports"
	// IstiodWebhookServicePort is istiod's Service port that targets its
	// webhook port MeshPortWebhook.
	IstiodWebhookServicePort = 443
)

// InjectionPath is the sidecar injector path a remote's webhook calls on
// its primary's istiod: it tells istiod the pod's cluster and network.
func InjectionPath(cluster, network string) string {
	return "/inject/cluster/" + cluster + "/net/" + network
}

// ListenerPorts are the gateway's extra ports the source gives a listener,
// which nodegen's Gateway ExtraPortsGatewayName serves.
func (g *EastWestGateway) ListenerPorts() []GatewayPort {
	var out []GatewayPort
	for _, p := range g.Ports() {
		if p.Listener != nil {
			out = append(out, p)
		}
	}
	return out
}

// Names returns the mesh's cluster names in order.
func (m *Mesh) Names() []string {
	names := make([]string, 0, len(m.Clusters))
	for n := range m.Clusters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Primaries returns the names of the mesh's primaries in order.
func (m *Mesh) Primaries() []string {
	var out []string
	for _, n := range m.Names() {
		if m.Clusters[n].Role == MeshRolePrimary {
			out = append(out, n)
		}
	}
	return out
}

// PrimaryOf returns the primary whose istiod the remote name uses: its
// primary field, or the mesh's only primary. It is "" for a primary, or
// when the remote names none and the mesh has not exactly one primary.
func (m *Mesh) PrimaryOf(name string) string {
	c := m.Clusters[name]
	if c == nil || c.Role != MeshRoleRemote {
		return ""
	}
	if c.Primary != "" {
		return c.Primary
	}
	if p := m.Primaries(); len(p) == 1 {
		return p[0]
	}
	return ""
}

// RemotesOf returns, in order, the remotes that use primary's istiod.
func (m *Mesh) RemotesOf(primary string) []string {
	var out []string
	for _, n := range m.Names() {
		if m.PrimaryOf(n) == primary {
			out = append(out, n)
		}
	}
	return out
}

// RemoteSecretClusters returns the clusters whose API servers the istiod of primary
// reads through a remote secret: its remotes, and in a multi-primary mesh
// every other cluster.
func (m *Mesh) RemoteSecretClusters(primary string) []string {
	if m.Model == MeshMultiPrimary {
		var out []string
		for _, n := range m.Names() {
			if n != primary {
				out = append(out, n)
			}
		}
		return out
	}
	return m.RemotesOf(primary)
}

// LoadBalancerPorts are the TCP ports the gateway's internal load
// balancer forwards: the gateway's ports but the status port, which only
// the health check uses.
func (g *EastWestGateway) LoadBalancerPorts() []int {
	var out []int
	for _, p := range g.Ports() {
		if p.Port != MeshPortStatus && p.Protocol == "TCP" {
			out = append(out, p.Port)
		}
	}
	return out
}

// Ports returns the gateway's Service ports: Istio's own, then the extra
// ones, each with its target port filled in.
func (g *EastWestGateway) Ports() []GatewayPort {
	out := slices.Clone(MeshPorts)
	for _, p := range g.ExtraPorts {
		if p.TargetPort == 0 {
			p.TargetPort = p.Port
		}
		if p.Protocol == "" {
			p.Protocol = "TCP"
		}
		out = append(out, p)
	}
	return out
}

// MeshLBName is a GCP resource name of a cluster's east-west gateway
// load balancer (its address, health check, backend service and
// forwarding rule with what "", its firewall rules with the suffixes
// below): the cluster's name first, like every name nodegen gives GCP
// resources.
func MeshLBName(cluster, what string) string {
	return cluster + "-eastwest-gateway" + what
}

// The suffixes of the load balancer's firewall rules' names.
const (
	MeshLBHealthChecksSuffix = "-health-checks"
	MeshLBClientsSuffix      = "-clients"
)
