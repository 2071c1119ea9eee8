package gce

import (
	"slices"
	"sort"
)

// Attachment says how a VM gets an accelerator type's GPUs.
type Attachment int

const (
	// GuestAccelerator: the GPUs are attached by listing them in the
	// instance template's guestAccelerators (Terraform guest_accelerator);
	// only N1 machine types take them. The Cluster Autoscaler sees these.
	GuestAccelerator Attachment = iota + 1
	// BuiltIn: the GPUs come with an accelerator-optimized machine type,
	// which fixes their model and count. The Cluster Autoscaler reads only
	// guestAccelerators, so nodegen declares these GPUs to it itself (kube-env
	// extended_resources=nvidia.com/gpu=N).
	BuiltIn
)

func (a Attachment) String() string {
	switch a {
	case GuestAccelerator:
		return "guest accelerator"
	case BuiltIn:
		return "built into the machine type"
	}
	return "unknown"
}

// N1Limit is the largest N1 VM a number of attached GPUs allows.
type N1Limit struct {
	GPUs         int
	MaxVCPUs     int
	MaxMemoryMiB int
}

// AcceleratorInfo describes an NVIDIA accelerator type name as used in
// guestAccelerators[].acceleratorType.
type AcceleratorInfo struct {
	Name  string // accelerator type name, e.g. "nvidia-tesla-t4"
	Model string // e.g. "NVIDIA T4"

	// VWS marks an NVIDIA RTX Virtual Workstation variant; Base is then the
	// plain accelerator type it is a licence variant of. For others Base
	// equals Name.
	VWS  bool
	Base string

	Attach Attachment
	// Series are the machine series that carry the GPU, as the Compute
	// Engine documentation names them ("N1", "A2 Standard", "G2", …).
	Series []string
	// MachineTypes are, for BuiltIn accelerators, the machine types that
	// come with whole GPUs of this type (fractional G4 shapes excluded).
	MachineTypes []string
	// AllowedCounts are the GPU counts a VM can have: for GuestAccelerator
	// types the counts that may be attached to an N1 VM, for BuiltIn types
	// the counts the machine types come with.
	AllowedCounts []int
	// N1Limits, for GuestAccelerator types, bounds the vCPUs and memory of
	// the N1 VM for each allowed GPU count.
	N1Limits []N1Limit

	// Retired accelerator types can no longer be used. Deprecated ones still
	// work until EndOfSupport (YYYY-MM-DD, empty if not known).
	Retired      bool
	Deprecated   bool
	EndOfSupport string
}

// Accelerator returns what is known of an accelerator type. name may be a
// bare name ("nvidia-l4") or a resource path ending in one
// ("zones/us-central1-a/acceleratorTypes/nvidia-l4").
func Accelerator(name string) (AcceleratorInfo, bool) {
	a, ok := accelerators[lastSegment(name)]
	if !ok {
		return AcceleratorInfo{}, false
	}
	a.Series = slices.Clone(a.Series)
	a.MachineTypes = slices.Clone(a.MachineTypes)
	a.AllowedCounts = slices.Clone(a.AllowedCounts)
	a.N1Limits = slices.Clone(a.N1Limits)
	return a, true
}

