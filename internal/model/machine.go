package model

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodegen/nodegen/internal/gce"
)

// Shape is what one VM of a group has, decided once by Resolve from the
// group's machineType and capacity; every package reads it here.
type Shape struct {
	// Machine is the machine type's shape in nodegen's Compute Engine
	// table (gce.MachineType); nil when the table does not know the type
	// (validate reports it at machineType).
	Machine *gce.MachineShape
	// CPU and MemoryBytes are one node's vCPUs and memory: the group's
	// declared capacity when it has one, else Machine's. When neither
	// says, both are zero and Err says why.
	CPU, MemoryBytes int64
	Err              error
}

// Resources returns one node's vCPUs and memory in bytes, or why they are
// not known.
func (s Shape) Resources() (cpu, memBytes int64, err error) {
	return s.CPU, s.MemoryBytes, s.Err
}

// resolveShape looks the group's machine type up in nodegen's table and
// parses its declared capacity: the one place either is read.
func (g *NodeGroup) resolveShape() {
	g.Shape = Shape{}
	if m, ok := gce.MachineType(g.MachineType); ok {
		g.Shape.Machine = &m
	}
	switch c := g.Capacity; {
	case c != nil:
		q, err := resource.ParseQuantity(c.Memory)
		if err != nil {
			g.Shape.Err = fmt.Errorf("capacity.memory %q: %w", c.Memory, err)
			return
		}
		g.Shape.CPU, g.Shape.MemoryBytes = int64(c.CPU), q.Value()
	case g.Shape.Machine != nil:
		g.Shape.CPU, g.Shape.MemoryBytes = int64(g.Shape.Machine.VCPUs), int64(g.Shape.Machine.MemoryMiB)<<20
	default:
		g.Shape.Err = fmt.Errorf("machine type %s is not in nodegen's table; declare its shape in the group: capacity: {cpu: N, memory: \"NGi\"}", g.MachineType)
	}
}

// HasGPUs says whether the group's VMs have GPUs: attached ones, or the
// machine type's own (whole GPUs built in, or a fraction of one).
func (g *NodeGroup) HasGPUs() bool {
	if g.GPU != nil {
		return true
	}
	m := g.Shape.Machine
	return m != nil && (m.HasBuiltInGPUs() || m.GPUFraction != "")
}

// Accelerator is the accelerator type the group's VMs get: its gpu type,
// or the type built into its machine type (the fractional G4 shapes
// included); "" when they get none.
func (g *NodeGroup) Accelerator() string {
	if g.GPU != nil {
		return g.GPU.Type
	}
	if m := g.Shape.Machine; m != nil {
		return m.GPUType
	}
	return ""
}
