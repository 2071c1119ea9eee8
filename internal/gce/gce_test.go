package gce

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestMachineType(t *testing.T) {
	tests := []struct {
		name     string
		vcpus    int
		mib      int
		series   string
		family   Family
		gpuType  string
		gpuCount int
	}{
		{"n1-standard-8", 8, 30720, "n1", GeneralPurpose, "", 0},
		{"n1-standard-1", 1, 3840, "n1", GeneralPurpose, "", 0},
		{"n1-highmem-96", 96, 638976, "n1", GeneralPurpose, "", 0},
		// n1-highcpu memoryMb as the API reports it (0.9 GB per vCPU, rounded).
		{"n1-highcpu-2", 2, 1843, "n1", GeneralPurpose, "", 0},
		{"n1-highcpu-8", 8, 7373, "n1", GeneralPurpose, "", 0},
		{"n1-highcpu-96", 96, 88474, "n1", GeneralPurpose, "", 0},
		{"e2-standard-2", 2, 8192, "e2", GeneralPurpose, "", 0},
		{"e2-highmem-16", 16, 131072, "e2", GeneralPurpose, "", 0},
		{"e2-highcpu-32", 32, 32768, "e2", GeneralPurpose, "", 0},
		{"e2-medium", 2, 4096, "e2", GeneralPurpose, "", 0},
		{"e2-micro", 2, 1024, "e2", GeneralPurpose, "", 0},
		{"n2-standard-8", 8, 32768, "n2", GeneralPurpose, "", 0},
		{"n2-highmem-128", 128, 884736, "n2", GeneralPurpose, "", 0},
		{"n2d-standard-224", 224, 917504, "n2d", GeneralPurpose, "", 0},
		{"c2-standard-30", 30, 122880, "c2", ComputeOptimized, "", 0},
		{"c3-highcpu-22", 22, 45056, "c3", GeneralPurpose, "", 0},
		{"c3-standard-4-lssd", 4, 16384, "c3", GeneralPurpose, "", 0},
		{"n4-highcpu-80", 80, 163840, "n4", GeneralPurpose, "", 0},
		{"t2d-standard-60", 60, 245760, "t2d", GeneralPurpose, "", 0},
		{"g2-standard-8", 8, 32768, "g2", AcceleratorOptimized, "nvidia-l4", 1},
		{"g2-standard-24", 24, 98304, "g2", AcceleratorOptimized, "nvidia-l4", 2},
		{"g2-standard-32", 32, 131072, "g2", AcceleratorOptimized, "nvidia-l4", 1},
		{"g2-standard-48", 48, 196608, "g2", AcceleratorOptimized, "nvidia-l4", 4},
		{"g2-standard-96", 96, 393216, "g2", AcceleratorOptimized, "nvidia-l4", 8},
		{"a2-highgpu-1g", 12, 87040, "a2", AcceleratorOptimized, "nvidia-tesla-a100", 1},
		{"a2-megagpu-16g", 96, 1392640, "a2", AcceleratorOptimized, "nvidia-tesla-a100", 16},
		{"a2-ultragpu-8g", 96, 1392640, "a2", AcceleratorOptimized, "nvidia-a100-80gb", 8},
		{"a3-highgpu-8g", 208, 1916928, "a3", AcceleratorOptimized, "nvidia-h100-80gb", 8},
		{"a3-megagpu-8g", 208, 1916928, "a3", AcceleratorOptimized, "nvidia-h100-mega-80gb", 8},
		{"a3-ultragpu-8g", 224, 3022848, "a3", AcceleratorOptimized, "nvidia-h200-141gb", 8},
		{"a4-highgpu-8g", 224, 4063232, "a4", AcceleratorOptimized, "nvidia-b200", 8},
		{"g4-standard-48", 48, 184320, "g4", AcceleratorOptimized, "nvidia-rtx-pro-6000", 1},
		{"zones/us-central1-a/machineTypes/n1-standard-8", 8, 30720, "n1", GeneralPurpose, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := MachineType(tt.name)
			if !ok {
				t.Fatalf("MachineType(%q) not found", tt.name)
			}
			if m.VCPUs != tt.vcpus || m.MemoryMiB != tt.mib {
				t.Errorf("shape = %d vCPUs, %d MiB; want %d, %d", m.VCPUs, m.MemoryMiB, tt.vcpus, tt.mib)
			}
			if m.Series != tt.series || m.Family != tt.family {
				t.Errorf("series/family = %s/%s; want %s/%s", m.Series, m.Family, tt.series, tt.family)
			}
			if m.GPUType != tt.gpuType || m.GPUCount != tt.gpuCount {
				t.Errorf("GPUs = %d×%q; want %d×%q", m.GPUCount, m.GPUType, tt.gpuCount, tt.gpuType)
			}
			if got, want := m.AcceleratorOptimized(), tt.family == AcceleratorOptimized; got != want {
				t.Errorf("AcceleratorOptimized() = %v, want %v", got, want)
			}
			if got, want := m.HasBuiltInGPUs(), tt.gpuCount > 0; got != want {
				t.Errorf("HasBuiltInGPUs() = %v, want %v", got, want)
			}
		})
	}
}

