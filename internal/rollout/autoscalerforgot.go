package rollout

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodegen/nodegen/internal/model"
)

// DeploymentReader reads a Deployment: the autoscaler's. *kube.Client is
// one.
type DeploymentReader interface {
	GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
}

// The autoscaler must no longer name a MIG that leaves the source before
// the rollout drains it or deletes it. A MIG the running autoscaler's
// --nodes still names and that is gone stops every scale-up of the
// cluster: each loop fails to refresh its node registry on the MIG's 404
// (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// cluster-autoscaler/core/static_autoscaler.go, "Failed to update node
// registry"), and a restarted autoscaler cannot start at all
// (cluster-autoscaler/cloudprovider/gce/gce_cloud_provider.go, "Failed to
// create GCE Manager"). And while it still names it, it may scale it up
// for the very pods a drain evicts.
//
// The chart puts one --nodes=MIN:MAX:URL argument per autoscalingGroups
// entry on the autoscaler's container (kubernetes/autoscaler
// cluster-autoscaler-chart-9.59.0, charts/cluster-autoscaler/templates/
// deployment.yaml), in the Deployment model.AutoscalerFullname of
// cluster.autoscaler.namespace. The rollout reads that Deployment's pod
// template (command and args of every container), and its status: a
// change the Deployment controller has not rolled out to every replica
// yet (observedGeneration behind generation, or replicas not all
// updated) leaves old pods that may still name the MIG.

// autoscalerNames says whether the autoscaler's Deployment still names
// the MIG, or may (a change not rolled out yet), and how; "" when it does
// not, or there is no such Deployment (no autoscaler of nodegen's runs).
func (r *Runner) autoscalerNames(ctx context.Context, zone, mig string) (string, error) {
	ns := r.Src.Cluster.Autoscaler.Namespace
	d, err := r.Kube.GetDeployment(ctx, ns, model.AutoscalerFullname)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the autoscaler's Deployment %s/%s (does it still name MIG %s?): %w", ns, model.AutoscalerFullname, mig, err)
	}
	suffix := "/zones/" + zone + "/instanceGroups/" + mig
	for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			v, ok := strings.CutPrefix(a, "--nodes=")
			if !ok {
				continue
			}
			// MIN:MAX:URL; the URL has colons of its own.
			if parts := strings.SplitN(v, ":", 3); len(parts) == 3 && strings.HasSuffix(parts[2], suffix) {
				return fmt.Sprintf("its Deployment %s/%s still names it (%s)", ns, model.AutoscalerFullname, a), nil
			}
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < want || d.Status.Replicas > d.Status.UpdatedReplicas {
		return fmt.Sprintf("its Deployment %s/%s no longer names it, but the change is not rolled out yet (generation %d, observed %d; %d of %d replicas updated, %d in all): its old pods may still name it", ns, model.AutoscalerFullname,
			d.Generation, d.Status.ObservedGeneration, d.Status.UpdatedReplicas, want, d.Status.Replicas), nil
	}
	return "", nil
}

// autoscalerForgot stops, before a leaving MIG is drained or deleted,
// while the running autoscaler may still name it, with the command that
// makes it forget it.
func (r *Runner) autoscalerForgot(ctx context.Context, where, zone, mig string) error {
	how, err := r.autoscalerNames(ctx, zone, mig)
	if err != nil || how == "" {
		return err
	}
	upgrade := r.AutoscalerUpgrade
	if upgrade == "" {
		upgrade = "helm upgrade the autoscaler's release with out/cluster-autoscaler/values.yaml"
	}
	return fmt.Errorf("%w: %s: the running autoscaler may still size MIG %s: %s. Draining it now could make the autoscaler scale it up for the pods evicted, and deleting it would stop every scale-up of the cluster (the autoscaler fails on a MIG that is gone). Nothing of it was changed: first run\n    %s\nwait until its new pods run, then run the rollout again", ErrStopped, where, mig, how, upgrade)
}
