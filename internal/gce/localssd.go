package gce

import "slices"

// The Local SSD counts Compute Engine attaches, by machine series and
// vCPU count, for the series where the count is chosen when the VM is
// created (Compute Engine documentation, "About Local SSD disks", section
// "Choose a valid number of Local SSD disks",
// cloud.google.com/compute/docs/disks/local-ssd). The third-generation
// series (C3, C3D, Z3, A3) come with a fixed number in their -lssd or GPU
// machine types and take none on top.

// ssdTier is the counts for machine types of up to maxVCPUs vCPUs.
type ssdTier struct {
	maxVCPUs int
	counts   []int
}

var localSSDTiers = map[string][]ssdTier{
	"n1": {{96, []int{1, 2, 3, 4, 5, 6, 7, 8, 16, 24}}},
	"n2": {
		{10, []int{1, 2, 4, 8, 16, 24}},
		{20, []int{2, 4, 8, 16, 24}},
		{40, []int{4, 8, 16, 24}},
		{80, []int{8, 16, 24}},
		{128, []int{16, 24}},
	},
	"n2d": {
		{16, []int{1, 2, 4, 8, 16, 24}},
		{48, []int{2, 4, 8, 16, 24}},
		{80, []int{4, 8, 16, 24}},
		{224, []int{8, 16, 24}},
	},
	"c2": {
		{8, []int{1, 2, 4, 8}},
		{16, []int{2, 4, 8}},
		{30, []int{4, 8}},
		{60, []int{8}},
	},
	"c2d": {
		{16, []int{1, 2, 4, 8}},
		{32, []int{2, 4, 8}},
		{56, []int{4, 8}},
		{112, []int{8}},
	},
}

// noLocalSSDSeries take no Local SSD disks at all, or only the fixed
// number their machine type comes with.
var noLocalSSDSeries = []string{"e2", "t2a", "t2d", "n4", "n4a", "n4d", "c4", "c4a", "c4d", "c3", "c3d", "z3", "a3", "a4", "a4x", "h3", "m4", "x4"}

// a2FixedLocalSSDs are the A2 Standard machine types' Local SSD counts:
// one number each ("Choose a valid number of Local SSD disks", the A2
// Standard rows: a2-highgpu-1g 1, -2g 2, -4g 4, -8g 8, a2-megagpu-16g 8).
var a2FixedLocalSSDs = map[string]int{"a2-highgpu-1g": 1, "a2-highgpu-2g": 2, "a2-highgpu-4g": 4, "a2-highgpu-8g": 8, "a2-megagpu-16g": 8}

// LocalSSDCounts returns the numbers of Local SSD disks machine type m
// can be created with, and known false when nodegen's tables do not say
// (then only GCE's overall limits are checked). An empty list means none.
func LocalSSDCounts(m MachineShape) (counts []int, known bool) {
	if m.SharedCore || slices.Contains(noLocalSSDSeries, m.Series) {
		return nil, true
	}
	if n, ok := a2FixedLocalSSDs[m.Name]; ok {
		return []int{n}, true
	}
	tiers, ok := localSSDTiers[m.Series]
	if !ok {
		return nil, false
	}
	for _, t := range tiers {
		if m.VCPUs <= t.maxVCPUs {
			return t.counts, true
		}
	}
	return nil, true // more vCPUs than the series offers with Local SSD
}
