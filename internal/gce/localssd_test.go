package gce

import (
	"slices"
	"testing"
)

// TestLocalSSDCounts: the counts follow the vCPU tiers of Compute Engine's
// "Choose a valid number of Local SSD disks" table.
func TestLocalSSDCounts(t *testing.T) {
	for _, c := range []struct {
		machine string
		want    []int
		known   bool
	}{
		{"n1-standard-8", []int{1, 2, 3, 4, 5, 6, 7, 8, 16, 24}, true},
		{"n2-standard-8", []int{1, 2, 4, 8, 16, 24}, true},
		{"n2-standard-16", []int{2, 4, 8, 16, 24}, true},
		{"n2-standard-32", []int{4, 8, 16, 24}, true},
		{"n2-highmem-64", []int{8, 16, 24}, true},
		{"n2d-standard-32", []int{2, 4, 8, 16, 24}, true},
		{"c2-standard-60", []int{8}, true},
		{"e2-standard-8", nil, true},
		{"e2-medium", nil, true},
		{"n4-standard-8", nil, true},
		{"c3-standard-8", nil, true},
		{"a2-highgpu-1g", []int{1}, true},
		{"a2-highgpu-8g", []int{8}, true},
		{"a2-megagpu-16g", []int{8}, true},
		{"a2-ultragpu-1g", nil, false},
	} {
		m, ok := MachineType(c.machine)
		if !ok {
			t.Fatalf("%s: not in the machine table", c.machine)
		}
		got, known := LocalSSDCounts(m)
		if known != c.known || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v (known %v), want %v (known %v)", c.machine, got, known, c.want, c.known)
		}
	}
}
