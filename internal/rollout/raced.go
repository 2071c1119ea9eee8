package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nodegen/nodegen/internal/model"
)

// raced checks, right after a surge's createInstances, that an autoscaled
// MIG is still within its group's max: pickBatch read the target size
// before, and a scale-up of the autoscaler in between (or another
// surge) adds to it. Over the max, the replacements just created, which
// nothing runs on yet, are removed at once and the group stops: the
// next run sizes its batch from the MIG as it is then.
func (r *Runner) raced(ctx context.Context, g *model.NodeGroup, zone string, created []string) error {
	if !g.Autoscaled() {
		return nil
	}
	cl := &r.Src.Cluster
	mig := cl.MIGName(g, zone)
	m, err := r.Compute.GetMIG(ctx, cl.GCP.Project, zone, mig)
	if err != nil || m.TargetSize <= g.Max {
		return err
	}
	stop := fmt.Errorf("%w: %s/%s: MIG %s grew to %d instances, over the group's max of %d, while the surge created %s (a scale-up of the autoscaler in between): the surge was undone; run the rollout again", ErrStopped, g.Name, zone, mig, m.TargetSize, g.Max, strings.Join(created, ", "))
	r.Progress.Step("%s/%s: MIG %s is at %d instances, over the group's max of %d: removing the surge's %s", g.Name, zone, mig, m.TargetSize, g.Max, strings.Join(created, ", "))
	return errors.Join(stop, r.undoSurge(ctx, g, zone, created))
}