func TestMachineTypeCustom(t *testing.T) {
	tests := []struct {
		name       string
		vcpus, mib int
		series     string
		ext, share bool
	}{
		{"custom-4-15360", 4, 15360, "n1", false, false},
		{"custom-1-6656-ext", 1, 6656, "n1", true, false},
		{"n2-custom-8-16384", 8, 16384, "n2", false, false},
		{"n2-custom-8-16384-ext", 8, 16384, "n2", true, false},
		{"n2d-custom-16-65536", 16, 65536, "n2d", false, false},
		{"e2-custom-4-16384", 4, 16384, "e2", false, false},
		{"e2-custom-medium-4096", 2, 4096, "e2", false, true},
		{"e2-custom-small-2048", 2, 2048, "e2", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := MachineType(tt.name)
			if !ok {
				t.Fatalf("MachineType(%q) not parsed", tt.name)
			}
			if !m.Custom || m.VCPUs != tt.vcpus || m.MemoryMiB != tt.mib || m.Series != tt.series ||
				m.ExtendedMemory != tt.ext || m.SharedCore != tt.share || m.Family != GeneralPurpose {
				t.Errorf("got %+v", m)
			}
		})
	}
}

func TestMachineTypeUnknown(t *testing.T) {
	for _, name := range []string{
		"", "n1-standard-3", "n1-standard", "e2-standard-64", "n2-highcpu-128", "n2d-highmem-128",
		"g2-standard-2", "a2-highgpu-3g", "x9-standard-4", "N1-STANDARD-8",
		"custom-", "custom-4", "custom-4-", "custom-0-1024", "custom-04-1024", "custom--4-1024",
		"custom-4-1024-ext-ext", "custom-4-1024-foo", "c2-custom-4-16384", "-custom-4-1024",
		"e2-custom-large-4096", "e2-custom-medium-4096-ext", "n2-custom-8-16384MB",
	} {
		if m, ok := MachineType(name); ok {
			t.Errorf("MachineType(%q) = %+v, want not found", name, m)
		}
	}
}

// Every accelerator-optimized machine type's GPU must be a known built-in
// accelerator, and every predefined shape must be sane.
func TestTablesConsistent(t *testing.T) {
	if len(machines) < 150 {
		t.Errorf("only %d machine types", len(machines))
	}
	for name, m := range machines {
		if m.Name != name || m.VCPUs <= 0 || m.MemoryMiB <= 0 || m.Series == "" || m.Family == "" {
			t.Errorf("bad shape %q: %+v", name, m)
		}
		if !strings.HasPrefix(name, m.Series+"-") && m.Series != "n1" {
			t.Errorf("%s: series %q is not its prefix", name, m.Series)
		}
		if (m.GPUType != "") != m.AcceleratorOptimized() {
			t.Errorf("%s: GPUType %q but family %s", name, m.GPUType, m.Family)
		}
		if m.GPUType != "" {
			a, ok := Accelerator(m.GPUType)
			if !ok || a.Attach != BuiltIn {
				t.Errorf("%s: GPU type %q not a built-in accelerator", name, m.GPUType)
			}
			if (m.GPUCount == 0) != (m.GPUFraction != "") {
				t.Errorf("%s: GPUCount %d with fraction %q", name, m.GPUCount, m.GPUFraction)
			}
		}
	}
	for _, name := range AcceleratorNames() {
		a, _ := Accelerator(name)
		if len(a.AllowedCounts) == 0 || len(a.Series) == 0 || a.Base == "" || a.Model == "" {
			t.Errorf("%s: incomplete %+v", name, a)
		}
		if a.Attach == BuiltIn && len(a.MachineTypes) == 0 {
			t.Errorf("%s: built-in accelerator with no machine types", name)
		}
		if a.VWS != (a.Base != a.Name) || !strings.HasPrefix(a.Name, a.Base) {
			t.Errorf("%s: VWS %v, Base %q", name, a.VWS, a.Base)
		}
		if a.Retired && a.Deprecated {
			t.Errorf("%s: both retired and deprecated", name)
		}
	}
}

