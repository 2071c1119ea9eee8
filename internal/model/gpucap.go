package model

// GPU caps as the Cluster Autoscaler counts them. --gpu-total limits, per
// accelerator type (the node label cloud.google.com/gke-accelerator), the
// sum over every node of its GPU count as the GPU custom-resources
// processor reads it: the node's nvidia.com/gpu allocatable, or, while the
// GPUs are not yet reported, its template's (kubernetes/autoscaler tag
// cluster-autoscaler-1.35.0, cluster-autoscaler/resourcequotas/cache.go
// totalNodeResources, processors/customresources/gpu_processor.go
// GetNodeGpuTarget). Both are what the device plugin advertises: with
// time-slicing, count × replicas per node (AdvertisedGPUs). So
// cluster.autoscaler.caps.gpus is in advertised nvidia.com/gpu, not in
// physical GPUs.

// CapGPUs is what one node of the group counts towards the cap of its GPU
// type: AdvertisedGPUs.
func (g *NodeGroup) CapGPUs() int64 { return int64(g.AdvertisedGPUs()) }

// GPUCapNodes is how many nodes of autoscaled group g the cap of its GPU
// type admits once every other cloud group is at its minimum size (before
// the on-prem and control-plane nodes, which count too), and whether the
// cap is below the group's total max (g.MaxNodes()). ok is false when the
// source has no cap for g's GPU type.
func (s *Source) GPUCapNodes(g *NodeGroup) (nodes int, capped, ok bool) {
	caps := s.Cluster.Autoscaler.Caps
	if g.GPU == nil || caps == nil || caps.GPUs[g.GPU.Type] == nil || g.CapGPUs() == 0 {
		return 0, false, false
	}
	left := caps.GPUs[g.GPU.Type].Max
	for _, o := range s.CloudGroups() {
		if o != g && o.GPU != nil && o.GPU.Type == g.GPU.Type {
			left -= o.CapGPUs() * int64(o.MinNodes())
		}
	}
	nodes = int(max(left, 0) / g.CapGPUs())
	if nodes >= g.MaxNodes() {
		return g.MaxNodes(), false, true
	}
	return nodes, true, true
}
