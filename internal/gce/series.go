package gce

import (
	"regexp"
	"slices"
	"strings"
)

// Machine series facts nodegen checks every cloud group against.
//
// Sources (Compute Engine documentation, read 2026-11-30): the disk types
// each series supports (cloud.google.com/compute/docs/disks/hyperdisks and
// each series' page under
// cloud.google.com/compute/docs/general-purpose-machines): N1 and E2 take no
// Hyperdisk; N4, C4, C4A, C4D, N4A and N4D take Hyperdisk only. The Arm
// series (cloud.google.com/compute/docs/instances/arm-on-compute): T2A, C4A
// and N4A are arm64.
// A4X is Arm too: its CPUs are NVIDIA Grace (cloud.google.com/compute/docs/gpus,
// A4X). Every other series is x86 (amd64).
var (
	armSeries = map[string]bool{"t2a": true, "c4a": true, "n4a": true, "a4x": true}

	// noHyperdisk and hyperdiskOnly are by series; a series in neither
	// takes both kinds (or nodegen does not know; it does not guess).
	noHyperdisk   = map[string]bool{"n1": true, "e2": true}
	hyperdiskOnly = map[string]bool{"n4": true, "c4": true, "c4a": true, "c4d": true, "n4a": true, "n4d": true}

	// noPDStandard are the series that take Persistent Disk but not
	// pd-standard (each series' "Supported disk types" on its machine
	// series page, and "Persistent Disk types" in
	// cloud.google.com/compute/docs/disks/persistent-disks: C3, C3D, Z3,
	// G2, A3 and H3 list pd-balanced (and pd-ssd) only).
	noPDStandard = map[string]bool{"c3": true, "c3d": true, "z3": true, "g2": true, "a3": true, "h3": true}
)

// MaxZonalMIGSize is the default limit on the size of a zonal managed
// instance group: 1,000 VMs (Compute Engine API reference,
// cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/insert:
// "A managed instance group can have up to 1000 VM instances per group").
const MaxZonalMIGSize = 1000

// Arch returns the CPU architecture of a machine series: "arm64" or "amd64".
func (m MachineShape) Arch() string {
	if armSeries[m.Series] {
		return "arm64"
	}
	return "amd64"
}

// DiskTypeProblem returns why a boot disk of diskType cannot be attached to
// the machine type, with the types it takes, or "".
func (m MachineShape) DiskTypeProblem(diskType string) string {
	hyper := strings.HasPrefix(diskType, "hyperdisk-")
	switch {
	case hyper && noHyperdisk[m.Series]:
		return strings.ToUpper(m.Series) + " machine types take no Hyperdisk; use pd-balanced, pd-ssd or pd-standard"
	case !hyper && hyperdiskOnly[m.Series]:
		return strings.ToUpper(m.Series) + " machine types take Hyperdisk only; use hyperdisk-balanced"
	case diskType == "pd-standard" && noPDStandard[m.Series]:
		return strings.ToUpper(m.Series) + " machine types take no pd-standard; use pd-balanced or hyperdisk-balanced"
	}
	return ""
}

// Regions returns the known regions, sorted.
func Regions() []string {
	out := make([]string, 0, len(generatedZones))
	for r := range generatedZones {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// RegionZones returns the zones of a region, sorted, and whether the
// region is known.
func RegionZones(region string) ([]string, bool) {
	z, ok := generatedZones[region]
	return z, ok
}

// MachineTypeNames returns the names of the predefined machine types.
func MachineTypeNames() []string {
	out := make([]string, len(generatedMachineTypes))
	for i, g := range generatedMachineTypes {
		out[i] = g.name
	}
	return out
}

// Image references the Terraform google provider takes as a boot disk's
// source_image (google_compute_instance_template disk.source_image, provider
// 7.45.0 schema): the image's self_link,
// projects/{project}/global/images/{image},
// projects/{project}/global/images/family/{family}, global/images/{image},
// global/images/family/{family}, family/{family}, {project}/{family},
// {project}/{image}, {family} or {image}. Image and family names are RFC
// 1035 labels of at most 63 characters; project IDs are 6 to 30 characters
// of lower-case letters, digits and hyphens, optionally behind a domain
// ("example.com:my-project").
var (
	imageName = `[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?`
	projectID = `(?:[a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]`
	imageRef  = regexp.MustCompile(`^(?:` +
		`(?:https://(?:www|compute)\.googleapis\.com/compute/(?:v1|beta|alpha)/)?projects/` + projectID + `/global/images/(?:family/)?` + imageName +
		`|global/images/(?:family/)?` + imageName +
		`|family/` + imageName +
		`|(?:` + projectID + `/)?` + imageName +
		`)$`)
)

// ValidImage reports whether ref is an image reference GCE and the
// Terraform provider accept.
func ValidImage(ref string) bool { return imageRef.MatchString(ref) }