// AcceleratorNames returns every known accelerator type name, sorted.
func AcceleratorNames() []string {
	names := make([]string, 0, len(accelerators))
	for n := range accelerators {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func n1(gpus, maxVCPUs, maxMemGiB int) N1Limit {
	return N1Limit{GPUs: gpus, MaxVCPUs: maxVCPUs, MaxMemoryMiB: maxMemGiB * gib}
}

// GPUs attachable to N1 machine types (not the N1 shared-core f1-micro and
// g1-small), with the vCPU and memory limits per GPU count.
//
// Source: cloud.google.com/compute/docs/gpus, sections "N1 machine series",
// "N1+T4/P4/V100/P100 GPUs", read 2026-11-29 through the S3NS mirror of that
// page (stamped "Last updated 2026-08-26"). The limits are documented as
// "1 to N vCPUs" and "1 to M GB" instance memory.
//
// P100 with 4 GPUs allows only 64 vCPUs and 208 GB in us-east1-c,
// europe-west1-d and europe-west1-b; the general limit is recorded.
//
// Lifecycle, from the Google Cloud release notes of 2026-09-22 (quoted
// verbatim in public repositories, read 2026-11-29): "As of September 15,
// 2026, NVIDIA P100 (nvidia-tesla-p100 and nvidia-tesla-p100-vws) GPUs have
// reached end of support (EOS) and are shut down", and T4 and P4 (and their
// -vws variants) "are deprecated and will reach end of support (EOS) on
// August 1, 2027".
//
// K80 is no longer on the GPU page; older versions of it pointed to "NVIDIA
// K80 EOL". Its counts and limits (1, 2, 4, 8 GPUs; 8/52, 16/104, 32/208,
// 64/208 vCPUs/GB) come from SkyPilot's copy of the old page
// (sky/clouds/service_catalog/gcp_catalog.py) and are UNCONFIRMED; its
// end-of-support date is not recorded.
var n1Accelerators = []AcceleratorInfo{
	{Name: "nvidia-tesla-t4", Model: "NVIDIA T4", N1Limits: []N1Limit{n1(1, 48, 312), n1(2, 48, 312), n1(4, 96, 624)},
		Deprecated: true, EndOfSupport: "2027-08-01"},
	{Name: "nvidia-tesla-t4-vws", Base: "nvidia-tesla-t4", VWS: true, Model: "NVIDIA T4 Virtual Workstation", N1Limits: []N1Limit{n1(1, 48, 312), n1(2, 48, 312), n1(4, 96, 624)},
		Deprecated: true, EndOfSupport: "2027-08-01"},
	{Name: "nvidia-tesla-p4", Model: "NVIDIA P4", N1Limits: []N1Limit{n1(1, 24, 156), n1(2, 48, 312), n1(4, 96, 624)},
		Deprecated: true, EndOfSupport: "2027-08-01"},
	{Name: "nvidia-tesla-p4-vws", Base: "nvidia-tesla-p4", VWS: true, Model: "NVIDIA P4 Virtual Workstation", N1Limits: []N1Limit{n1(1, 24, 156), n1(2, 48, 312), n1(4, 96, 624)},
		Deprecated: true, EndOfSupport: "2027-08-01"},
	{Name: "nvidia-tesla-v100", Model: "NVIDIA V100", N1Limits: []N1Limit{n1(1, 12, 78), n1(2, 24, 156), n1(4, 48, 312), n1(8, 96, 624)}},
	{Name: "nvidia-tesla-p100", Model: "NVIDIA P100", N1Limits: []N1Limit{n1(1, 16, 104), n1(2, 32, 208), n1(4, 96, 624)},
		Retired: true, EndOfSupport: "2026-09-15"},
	{Name: "nvidia-tesla-p100-vws", Base: "nvidia-tesla-p100", VWS: true, Model: "NVIDIA P100 Virtual Workstation", N1Limits: []N1Limit{n1(1, 16, 104), n1(2, 32, 208), n1(4, 96, 624)},
		Retired: true, EndOfSupport: "2026-09-15"},
	{Name: "nvidia-tesla-k80", Model: "NVIDIA K80", N1Limits: []N1Limit{n1(1, 8, 52), n1(2, 16, 104), n1(4, 32, 208), n1(8, 64, 208)},
		Retired: true},
}

// GPUs built into accelerator-optimized machine types. The machine types
// and counts come from data/machine-types.json; the names, models, series and
// vWS variants from cloud.google.com/compute/docs/gpus ("Overview" and the
// per-series sections), read 2026-11-29 through its S3NS mirror (stamped
// "Last updated 2026-08-26"). The -vws variants are the licence variants of
// the G-series GPUs; they are requested as the machine type's accelerator
// with the same count (UNCONFIRMED beyond public configurations that pair
// g2-standard-N with nvidia-l4-vws).
var builtInAccelerators = []AcceleratorInfo{
	{Name: "nvidia-tesla-a100", Model: "NVIDIA A100 40GB", Series: []string{"A2 Standard"}},
	{Name: "nvidia-a100-80gb", Model: "NVIDIA A100 80GB", Series: []string{"A2 Ultra"}},
	{Name: "nvidia-h100-80gb", Model: "NVIDIA H100 80GB", Series: []string{"A3 High", "A3 Edge"}},
	{Name: "nvidia-h100-mega-80gb", Model: "NVIDIA H100 80GB (A3 Mega)", Series: []string{"A3 Mega"}},
	{Name: "nvidia-h200-141gb", Model: "NVIDIA H200 141GB", Series: []string{"A3 Ultra"}},
	{Name: "nvidia-b200", Model: "NVIDIA B200", Series: []string{"A4"}},
	{Name: "nvidia-gb200", Model: "NVIDIA GB200 Grace Blackwell Superchip", Series: []string{"A4X"}},
	{Name: "nvidia-gb300", Model: "NVIDIA GB300 Grace Blackwell Ultra Superchip", Series: []string{"A4X Max"}},
	{Name: "nvidia-l4", Model: "NVIDIA L4", Series: []string{"G2"}},
	{Name: "nvidia-l4-vws", Base: "nvidia-l4", VWS: true, Model: "NVIDIA L4 Virtual Workstation", Series: []string{"G2"}},
	{Name: "nvidia-rtx-pro-6000", Model: "NVIDIA RTX PRO 6000", Series: []string{"G4"}},
	{Name: "nvidia-rtx-pro-6000-vws", Base: "nvidia-rtx-pro-6000", VWS: true, Model: "NVIDIA RTX PRO 6000 Virtual Workstation", Series: []string{"G4"}},
}

var accelerators = buildAccelerators()

func buildAccelerators() map[string]AcceleratorInfo {
	m := make(map[string]AcceleratorInfo)
	for _, a := range n1Accelerators {
		a.Attach = GuestAccelerator
		a.Series = []string{"N1"}
		if a.Base == "" {
			a.Base = a.Name
		}
		for _, l := range a.N1Limits {
			a.AllowedCounts = append(a.AllowedCounts, l.GPUs)
		}
		m[a.Name] = a
	}
	for _, a := range builtInAccelerators {
		a.Attach = BuiltIn
		if a.Base == "" {
			a.Base = a.Name
		}
		for _, g := range generatedMachineTypes {
			s := machines[g.name]
			if s.GPUType != a.Base || s.GPUCount == 0 || !s.AcceleratorOptimized() {
				continue
			}
			a.MachineTypes = append(a.MachineTypes, s.Name)
			if !slices.Contains(a.AllowedCounts, s.GPUCount) {
				a.AllowedCounts = append(a.AllowedCounts, s.GPUCount)
			}
		}
		slices.Sort(a.AllowedCounts)
		m[a.Name] = a
	}
	return m
}