func TestAccelerator(t *testing.T) {
	tests := []struct {
		name    string
		attach  Attachment
		series  []string
		counts  []int
		retired bool
	}{
		{"nvidia-tesla-t4", GuestAccelerator, []string{"N1"}, []int{1, 2, 4}, false},
		{"nvidia-tesla-t4-vws", GuestAccelerator, []string{"N1"}, []int{1, 2, 4}, false},
		{"nvidia-tesla-v100", GuestAccelerator, []string{"N1"}, []int{1, 2, 4, 8}, false},
		{"nvidia-tesla-p100", GuestAccelerator, []string{"N1"}, []int{1, 2, 4}, true},
		{"nvidia-tesla-p4", GuestAccelerator, []string{"N1"}, []int{1, 2, 4}, false},
		{"nvidia-tesla-k80", GuestAccelerator, []string{"N1"}, []int{1, 2, 4, 8}, true},
		{"nvidia-l4", BuiltIn, []string{"G2"}, []int{1, 2, 4, 8}, false},
		{"nvidia-l4-vws", BuiltIn, []string{"G2"}, []int{1, 2, 4, 8}, false},
		{"nvidia-tesla-a100", BuiltIn, []string{"A2 Standard"}, []int{1, 2, 4, 8, 16}, false},
		{"nvidia-a100-80gb", BuiltIn, []string{"A2 Ultra"}, []int{1, 2, 4, 8}, false},
		{"nvidia-h100-80gb", BuiltIn, []string{"A3 High", "A3 Edge"}, []int{1, 2, 4, 8}, false},
		{"nvidia-h100-mega-80gb", BuiltIn, []string{"A3 Mega"}, []int{8}, false},
		{"nvidia-h200-141gb", BuiltIn, []string{"A3 Ultra"}, []int{8}, false},
		{"nvidia-b200", BuiltIn, []string{"A4"}, []int{8}, false},
		{"nvidia-rtx-pro-6000", BuiltIn, []string{"G4"}, []int{1, 2, 4, 8}, false},
		{"projects/p/zones/us-east1-b/acceleratorTypes/nvidia-l4", BuiltIn, []string{"G2"}, []int{1, 2, 4, 8}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ok := Accelerator(tt.name)
			if !ok {
				t.Fatalf("Accelerator(%q) not found", tt.name)
			}
			if a.Attach != tt.attach || !slices.Equal(a.Series, tt.series) || !slices.Equal(a.AllowedCounts, tt.counts) || a.Retired != tt.retired {
				t.Errorf("got %+v", a)
			}
		})
	}
	if _, ok := Accelerator("nvidia-tesla-m60"); ok {
		t.Error("nvidia-tesla-m60 found")
	}
	if _, ok := Accelerator(""); ok {
		t.Error(`"" found`)
	}
	// The returned slices are copies.
	a, _ := Accelerator("nvidia-l4")
	a.AllowedCounts[0] = 99
	a.MachineTypes[0] = "x"
	if b, _ := Accelerator("nvidia-l4"); b.AllowedCounts[0] != 1 || b.MachineTypes[0] != "g2-standard-4" {
		t.Errorf("package state changed through returned slices: %+v", b)
	}
	// T4 documented limits.
	t4, _ := Accelerator("nvidia-tesla-t4")
	want := []N1Limit{{1, 48, 312 * 1024}, {2, 48, 312 * 1024}, {4, 96, 624 * 1024}}
	if !slices.Equal(t4.N1Limits, want) || t4.EndOfSupport != "2027-08-01" || !t4.Deprecated {
		t.Errorf("T4 = %+v", t4)
	}
}

