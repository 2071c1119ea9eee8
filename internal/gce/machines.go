package gce

import (
	"math"
	"strconv"
	"strings"
)

// Family is a Compute Engine machine family.
type Family string

// Machine families as Compute Engine names them.
const (
	GeneralPurpose       Family = "general-purpose"
	ComputeOptimized     Family = "compute-optimized"
	AcceleratorOptimized Family = "accelerator-optimized"
)

// MachineShape is what a machine type gives a VM.
//
// MemoryMiB is the API's memoryMb. Compute Engine documentation writes
// memory in "GB" but means GiB: n1-standard-8 is documented as 30 GB and
// the API reports memoryMb 30720 (30 × 1024).
type MachineShape struct {
	Name   string // machine type name, e.g. "n2-standard-8"
	Series string // machine series prefix, e.g. "n2", "n1", "a3"
	Family Family

	VCPUs     int // guestCpus; 2 for the E2 shared-core types
	MemoryMiB int // memoryMb

	SharedCore     bool // f1-micro, g1-small, e2-micro/small/medium and e2 shared-core custom types
	Custom         bool // custom-…, n2-custom-…, n2d-custom-…, e2-custom-…
	ExtendedMemory bool // custom type with the -ext suffix

	// Accelerator-optimized machine types come with their GPUs. GPUType is
	// the accelerator type name the GPUs have (as in guestAccelerators) and
	// GPUCount how many the machine type has; both are zero values for
	// machine types without built-in GPUs.
	GPUType  string
	GPUCount int
	// GPUFraction is set (e.g. "1/8") for the fractional vGPU G4 shapes,
	// whose GPUCount is 0: they have part of one GPU.
	GPUFraction string

	// BareMetal marks bare metal machine types (no hypervisor).
	BareMetal bool
}

// AcceleratorOptimized reports whether the machine type belongs to the
// accelerator-optimized family, whose GPUs come with the machine type and
// are not listed by the caller.
func (m MachineShape) AcceleratorOptimized() bool { return m.Family == AcceleratorOptimized }

// HasBuiltInGPUs reports whether the machine type comes with whole GPUs.
func (m MachineShape) HasBuiltInGPUs() bool { return m.GPUType != "" && m.GPUCount > 0 }

// MachineType returns the shape of a predefined or custom machine type.
// name may be a bare name ("n1-standard-8") or a resource path ending in
// one ("zones/us-central1-a/machineTypes/n1-standard-8").
func MachineType(name string) (MachineShape, bool) {
	name = lastSegment(name)
	if m, ok := machines[name]; ok {
		return m, true
	}
	return parseCustom(name)
}

