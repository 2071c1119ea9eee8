package gce

import (
	"fmt"
	"slices"
	"strings"
)

// AcceleratorZonesFile is nodegen's table of the zones that offer each
// accelerator type, relative to the repository's root.
const AcceleratorZonesFile = "internal/gce/data/accelerator-zones.csv"

// RefreshCommand refreshes the Compute Engine tables from the live API.
const RefreshCommand = "hack/gcedata/refresh.sh"

// generatedAcceleratorOffer is one row of data/accelerator-zones.csv: the
// zones of a region a source lists for an accelerator type.
type generatedAcceleratorOffer struct {
	accelerator, region string
	zones               []string
	source              string
}

// AcceleratorOffer is what nodegen's table says of an accelerator type in
// a region.
type AcceleratorOffer struct {
	// Zones are the region's zones that offer the type, sorted; empty when
	// the sources that speak for the region list it in none.
	Zones []string
	// Sources are the sources that speak for the type in the region, each
	// with its date, sorted.
	Sources []string
}

// AcceleratorOffered says in which zones of region Compute Engine offers
// the accelerator type (a bare name), by nodegen's table
// (AcceleratorZonesFile). ok is false when no source of the table speaks
// for the type in the region: nothing is then known either way.
//
// A source speaks for a pair when it lists the type in a zone of the
// region, or when it lists every zone of every type (the live API's
// answer, an accelerator and region "*" row). The zones are the union of
// what the sources speaking for the pair list, so a zone is only taken
// for not offering a type when no source lists it. A Virtual Workstation
// type (-vws) is the licence variant of the same GPUs: the zones of its
// base type count for it too, where a source speaks for the -vws type
// itself (in every capture the two have the same zones).
func AcceleratorOffered(accelerator, region string) (AcceleratorOffer, bool) {
	base := accelerator
	if a, ok := accelerators[accelerator]; ok {
		base = a.Base
	}
	var o AcceleratorOffer
	spoken := false
	for _, r := range generatedAcceleratorZones {
		switch {
		case r.accelerator == "*":
			spoken = true
		case r.region != region:
			continue
		case r.accelerator == accelerator:
			spoken = true
		case r.accelerator != base:
			continue
		}
		o.Zones = append(o.Zones, r.zones...)
		if !slices.Contains(o.Sources, r.source) {
			o.Sources = append(o.Sources, r.source)
		}
	}
	if !spoken {
		return AcceleratorOffer{}, false
	}
	slices.Sort(o.Zones)
	o.Zones = slices.Compact(o.Zones)
	slices.Sort(o.Sources)
	return o, true
}

// AcceleratorZonesCommand is the gcloud command that lists, of zones, those
// that offer the accelerator type: a zone it does not print does not.
func AcceleratorZonesCommand(accelerator string, zones []string) string {
	return fmt.Sprintf(`gcloud compute accelerator-types list --filter="name=%s AND zone:( %s )"`, accelerator, strings.Join(zones, " "))
}
