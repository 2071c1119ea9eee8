package model

import "slices"

// FixedNode is a node outside the MIGs (a control-plane node, an on-prem
// server) as the source declares it: its capacity as its kubelet reports it.
type FixedNode struct {
	CPU       int64 `json:"cpu"`
	MemoryGiB int64 `json:"memoryGiB"`
	// GPUs is the advertised nvidia.com/gpu; nil: the group's default.
	GPUs *int64 `json:"gpus,omitempty"`
}

// DeclaredNode is a declared node outside the MIGs, with what it counts
// towards the autoscaler's caps.
type DeclaredNode struct {
	Name string
	// Group is the onprem group's name, "" for a control-plane node.
	Group     string
	CPU       int64
	MemoryGiB int64
	// GPUType is the group's GPU type ("" for none); GPUs what the node
	// advertises.
	GPUType string
	GPUs    int64
}

// DeclaredNodes are the nodes outside the MIGs the source declares: the
// control plane's, then each onprem group's, by name.
func (s *Source) DeclaredNodes() []DeclaredNode {
	var out []DeclaredNode
	for _, name := range SortedKeys(s.Cluster.ControlPlaneNodes) {
		n := s.Cluster.ControlPlaneNodes[name]
		d := DeclaredNode{Name: name, CPU: n.CPU, MemoryGiB: n.MemoryGiB}
		if n.GPUs != nil {
			d.GPUs = *n.GPUs
		}
		out = append(out, d)
	}
	for _, g := range s.Groups() {
		if g.Kind != KindOnPrem {
			continue
		}
		for _, name := range SortedKeys(g.Nodes) {
			n := g.Nodes[name]
			d := DeclaredNode{Name: name, Group: g.Name, CPU: n.CPU, MemoryGiB: n.MemoryGiB}
			if g.GPU != nil {
				d.GPUType, d.GPUs = g.GPU.Type, int64(g.AdvertisedGPUs())
			}
			if n.GPUs != nil {
				d.GPUs = *n.GPUs
			}
			out = append(out, d)
		}
	}
	return out
}

// OnpremWithoutNodes are the onprem groups that declare no nodes.
func (s *Source) OnpremWithoutNodes() []*NodeGroup {
	var out []*NodeGroup
	for _, g := range s.Groups() {
		if g.Kind == KindOnPrem && len(g.Nodes) == 0 {
			out = append(out, g)
		}
	}
	return out
}

// FixedCapacity is what the declared nodes outside the MIGs count towards
// the autoscaler's cluster-wide caps: nodes, vCPUs and GiB of memory.
// Their GPUs count towards no --gpu-total: the autoscaler counts a Node's
// GPUs under the value of its label cloud.google.com/gke-accelerator and
// not at all without it (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// processors/customresources/gpu_processor.go GetNodeGpuTarget), and
// nodegen puts that label on cloud nodes only (Resolve; users may not set
// it).
type FixedCapacity struct {
	Nodes, CPU, MemoryGiB int64
}

// Fixed sums DeclaredNodes.
func (s *Source) Fixed() FixedCapacity {
	var f FixedCapacity
	for _, n := range s.DeclaredNodes() {
		f.Nodes++
		f.CPU += n.CPU
		f.MemoryGiB += n.MemoryGiB
	}
	return f
}

// DeclaredNodeNames are the names of DeclaredNodes, sorted.
func (s *Source) DeclaredNodeNames() []string {
	var out []string
	for _, n := range s.DeclaredNodes() {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}
