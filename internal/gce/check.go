package gce

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors CheckGPU wraps, for callers that need to tell cases apart.
var (
	ErrUnknownAccelerator = errors.New("unknown accelerator type")
	ErrRetired            = errors.New("accelerator type retired")
)

// CheckGPU checks that a VM of machine type m can have count GPUs of
// acceleratorType as listed in its instance template's guestAccelerators.
//
// acceleratorType "" with count 0 means the template lists no GPUs; that is
// valid for every machine type (accelerator-optimized ones still have their
// built-in GPUs). For an accelerator-optimized machine type a listed
// accelerator must be the one it comes with (or its vWS variant), in the
// count it comes with. Deprecated accelerator types pass; retired ones do
// not. The messages say what to change.
func (m MachineShape) CheckGPU(acceleratorType string, count int) error {
	if acceleratorType == "" {
		if count != 0 {
			return fmt.Errorf("%d GPUs requested without an accelerator type; name one (e.g. nvidia-tesla-t4 on N1, or pick an accelerator-optimized machine type such as g2-standard-8)", count)
		}
		return nil
	}
	a, ok := Accelerator(acceleratorType)
	if !ok {
		return fmt.Errorf("%w %q (known: %s)", ErrUnknownAccelerator, acceleratorType, strings.Join(AcceleratorNames(), ", "))
	}
	if a.Retired {
		return retiredError(a)
	}
	if count < 1 {
		return fmt.Errorf("accelerator %s needs a GPU count of at least 1, not %d", a.Name, count)
	}
	if a.Attach == BuiltIn {
		return checkBuiltIn(m, a, count)
	}
	return checkN1(m, a, count)
}

func retiredError(a AcceleratorInfo) error {
	when := ""
	if a.EndOfSupport != "" {
		when = " on " + a.EndOfSupport
	}
	return fmt.Errorf("%w: %s reached end of support%s and can no longer be used; move to a supported GPU such as nvidia-l4 (G2 machine types) or nvidia-rtx-pro-6000 (G4)", ErrRetired, a.Name, when)
}

func checkN1(m MachineShape, a AcceleratorInfo, count int) error {
	if m.Series != "n1" {
		if m.AcceleratorOptimized() && m.GPUType != "" {
			return fmt.Errorf("accelerator %s attaches to N1 machine types only, not %s, which comes with its own %s GPUs; drop the accelerator", a.Name, m.Name, m.GPUType)
		}
		return fmt.Errorf("accelerator %s attaches to N1 machine types only, not %s", a.Name, m.Name)
	}
	if m.SharedCore {
		return fmt.Errorf("accelerator %s cannot be attached to the N1 shared-core machine type %s; use an n1-standard, n1-highmem, n1-highcpu or custom N1 machine type", a.Name, m.Name)
	}
	var lim *N1Limit
	for i := range a.N1Limits {
		if a.N1Limits[i].GPUs == count {
			lim = &a.N1Limits[i]
		}
	}
	if lim == nil {
		return fmt.Errorf("%s allows %s GPUs per VM, not %d", a.Name, orList(a.AllowedCounts), count)
	}
	if m.VCPUs > lim.MaxVCPUs || m.MemoryMiB > lim.MaxMemoryMiB {
		return fmt.Errorf("%s with %s allows N1 VMs of at most %d vCPUs and %s GB memory; %s has %d vCPUs and %s GB%s",
			a.Name, gpus(count), lim.MaxVCPUs, gbString(lim.MaxMemoryMiB), m.Name, m.VCPUs, gbString(m.MemoryMiB), biggerHint(a, m, count))
	}
	return nil
}

// biggerHint suggests the smallest larger GPU count whose limits fit m.
func biggerHint(a AcceleratorInfo, m MachineShape, count int) string {
	for _, l := range a.N1Limits {
		if l.GPUs > count && m.VCPUs <= l.MaxVCPUs && m.MemoryMiB <= l.MaxMemoryMiB {
			return fmt.Sprintf(" (use %s or a smaller machine type)", gpus(l.GPUs))
		}
	}
	return "; use a smaller machine type"
}

func checkBuiltIn(m MachineShape, a AcceleratorInfo, count int) error {
	if !m.AcceleratorOptimized() || m.GPUType == "" {
		return fmt.Errorf("accelerator %s is built into %s machine types (%s) and cannot be attached to %s; use one of those machine types",
			a.Name, strings.Join(a.Series, ", "), rangeOf(a.MachineTypes), m.Name)
	}
	if m.GPUType != a.Base {
		return fmt.Errorf("%s comes with %s GPUs, not %s; list %s or no accelerator", m.Name, m.GPUType, a.Name, m.GPUType)
	}
	if m.GPUFraction != "" {
		return fmt.Errorf("%s has a fractional (%s) %s vGPU, which cannot be declared as whole nvidia.com/gpu; use g4-standard-48 or larger", m.Name, m.GPUFraction, m.GPUType)
	}
	if count != m.GPUCount {
		return fmt.Errorf("%s comes with %d %s; count must be %d", m.Name, m.GPUCount, a.Name, m.GPUCount)
	}
	return nil
}

func rangeOf(names []string) string {
	switch len(names) {
	case 0:
		return "none known"
	case 1:
		return names[0]
	case 2:
		return names[0] + ", " + names[1]
	}
	return names[0] + " … " + names[len(names)-1]
}

func gpus(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return strconv.Itoa(n) + " GPUs"
}

// orList formats 1, 2, 4 as "1, 2 or 4".
func orList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// gbString writes MiB as the documentation's GB (GiB): whole numbers plain,
// others to one decimal.
func gbString(mib int) string {
	if mib%gib == 0 {
		return strconv.Itoa(mib / gib)
	}
	return strconv.FormatFloat(float64(mib)/gib, 'f', 1, 64)
}

// ZoneRegion returns the region of a zone: the zone name up to its last
// '-' ("us-central1-a" → "us-central1"). A name without '-' gives "".
func ZoneRegion(zone string) string {
	i := strings.LastIndexByte(zone, '-')
	if i < 0 {
		return ""
	}
	return zone[:i]
}
