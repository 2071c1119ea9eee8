package rollout

import (
	"context"
	"fmt"
	"strings"

	"github.com/nodegen/nodegen/internal/model"
)

// createFailed stops a batch at once when the MIG reports that it could
// not create one of the replacements: the errors of its last attempt
// (listManagedInstances, lastAttempt.errors: QUOTA_EXCEEDED,
// ZONE_RESOURCE_POOL_EXHAUSTED and the like), which the MIG would retry
// until the ready timeout, holding the autoscaler's scale-ups meanwhile.
// An error reading the MIG is left to the wait (the timeout still ends
// it).
func (r *Runner) createFailed(ctx context.Context, g *model.NodeGroup, zone string, batch []StaleNode) error {
	cl := &r.Src.Cluster
	mig := cl.MIGName(g, zone)
	instances, err := r.Compute.ListManagedInstances(ctx, cl.GCP.Project, zone, mig)
	if err != nil {
		return nil
	}
	var failed []string
	for _, mi := range instances {
		if mi.InstanceStatus != "" || len(mi.LastAttempt.Errors.Errors) == 0 {
			continue
		}
		for _, s := range batch {
			if mi.Name() != s.Replacement {
				continue
			}
			var why []string
			for _, e := range mi.LastAttempt.Errors.Errors {
				why = append(why, e.Code+": "+e.Message)
			}
			failed = append(failed, fmt.Sprintf("%s (%s)", s.Replacement, strings.Join(why, "; ")))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s/%s: MIG %s could not create %s; nothing was drained: make room (quota, another zone), then run the rollout again", ErrStopped, g.Name, zone, mig, strings.Join(failed, ", "))
}
