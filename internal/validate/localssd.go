package validate

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/model"
)

// localSSDForMachine checks a group's Local SSD count against what its
// machine type takes (gce.LocalSSDCounts: Compute Engine's "Choose a valid
// number of Local SSD disks" table). The instance template would be
// accepted; the MIG's VMs would fail to be created.
func (c *checker) localSSDForMachine(g *model.NodeGroup, p []cue.Selector) {
	m := g.Shape.Machine
	if m == nil {
		return // reported where the machine type is checked
	}
	counts, known := gce.LocalSSDCounts(*m)
	switch {
	case !known || slices.Contains(counts, g.LocalSSDCount):
	case len(counts) == 0:
		c.at(p, "machine type %s cannot attach local SSDs", g.MachineType)
	default:
		c.at(p, "%d local SSDs: machine type %s (%d vCPUs) takes %s (Compute Engine, \"Choose a valid number of Local SSD disks\")", g.LocalSSDCount, g.MachineType, m.VCPUs, orInts(counts))
	}
}

// orInts writes 1, 2 or 4.
func orInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
