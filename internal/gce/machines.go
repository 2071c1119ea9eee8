package gce

import (
	"fmt"
	"slices"
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

//go:generate go run ../../hack/gcedata -machine-types data/machine-types.json -zones data/zones.json -accelerator-zones data/accelerator-zones.csv -out zz_generated.go

// generatedMachineType is one row of zz_generated.go, generated from
// data/machine-types.json (the shape of `gcloud compute machine-types list
// --format=json`; data/SOURCES.md says where each row comes from).
type generatedMachineType struct {
	name      string
	vcpus     int  // guestCpus
	memoryMiB int  // memoryMb
	shared    bool // isSharedCpu
	gpuType   string
	gpuCount  int
}

// seriesFamily gives the machine family of the series that are not
// general-purpose (cloud.google.com/compute/docs/machine-resource).
var seriesFamily = map[string]Family{
	"c2": ComputeOptimized, "c2d": ComputeOptimized, "h3": ComputeOptimized,
	"a2": AcceleratorOptimized, "a3": AcceleratorOptimized, "a4": AcceleratorOptimized,
	"a4x": AcceleratorOptimized, "g2": AcceleratorOptimized, "g4": AcceleratorOptimized,
}

// fractionalGPU are the G4 shapes with part of one RTX PRO 6000 vGPU
// (cloud.google.com/compute/docs/gpus, G4 table). The API lists them with
// one accelerator, like g4-standard-48; nodegen counts no whole GPU.
var fractionalGPU = map[string]string{
	"g4-standard-6":  "1/8",
	"g4-standard-12": "1/4",
	"g4-standard-24": "1/2",
}

var machines = buildMachines()

func buildMachines() map[string]MachineShape {
	m := make(map[string]MachineShape, len(generatedMachineTypes))
	for _, g := range generatedMachineTypes {
		series, _, _ := strings.Cut(g.name, "-")
		switch series {
		case "f1", "g1":
			series = "n1"
		}
		family, ok := seriesFamily[series]
		if !ok {
			family = GeneralPurpose
		}
		s := MachineShape{
			Name: g.name, Series: series, Family: family,
			VCPUs: g.vcpus, MemoryMiB: g.memoryMiB, SharedCore: g.shared,
			GPUType: g.gpuType, GPUCount: g.gpuCount,
			BareMetal: strings.HasSuffix(g.name, "-metal"),
		}
		if f, ok := fractionalGPU[g.name]; ok {
			s.GPUFraction, s.GPUCount = f, 0
		}
		m[g.name] = s
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
// vCPU for custom types are in customLimits below.
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

// customLimits are Compute Engine's limits on a custom machine type of a
// series: the vCPU counts it takes, the memory per vCPU (MiB) without
// extended memory, and the most memory (MiB) with it (0: no extended
// memory). Memory is a multiple of 256 MiB for every series. Read
// 2026-12-01 from Google's Compute Engine sample
// compute-custom-machine-type-helper-class
// (cloud.google.com/compute/docs/samples/compute-custom-machine-type-helper-class),
// which the page "Create a VM with a custom machine type"
// (cloud.google.com/compute/docs/instances/creating-instance-with-custom-machine-type)
// uses: E2 2 to 32 vCPUs in steps of 2, 0.5 to 8 GB per vCPU, no extended
// memory; the E2 shared-core types 1 to 2 (micro), 2 to 4 (small) and 4
// to 8 GB (medium) in all; N2 2 to 32 vCPUs in steps of 2 and 36 to 128 in
// steps of 4, 0.5 to 8 GB per vCPU, extended memory up to 624 GB; N2D 2, 4,
// 8, 16, 32, 48, 64, 80 or 96 vCPUs, 0.5 to 8 GB per vCPU, extended up to
// 768 GB; N1 1 or an even number up to 96 vCPUs, 922 MiB to 6.5 GB per
// vCPU, extended up to 624 GB.
type customLimits struct {
	vcpus            func(n int) bool
	vcpuRule         string
	minPerVCPU       int
	maxPerVCPU       int
	maxExtendedTotal int
}

const customMemoryStep = 256 // MiB

var customSeriesLimits = map[string]customLimits{
	"e2": {func(n int) bool { return n >= 2 && n <= 32 && n%2 == 0 }, "an even number from 2 to 32", 512, 8192, 0},
	"n2": {func(n int) bool { return n >= 2 && n <= 32 && n%2 == 0 || n >= 36 && n <= 128 && n%4 == 0 },
		"an even number from 2 to 32, or a multiple of 4 from 36 to 128", 512, 8192, 624 << 10},
	"n2d": {func(n int) bool { return slices.Contains([]int{2, 4, 8, 16, 32, 48, 64, 80, 96}, n) },
		"2, 4, 8, 16, 32, 48, 64, 80 or 96", 512, 8192, 768 << 10},
	"n1": {func(n int) bool { return n == 1 || n >= 2 && n <= 96 && n%2 == 0 }, "1 or an even number up to 96", 922, 6656, 624 << 10},
}

// e2SharedCustomMemory are the E2 shared-core custom types' total memory
// bounds (MiB), by the word in their name.
var e2SharedCustomMemory = map[string][2]int{"micro": {1024, 2048}, "small": {2048, 4096}, "medium": {4096, 8192}}

// CustomProblems returns why Compute Engine refuses the custom machine
// type m (one reason each for its vCPUs and its memory), nil for a valid
// one or a predefined type.
func (m MachineShape) CustomProblems() []string {
	if !m.Custom {
		return nil
	}
	var out []string
	gib := func(mib int) string { return strconv.FormatFloat(float64(mib)/1024, 'f', -1, 64) + " GB" }
	if m.MemoryMiB%customMemoryStep != 0 {
		out = append(out, fmt.Sprintf("memory %d MB is not a multiple of 256 MB", m.MemoryMiB))
	}
	if m.SharedCore {
		for word, b := range e2SharedCustomMemory {
			if strings.HasPrefix(m.Name, "e2-custom-"+word+"-") && (m.MemoryMiB < b[0] || m.MemoryMiB > b[1]) {
				out = append(out, fmt.Sprintf("e2-custom-%s takes %s to %s of memory, not %s", word, gib(b[0]), gib(b[1]), gib(m.MemoryMiB)))
			}
		}
		return out
	}
	l, ok := customSeriesLimits[m.Series]
	if !ok {
		return out
	}
	series := strings.ToUpper(m.Series)
	if !l.vcpus(m.VCPUs) {
		out = append(out, fmt.Sprintf("a custom %s machine type has %s vCPUs, not %d", series, l.vcpuRule, m.VCPUs))
		return out
	}
	switch {
	case m.MemoryMiB < l.minPerVCPU*m.VCPUs:
		out = append(out, fmt.Sprintf("%d vCPUs take at least %d MB of memory (%d MB per vCPU on %s)", m.VCPUs, l.minPerVCPU*m.VCPUs, l.minPerVCPU, series))
	case m.ExtendedMemory && l.maxExtendedTotal == 0:
		out = append(out, fmt.Sprintf("%s custom machine types take no extended memory (-ext)", series))
	case m.ExtendedMemory && m.MemoryMiB > l.maxExtendedTotal:
		out = append(out, fmt.Sprintf("with extended memory a custom %s machine type has at most %s, not %s", series, gib(l.maxExtendedTotal), gib(m.MemoryMiB)))
	case !m.ExtendedMemory && m.MemoryMiB > l.maxPerVCPU*m.VCPUs:
		fix := "; add -ext for extended memory"
		if l.maxExtendedTotal == 0 {
			fix = ""
		}
		out = append(out, fmt.Sprintf("%d vCPUs take at most %d MB of memory (%s per vCPU on %s)%s", m.VCPUs, l.maxPerVCPU*m.VCPUs, gib(l.maxPerVCPU), series, fix))
	}
	return out
}
