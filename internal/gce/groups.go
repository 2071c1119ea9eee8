package gce

import "github.com/nodegen/nodegen/internal/model"

// HasGPUs says whether a group's VMs have GPUs: attached ones, or a
// machine type's own (whole GPUs built in, or a fraction of one).
func HasGPUs(g *model.NodeGroup) bool {
	if g.GPU != nil {
		return true
	}
	m, ok := MachineType(g.MachineType)
	return ok && (m.HasBuiltInGPUs() || m.GPUFraction != "")
}
