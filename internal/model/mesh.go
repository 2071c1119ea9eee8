package model

import "slices"

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
}

// MeshCluster is one cluster's place in the mesh.
type MeshCluster struct {
	Role            string          `json:"role"`
	Network         string          `json:"network"`
	Primary         string          `json:"primary,omitempty"`
	EastWestGateway EastWestGateway `json:"eastWestGateway"`
}

// EastWestGateway is a cluster's east-west gateway.
type EastWestGateway struct {
	NodeGroup  string         `json:"nodeGroup"`
	Replicas   int            `json:"replicas"`
	Address    string         `json:"address,omitempty"`
	Service    GatewayService `json:"service"`
	ExtraPorts []GatewayPort  `json:"extraPorts"`
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
}

// Istio's fixed east-west gateway ports: the gateway's readiness port, the
// cross-network mTLS port, and istiod's XDS/CA and webhook ports that a
// primary exposes to its remotes.
const (
	MeshPortStatus  = 15021
	MeshPortTLS     = 15443
	MeshPortIstiod  = 15012
	MeshPortWebhook = 15017
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
)

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
