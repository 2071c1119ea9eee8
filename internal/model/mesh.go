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