func TestCheckGPU(t *testing.T) {
	tests := []struct {
		machine, accel string
		count          int
		want           string // "" for no error, else a substring of the message
	}{
		// N1 attachable.
		{"n1-standard-8", "nvidia-tesla-t4", 1, ""},
		{"n1-standard-8", "nvidia-tesla-t4", 2, ""},
		{"n1-standard-96", "nvidia-tesla-t4", 4, ""},
		{"n1-standard-8", "nvidia-tesla-t4-vws", 4, ""},
		{"n1-highmem-8", "nvidia-tesla-v100", 8, ""},
		{"n1-standard-8", "nvidia-tesla-v100", 1, ""},
		{"n1-standard-16", "nvidia-tesla-v100", 1, "nvidia-tesla-v100 with 1 GPU allows N1 VMs of at most 12 vCPUs and 78 GB memory; n1-standard-16 has 16 vCPUs and 60 GB (use 2 GPUs or a smaller machine type)"},
		{"n1-standard-64", "nvidia-tesla-t4", 1, "(use 4 GPUs or a smaller machine type)"},
		{"n1-highcpu-96", "nvidia-tesla-p4", 2, "has 96 vCPUs and 86.4 GB (use 4 GPUs"},
		{"custom-12-81920", "nvidia-tesla-v100", 1, "at most 12 vCPUs and 78 GB memory; custom-12-81920 has 12 vCPUs and 80 GB"},
		{"custom-12-79872", "nvidia-tesla-v100", 1, ""},
		{"custom-96-655360-ext", "nvidia-tesla-t4", 4, "; use a smaller machine type"},
		{"n1-standard-8", "nvidia-tesla-t4", 3, "nvidia-tesla-t4 allows 1, 2 or 4 GPUs per VM, not 3"},
		{"n1-standard-8", "nvidia-tesla-v100", 16, "nvidia-tesla-v100 allows 1, 2, 4 or 8 GPUs per VM, not 16"},
		{"n1-standard-8", "nvidia-tesla-t4", 0, "count of at least 1, not 0"},
		{"e2-standard-8", "nvidia-tesla-t4", 1, "accelerator nvidia-tesla-t4 attaches to N1 machine types only, not e2-standard-8"},
		{"n2-custom-8-16384", "nvidia-tesla-t4", 1, "attaches to N1 machine types only, not n2-custom-8-16384"},
		{"g2-standard-8", "nvidia-tesla-t4", 1, "not g2-standard-8, which comes with its own nvidia-l4 GPUs; drop the accelerator"},
		{"g1-small", "nvidia-tesla-t4", 1, "N1 shared-core machine type g1-small"},
		// Retired.
		{"n1-standard-8", "nvidia-tesla-k80", 1, "nvidia-tesla-k80 reached end of support and can no longer be used"},
		{"n1-standard-8", "nvidia-tesla-p100", 1, "nvidia-tesla-p100 reached end of support on 2026-09-15"},
		{"n1-standard-8", "nvidia-tesla-p100-vws", 1, "end of support on 2026-09-15"},
		// Built in.
		{"a2-highgpu-1g", "", 0, ""},
		{"a2-highgpu-1g", "nvidia-tesla-a100", 1, ""},
		{"a2-highgpu-1g", "nvidia-tesla-a100", 2, "a2-highgpu-1g comes with 1 nvidia-tesla-a100; count must be 1"},
		{"a2-ultragpu-8g", "nvidia-a100-80gb", 8, ""},
		{"a2-ultragpu-8g", "nvidia-tesla-a100", 8, "a2-ultragpu-8g comes with nvidia-a100-80gb GPUs, not nvidia-tesla-a100"},
		{"a3-megagpu-8g", "nvidia-h100-80gb", 8, "comes with nvidia-h100-mega-80gb GPUs, not nvidia-h100-80gb"},
		{"a3-ultragpu-8g", "nvidia-h200-141gb", 8, ""},
		{"a4-highgpu-8g", "nvidia-b200", 8, ""},
		{"g2-standard-48", "nvidia-l4", 4, ""},
		{"g2-standard-24", "nvidia-l4", 1, "g2-standard-24 comes with 2 nvidia-l4; count must be 2"},
		{"g2-standard-8", "nvidia-l4-vws", 1, ""},
		{"g4-standard-96", "nvidia-rtx-pro-6000-vws", 2, ""},
		{"g4-standard-6", "nvidia-rtx-pro-6000", 1, "fractional (1/8) nvidia-rtx-pro-6000 vGPU"},
		{"n1-standard-8", "nvidia-l4", 1, "accelerator nvidia-l4 is built into G2 machine types (g2-standard-4 … g2-standard-96) and cannot be attached to n1-standard-8"},
		{"e2-standard-8", "nvidia-h100-mega-80gb", 8, "built into A3 Mega machine types (a3-megagpu-8g)"},
		// Nothing requested.
		{"e2-standard-8", "", 0, ""},
		{"n1-standard-8", "", 2, "2 GPUs requested without an accelerator type"},
		// Unknown names.
		{"n1-standard-8", "nvidia-tesla-t5", 1, `unknown accelerator type "nvidia-tesla-t5" (known: `},
	}
	for _, tt := range tests {
		t.Run(tt.machine+"/"+tt.accel, func(t *testing.T) {
			err := checkGPU(t, tt.machine, tt.accel, tt.count)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckGPU(%q, %q, %d) = %v, want nil", tt.machine, tt.accel, tt.count, err)
			case tt.want != "" && err == nil:
				t.Errorf("CheckGPU(%q, %q, %d) = nil, want error containing %q", tt.machine, tt.accel, tt.count, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("CheckGPU(%q, %q, %d) = %q, want it to contain %q", tt.machine, tt.accel, tt.count, err, tt.want)
			}
		})
	}
}