func lastSegment(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

const gib = 1024 // MiB per GiB ("GB" in Compute Engine docs and the API's description field)

// predefined is one class of predefined machine types whose memory is a
// fixed amount per vCPU.
type predefined struct {
	prefix     string // machine type name up to the vCPU count, e.g. "n1-standard"
	series     string
	family     Family
	gibPerVCPU float64
	sizes      []int // vCPU counts that exist
	suffix     string
}

// Predefined machine types whose memory follows a per-vCPU rule.
//
// Read 2026-11-29. Sources, in order of authority:
//
//   - Compute Engine API machineTypes.list output for zone europe-west1-b
//     (guestCpus, memoryMb), captured around 2020 in a public repository: the
//     e2, n1 and c2 entries below, n2 up to 80 vCPUs and n2d (except
//     n2d-standard-80/96, past the part read) match it, including the
//     rounding of n1-highcpu (0.9 GB per vCPU): 1843, 3686, 7373, 14746,
//     29491, 58982, 88474 MiB — round(vCPUs × 921.6).
//   - cloud.google.com/compute/docs/general-purpose-machines: only the page's
//     opening could be read (it lists N4, N2, N2D, N1, C3, C3D, E2 and Tau T2D
//     as general-purpose series — so C3 is general-purpose, not
//     compute-optimized); its tables were not reachable.
//   - Cyclenerd/google-cloud-pricing-cost-calculator build/gcp.yml (commit
//     dac31281, 2026-08-20), a hand-kept table of cpu/ram per machine type:
//     the only source here for n2-*-96/128, n2-highmem-128 (864 GB, not 1024),
//     n4-* and t2d-*. UNCONFIRMED against a Google page.
//   - GKE cluster-autoscaler machine-family table (Google LLC, 2026, public
//     copy): confirms the c3 standard/highmem/highcpu shapes below.
//
// Not included: *-metal, c3d, c4*, n4a/n4d, m*, z3, h3, t2a, -lssd variants
// other than c3-standard-*-lssd.
var predefinedClasses = []predefined{
	{prefix: "e2-standard", series: "e2", family: GeneralPurpose, gibPerVCPU: 4, sizes: []int{2, 4, 8, 16, 32}},
	{prefix: "e2-highmem", series: "e2", family: GeneralPurpose, gibPerVCPU: 8, sizes: []int{2, 4, 8, 16}},
	{prefix: "e2-highcpu", series: "e2", family: GeneralPurpose, gibPerVCPU: 1, sizes: []int{2, 4, 8, 16, 32}},

	{prefix: "n1-standard", series: "n1", family: GeneralPurpose, gibPerVCPU: 3.75, sizes: []int{1, 2, 4, 8, 16, 32, 64, 96}},
	{prefix: "n1-highmem", series: "n1", family: GeneralPurpose, gibPerVCPU: 6.5, sizes: []int{2, 4, 8, 16, 32, 64, 96}},
	{prefix: "n1-highcpu", series: "n1", family: GeneralPurpose, gibPerVCPU: 0.9, sizes: []int{2, 4, 8, 16, 32, 64, 96}},

	{prefix: "n2-standard", series: "n2", family: GeneralPurpose, gibPerVCPU: 4, sizes: []int{2, 4, 8, 16, 32, 48, 64, 80, 96, 128}},
	{prefix: "n2-highmem", series: "n2", family: GeneralPurpose, gibPerVCPU: 8, sizes: []int{2, 4, 8, 16, 32, 48, 64, 80, 96}}, // 128: see machineExceptions
	{prefix: "n2-highcpu", series: "n2", family: GeneralPurpose, gibPerVCPU: 1, sizes: []int{2, 4, 8, 16, 32, 48, 64, 80, 96}},

	{prefix: "n2d-standard", series: "n2d", family: GeneralPurpose, gibPerVCPU: 4, sizes: []int{2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224}},
	{prefix: "n2d-highmem", series: "n2d", family: GeneralPurpose, gibPerVCPU: 8, sizes: []int{2, 4, 8, 16, 32, 48, 64, 80, 96}},
	{prefix: "n2d-highcpu", series: "n2d", family: GeneralPurpose, gibPerVCPU: 1, sizes: []int{2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224}},

	// N4: UNCONFIRMED (secondary source only).
	{prefix: "n4-standard", series: "n4", family: GeneralPurpose, gibPerVCPU: 4, sizes: []int{2, 4, 8, 16, 32, 48, 64, 80}},
	{prefix: "n4-highmem", series: "n4", family: GeneralPurpose, gibPerVCPU: 8, sizes: []int{2, 4, 8, 16, 32, 48, 64, 80}},
	{prefix: "n4-highcpu", series: "n4", family: GeneralPurpose, gibPerVCPU: 2, sizes: []int{2, 4, 8, 16, 32, 48, 64, 80}},

	// Tau T2D: UNCONFIRMED (secondary source only).
	{prefix: "t2d-standard", series: "t2d", family: GeneralPurpose, gibPerVCPU: 4, sizes: []int{1, 2, 4, 8, 16, 32, 48, 60}},

	{prefix: "c2-standard", series: "c2", family: ComputeOptimized, gibPerVCPU: 4, sizes: []int{4, 8, 16, 30, 60}},

	{prefix: "c3-standard", series: "c3", family: GeneralPurpose, gibPerVCPU: 4, sizes: []int{4, 8, 22, 44, 88, 176}},
	{prefix: "c3-standard", series: "c3", family: GeneralPurpose, gibPerVCPU: 4, sizes: []int{4, 8, 22, 44, 88, 176}, suffix: "-lssd"},
	{prefix: "c3-highmem", series: "c3", family: GeneralPurpose, gibPerVCPU: 8, sizes: []int{4, 8, 22, 44, 88, 176}},
	{prefix: "c3-highcpu", series: "c3", family: GeneralPurpose, gibPerVCPU: 2, sizes: []int{4, 8, 22, 44, 88, 176}},
}

// Machine types that follow no per-vCPU rule.
//
// Read 2026-11-29 from the same Compute Engine API machineTypes.list output
// as predefinedClasses (e2 and N1 shared-core), and from the secondary
// Cyclenerd table for n2-highmem-128 (864 GB; several other public sources
// quote the API description "128 vCPUs, 864 GB RAM"; UNCONFIRMED against a
// Google page).
var machineExceptions = []MachineShape{
	{Name: "e2-micro", Series: "e2", Family: GeneralPurpose, VCPUs: 2, MemoryMiB: 1024, SharedCore: true},
	{Name: "e2-small", Series: "e2", Family: GeneralPurpose, VCPUs: 2, MemoryMiB: 2048, SharedCore: true},
	{Name: "e2-medium", Series: "e2", Family: GeneralPurpose, VCPUs: 2, MemoryMiB: 4096, SharedCore: true},
	{Name: "f1-micro", Series: "n1", Family: GeneralPurpose, VCPUs: 1, MemoryMiB: 614, SharedCore: true},
	{Name: "g1-small", Series: "n1", Family: GeneralPurpose, VCPUs: 1, MemoryMiB: 1740, SharedCore: true},
	{Name: "n2-highmem-128", Series: "n2", Family: GeneralPurpose, VCPUs: 128, MemoryMiB: 864 * gib},
}

// Accelerator-optimized machine types: vCPUs, memory and built-in GPUs.
//
// Source: cloud.google.com/compute/docs/gpus ("GPU machine types"), read
// 2026-11-29 through its S3NS mirror documentation.s3ns.fr/compute/docs/gpus
// (stamped "Last updated 2026-08-26") stored in a public repository; the
// search corpus returned only the opening of the cloud.google.com page itself
// and of /accelerator-optimized-machines. Every row below is in that page's
// tables. Cross-checked against the GKE cluster-autoscaler machine-family
// table (Google LLC, 2026) and Cyclenerd build/gcp.yml: all agree, except
// that the GKE table gives g2-standard-24 23 vCPUs (the GPU page and
// Cyclenerd say 24; 24 is used).
//
// Note g2-standard-24 has 2 L4 GPUs and g2-standard-32 has 1.
// G2 machine types also accept custom memory within a range; only the
// default memory is recorded. -nolssd variants (GKE table only) are not
// included.
var acceleratorMachines = []MachineShape{
	// A2 Standard, NVIDIA A100 40GB.
	accel("a2-highgpu-1g", "a2", 12, 85, "nvidia-tesla-a100", 1),
	accel("a2-highgpu-2g", "a2", 24, 170, "nvidia-tesla-a100", 2),
	accel("a2-highgpu-4g", "a2", 48, 340, "nvidia-tesla-a100", 4),
	accel("a2-highgpu-8g", "a2", 96, 680, "nvidia-tesla-a100", 8),
	accel("a2-megagpu-16g", "a2", 96, 1360, "nvidia-tesla-a100", 16),
	// A2 Ultra, NVIDIA A100 80GB.
	accel("a2-ultragpu-1g", "a2", 12, 170, "nvidia-a100-80gb", 1),
	accel("a2-ultragpu-2g", "a2", 24, 340, "nvidia-a100-80gb", 2),
	accel("a2-ultragpu-4g", "a2", 48, 680, "nvidia-a100-80gb", 4),
	accel("a2-ultragpu-8g", "a2", 96, 1360, "nvidia-a100-80gb", 8),
	// A3 High and A3 Edge, NVIDIA H100 80GB.
	accel("a3-highgpu-1g", "a3", 26, 234, "nvidia-h100-80gb", 1),
	accel("a3-highgpu-2g", "a3", 52, 468, "nvidia-h100-80gb", 2),
	accel("a3-highgpu-4g", "a3", 104, 936, "nvidia-h100-80gb", 4),
	accel("a3-highgpu-8g", "a3", 208, 1872, "nvidia-h100-80gb", 8),
	accel("a3-edgegpu-8g", "a3", 208, 1872, "nvidia-h100-80gb", 8),
	// A3 Mega, NVIDIA H100 80GB Mega.
	accel("a3-megagpu-8g", "a3", 208, 1872, "nvidia-h100-mega-80gb", 8),
	// A3 Ultra, NVIDIA H200 141GB.
	accel("a3-ultragpu-8g", "a3", 224, 2952, "nvidia-h200-141gb", 8),
	// A4, NVIDIA B200.
	accel("a4-highgpu-8g", "a4", 224, 3968, "nvidia-b200", 8),
	// A4X, NVIDIA GB200 superchips (Arm: NVIDIA Grace CPUs).
	accel("a4x-highgpu-4g", "a4x", 140, 884, "nvidia-gb200", 4),
	// A4X Max, NVIDIA GB300 superchips; bare metal only.
	bareMetal(accel("a4x-maxgpu-4g-metal", "a4x", 144, 960, "nvidia-gb300", 4)),
	// G2, NVIDIA L4.
	accel("g2-standard-4", "g2", 4, 16, "nvidia-l4", 1),
	accel("g2-standard-8", "g2", 8, 32, "nvidia-l4", 1),
	accel("g2-standard-12", "g2", 12, 48, "nvidia-l4", 1),
	accel("g2-standard-16", "g2", 16, 64, "nvidia-l4", 1),
	accel("g2-standard-24", "g2", 24, 96, "nvidia-l4", 2),
	accel("g2-standard-32", "g2", 32, 128, "nvidia-l4", 1),
	accel("g2-standard-48", "g2", 48, 192, "nvidia-l4", 4),
	accel("g2-standard-96", "g2", 96, 384, "nvidia-l4", 8),
	// G4, NVIDIA RTX PRO 6000. The three smallest have a fractional vGPU;
	// the GKE table notes the API reports them with the same accelerator
	// name and count (1) as g4-standard-48.
	fractional(accel("g4-standard-6", "g4", 6, 22, "nvidia-rtx-pro-6000", 0), "1/8"),
	fractional(accel("g4-standard-12", "g4", 12, 45, "nvidia-rtx-pro-6000", 0), "1/4"),
	fractional(accel("g4-standard-24", "g4", 24, 90, "nvidia-rtx-pro-6000", 0), "1/2"),
	accel("g4-standard-48", "g4", 48, 180, "nvidia-rtx-pro-6000", 1),
	accel("g4-standard-96", "g4", 96, 360, "nvidia-rtx-pro-6000", 2),
	accel("g4-standard-192", "g4", 192, 720, "nvidia-rtx-pro-6000", 4),
	accel("g4-standard-384", "g4", 384, 1440, "nvidia-rtx-pro-6000", 8),
}

func accel(name, series string, vcpus, memGiB int, gpuType string, gpus int) MachineShape {
	return MachineShape{
		Name: name, Series: series, Family: AcceleratorOptimized,
		VCPUs: vcpus, MemoryMiB: memGiB * gib,
		GPUType: gpuType, GPUCount: gpus,
	}
}

func fractional(m MachineShape, f string) MachineShape { m.GPUFraction = f; return m }

func bareMetal(m MachineShape) MachineShape { m.BareMetal = true; return m }

var machines = buildMachines()

func buildMachines() map[string]MachineShape {
	m := make(map[string]MachineShape)
	for _, c := range predefinedClasses {
		for _, n := range c.sizes {
			name := c.prefix + "-" + strconv.Itoa(n) + c.suffix
			m[name] = MachineShape{
				Name: name, Series: c.series, Family: c.family,
				VCPUs:     n,
				MemoryMiB: int(math.Round(float64(n) * c.gibPerVCPU * gib)),
			}
		}
	}
	for _, list := range [][]MachineShape{machineExceptions, acceleratorMachines} {
		for _, s := range list {
			m[s.Name] = s
		}
	}
	return m
}

// Custom machine type names (custom-<vCPUs>-<MiB>, n2-custom-…, n2d-custom-…,
// e2-custom-…, each with an optional -ext suffix for extended memory, and
// e2-custom-{micro,small,medium}-<MiB> for E2 shared-core).
//
// The name forms were read 2026-11-29 from Google's Compute Engine Go sample
// compute_custom_machine_type_create_without_helper (e2-custom-small-%v,
// e2-custom-medium-%v) and public configurations using them; the vCPU count
// of the e2 shared-core custom types is taken to be 2, as for e2-micro/
// small/medium (UNCONFIRMED). Google's limits on vCPU counts and memory per
// vCPU for custom types are not checked here.
var customSeries = map[string]Family{
	"":    GeneralPurpose, // custom-… is N1
	"n2":  GeneralPurpose,
	"n2d": GeneralPurpose,
	"e2":  GeneralPurpose,
}

var e2SharedCustom = map[string]bool{"micro": true, "small": true, "medium": true}

func parseCustom(name string) (MachineShape, bool) {
	var series, rest string
	if r, ok := strings.CutPrefix(name, "custom-"); ok {
		rest = r
	} else {
		s, r, ok := strings.Cut(name, "-custom-")
		if !ok || s == "" {
			return MachineShape{}, false
		}
		series, rest = s, r
	}
	family, ok := customSeries[series]
	if !ok {
		return MachineShape{}, false
	}
	shape := MachineShape{Name: name, Series: series, Family: family, Custom: true}
	if series == "" {
		shape.Series = "n1"
	}
	if r, ok := strings.CutSuffix(rest, "-ext"); ok {
		rest = r
		shape.ExtendedMemory = true
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 2 {
		return MachineShape{}, false
	}
	if series == "e2" && e2SharedCustom[parts[0]] {
		if shape.ExtendedMemory {
			return MachineShape{}, false
		}
		shape.SharedCore = true
		shape.VCPUs = 2
	} else {
		n, ok := positive(parts[0])
		if !ok {
			return MachineShape{}, false
		}
		shape.VCPUs = n
	}
	mib, ok := positive(parts[1])
	if !ok {
		return MachineShape{}, false
	}
	shape.MemoryMiB = mib
	return shape, true
}

// positive parses a decimal number of at most 9 digits without sign or
// leading zero.
func positive(s string) (int, bool) {
	if s == "" || len(s) > 9 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
