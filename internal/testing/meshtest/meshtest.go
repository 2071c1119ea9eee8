// Package meshtest builds, in Go, the fleets the mesh tests render: no
// test of the mesh reads a source directory.
package meshtest

import (
	"github.com/nodegen/nodegen/internal/model"
)

// Names in Fleet.
const (
	MeshID          = "mesh-hybrid"
	Primary         = "cloud"
	Remote          = "gpu"
	PrimaryNetwork  = "net-cloud"
	RemoteNetwork   = "net-onprem"
	PrimaryGateway  = "edge"    // gce-static, min 2, tainted
	RemoteGateway   = "gateway" // onprem
	PrimaryAddress  = "203.0.113.10"
	RemoteLBAddress = "192.0.2.40"
)

// Fleet returns a two-cluster primary-remote fleet on two networks:
// "cloud" (primary) with its east-west gateway on a tainted gce-static
// group next to an autoscaled group, and "gpu" (remote) with its gateway
// on an on-prem group, an internal load balancer with a fixed address and
// two extra ports. Every call returns a new fleet the caller may edit.
func Fleet() *model.Fleet {
	cloud := &model.Source{
		Name:    "fleet",
		Cluster: model.Cluster{Name: Primary},
		NodeGroups: map[string]*model.NodeGroup{
			PrimaryGateway: {
				Name: PrimaryGateway, Kind: model.KindGCEStatic, Min: 2, Max: 2,
				Zones:  []string{"us-central1-a", "us-central1-b"},
				Labels: map[string]string{"example.com/role": "edge"},
				Taints: []model.Taint{{Key: "example.com/edge", Value: "true", Effect: "NoSchedule"}},
			},
			"cpu-burst": {Name: "cpu-burst", Kind: model.KindGCE, Min: 0, Max: 10},
		},
	}
	gpu := &model.Source{
		Name:    "fleet",
		Cluster: model.Cluster{Name: Remote},
		NodeGroups: map[string]*model.NodeGroup{
			RemoteGateway: {
				Name: RemoteGateway, Kind: model.KindOnPrem, Min: 2, Max: 2,
				Taints: []model.Taint{
					{Key: "example.com/dedicated", Value: "gateway", Effect: "NoSchedule"},
					{Key: "example.com/drain", Value: "", Effect: "NoExecute"},
				},
			},
			"onprem-gpu": {
				Name: "onprem-gpu", Kind: model.KindOnPrem, Min: 4, Max: 4,
				GPU:    &model.GPU{Type: "nvidia-h100-80gb", Count: 8},
				Taints: []model.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}},
			},
		},
	}
	cloud.Resolve()
	gpu.Resolve()
	return &model.Fleet{
		Clusters: []*model.Source{cloud, gpu},
		Mesh: &model.Mesh{
			ID:    MeshID,
			Model: model.MeshPrimaryRemote,
			Clusters: map[string]*model.MeshCluster{
				Primary: {
					Role: model.MeshRolePrimary, Network: PrimaryNetwork,
					EastWestGateway: model.EastWestGateway{
						NodeGroup: PrimaryGateway, Replicas: 2, Address: PrimaryAddress,
						ReachedThrough: &model.GatewayReach{InternalLoadBalancer: &model.InternalLoadBalancer{}},
						Service:        model.GatewayService{Annotations: map[string]string{}},
					},
				},
				Remote: {
					Role: model.MeshRoleRemote, Network: RemoteNetwork, Primary: Primary,
					EastWestGateway: model.EastWestGateway{
						NodeGroup: RemoteGateway, Replicas: 3,
						ReachedThrough: &model.GatewayReach{LoadBalancerController: &model.LoadBalancerController{Name: "MetalLB"}},
						Service: model.GatewayService{
							LoadBalancerIP: RemoteLBAddress,
							Annotations:    map[string]string{"metallb.universe.tf/address-pool": "mesh"},
						},
						ExtraPorts: []model.GatewayPort{
							{Name: "tcp-nats", Port: 4222, Protocol: "TCP", Listener: &model.PortListener{Protocol: "TCP", Hosts: []string{"*"}}},
							{Name: "grpc-results", Port: 8443, TargetPort: 9443, Protocol: "TCP", Listener: &model.PortListener{Protocol: "TLS", TLSMode: "PASSTHROUGH", Hosts: []string{"results.example.com"}}},
						},
					},
				},
			},
		},
	}
}

// MultiPrimary returns Fleet turned into a multi-primary mesh: both
// clusters primaries, each with its own istiod.
func MultiPrimary() *model.Fleet {
	f := Fleet()
	f.Mesh.Model = model.MeshMultiPrimary
	f.Mesh.Trust = &model.MeshTrust{PluginCA: &struct{}{}}
	r := f.Mesh.Clusters[Remote]
	r.Role, r.Primary = model.MeshRolePrimary, ""
	return f
}