// checkGPU is CheckGPU on the named machine type, which must be known.
func checkGPU(t *testing.T, machineType, acceleratorType string, count int) error {
	t.Helper()
	m, ok := MachineType(machineType)
	if !ok {
		t.Fatalf("unknown machine type %s", machineType)
	}
	return m.CheckGPU(acceleratorType, count)
}

func TestCheckGPUErrorKinds(t *testing.T) {
	if err := checkGPU(t, "n1-standard-8", "amd-mi300", 1); !errors.Is(err, ErrUnknownAccelerator) {
		t.Errorf("unknown accelerator: %v", err)
	}
	if err := checkGPU(t, "n1-standard-8", "nvidia-tesla-k80", 1); !errors.Is(err, ErrRetired) {
		t.Errorf("retired: %v", err)
	}
}

func TestZoneRegion(t *testing.T) {
	tests := map[string]string{
		"us-central1-a":           "us-central1",
		"europe-west4-b":          "europe-west4",
		"northamerica-northeast2": "northamerica",
		"us-central1":             "us",
		"":                        "",
		"nodash":                  "",
	}
	for zone, want := range tests {
		if got := ZoneRegion(zone); got != want {
			t.Errorf("ZoneRegion(%q) = %q, want %q", zone, got, want)
		}
	}
}

// Compute Engine's limits on custom machine types, series by series: the
// vCPU counts, memory in 256 MB steps, per vCPU, and extended memory.
func TestCustomProblems(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"custom-4-15360", ""},
		{"custom-1-6656", ""},
		{"custom-1-1024", ""},
		{"custom-3-6144", "a custom N1 machine type has 1 or an even number up to 96 vCPUs, not 3"},
		{"custom-2-1792", "2 vCPUs take at least 1844 MB of memory (922 MB per vCPU on N1)"},
		{"custom-2-14336", "2 vCPUs take at most 13312 MB of memory (6.5 GB per vCPU on N1); add -ext for extended memory"},
		{"custom-2-14336-ext", ""},
		{"custom-4-15000", "memory 15000 MB is not a multiple of 256 MB"},
		{"n2-custom-8-16384", ""},
		{"n2-custom-34-65536", "a custom N2 machine type has an even number from 2 to 32, or a multiple of 4 from 36 to 128 vCPUs, not 34"},
		{"n2-custom-36-73728", ""},
		{"n2-custom-2-655360-ext", "with extended memory a custom N2 machine type has at most 624 GB, not 640 GB"},
		{"n2d-custom-12-24576", "a custom N2D machine type has 2, 4, 8, 16, 32, 48, 64, 80 or 96 vCPUs, not 12"},
		{"n2d-custom-16-65536", ""},
		{"e2-custom-4-16384", ""},
		{"e2-custom-3-12288", "a custom E2 machine type has an even number from 2 to 32 vCPUs, not 3"},
		{"e2-custom-4-40960", "4 vCPUs take at most 32768 MB of memory (8 GB per vCPU on E2)"},
		{"e2-custom-4-16384-ext", "E2 custom machine types take no extended memory (-ext)"},
		{"e2-custom-medium-4096", ""},
		{"e2-custom-small-8192", "e2-custom-small takes 2 GB to 4 GB of memory, not 8 GB"},
		{"n1-standard-8", ""},
	} {
		m, ok := MachineType(c.name)
		if !ok {
			t.Fatalf("%s: not a machine type", c.name)
		}
		got := strings.Join(m.CustomProblems(), "; ")
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
