package validate

import (
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/model"
)

// acceleratorZones refuses a zone of a GPU group that nodegen's table
// (gce.AcceleratorOffered) says does not offer the group's accelerator
// type. Compute Engine keeps accelerator types per zone
// (zones/<zone>/acceleratorTypes/<type>), and the accelerator-optimized
// machine types that carry them with them: the MIG of that zone accepts
// its target size but never creates a VM. The autoscaler learns it only
// when it scales the MIG up: the VM's lastAttempt error reaches it
// through listManagedInstances, and it counts the scale-up failed and
// backs the group off (cluster-autoscaler-1.35.2
// cloudprovider/gce/autoscaling_gce_client.go: FetchMigInstances,
// GetErrorInfo; clusterstate/clusterstate.go: handleInstanceCreationErrors,
// backoffNodeGroup).
//
// Where no source of the table speaks for the type in the region, nothing
// is refused: check --by-hand asks to confirm it (model.ByHand).
func (c *checker) acceleratorZones(g *model.NodeGroup, base []cue.Selector) {
	a, ok := gce.Accelerator(g.Accelerator())
	if !ok || a.Retired {
		return // reported at gpu.type (unknown, retired)
	}
	region := c.src.Cluster.GCP.Region
	regionZones, known := gce.RegionZones(region)
	if !known {
		return // reported at cluster.gcp.region
	}
	offer, spoken := gce.AcceleratorOffered(a.Name, region)
	if !spoken {
		return
	}
	where := "in no zone of " + region
	if len(offer.Zones) > 0 {
		where = "in " + region + " only in " + strings.Join(offer.Zones, ", ")
	}
	for i, z := range g.Zones {
		if !slices.Contains(regionZones, z) || slices.Contains(offer.Zones, z) {
			continue // a zone of another region or none: reported by names
		}
		c.at(join(base, "zones", i),
			"zone %s does not offer %s: Compute Engine keeps accelerator types per zone, so the group's MIG there would never create a VM, and the autoscaler would learn it only at scale-up, from the failed creation, and back the group off; nodegen's accelerator table (%s) lists it %s (sources: %s); use those zones, or, if Google offers it there now, refresh the table with %s (gcloud)",
			z, a.Name, gce.AcceleratorZonesFile, where, strings.Join(offer.Sources, "; "), gce.RefreshCommand)
	}
}
