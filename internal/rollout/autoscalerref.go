package rollout

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodegen/nodegen/internal/model"
)

// checkAutoscalerLetGo makes sure the running Cluster Autoscaler no longer
// names a MIG that left the source before the rollout drains its nodes or
// deletes it. An autoscaler whose --nodes names a deleted MIG fails every
// loop on the MIG's 404 and scales no group at all, and one restarted
// then does not start; while the drain runs, it could scale the leaving
// MIG up for the very pods being evicted. It reads the autoscaler's
// Deployment (the chart's, named model.AutoscalerFullname in the
// autoscaler's namespace) and refuses, with the command that upgrades it,
// while a container's arguments name the MIG, or while the Deployment's
// newest arguments do not yet run on every replica. No such Deployment:
// no autoscaler of nodegen's runs to name it.
func (r *Runner) checkAutoscalerLetGo(ctx context.Context, where, zone, mig string) error {
	cl := &r.Src.Cluster
	ns, name := cl.Autoscaler.Namespace, model.AutoscalerFullname
	d, err := r.Kube.GetDeployment(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		if !r.saidNoAutoscaler {
			r.saidNoAutoscaler = true
			r.Progress.Step("no Deployment %s/%s: no autoscaler of nodegen's runs that could name a MIG leaving the source", ns, name)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the autoscaler's Deployment %s/%s, to see that it no longer names MIG %s before the rollout drains or deletes it: %w", ns, name, mig, err)
	}
	if arg := namesMIG(d, cl.GCP.Project, zone, mig); arg != "" {
		return fmt.Errorf("%w: %s: the running autoscaler (Deployment %s/%s) still names MIG %s (%s): with the MIG deleted it would scale no group at all, and during the drain it could scale the MIG up again; upgrade it first: `%s`, then run the rollout again; nothing of MIG %s was drained or deleted",
			ErrStopped, where, ns, name, mig, arg, r.Src.AutoscalerUpgrade(), mig)
	}
	if why := rolling(d); why != "" {
		return fmt.Errorf("%w: %s: the autoscaler's Deployment %s/%s no longer names MIG %s, but %s; wait for it (`kubectl -n %s rollout status deployment/%s`), then run the rollout again; nothing of MIG %s was drained or deleted",
			ErrStopped, where, ns, name, mig, why, ns, name, mig)
	}
	return nil
}

// migURL is a MIG's URL as the autoscaler's GCE provider parses it from
// --nodes: "https://<any host and path>/projects/<project>/zones/<zone>/
// instanceGroups/<name>" (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// cloudprovider/gce/gce_url.go, ParseMigUrl and parseGceUrl).
var migURL = regexp.MustCompile(`^https://.*/projects/(.*)/zones/(.*)/instanceGroups/(.*)$`)

// namesMIG returns the argument of one of the Deployment's containers that
// makes the autoscaler size MIG project/zone/mig: a --nodes spec
// ("min:max:url", cloudprovider/gce/gce_manager.go buildMigFromFlag), or a
// --node-group-auto-discovery "mig:namePrefix=P,..." whose prefix the
// name matches (the regexp "^P.+", gce_manager.go
// parseMIGAutoDiscoverySpec); "" if none does.
func namesMIG(d *appsv1.Deployment, project, zone, mig string) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		args := append(append([]string(nil), c.Command...), c.Args...)
		for i, a := range args {
			flag, value, ok := strings.Cut(a, "=")
			if !ok && i+1 < len(args) {
				value = args[i+1]
			}
			switch strings.TrimLeft(flag, "-") {
			case "nodes":
				if !strings.HasPrefix(flag, "-") {
					continue
				}
				parts := strings.SplitN(value, ":", 3)
				if len(parts) != 3 {
					continue
				}
				if m := migURL.FindStringSubmatch(parts[2]); m != nil && m[1] == project && m[2] == zone && m[3] == mig {
					return "--nodes=" + value
				}
			case "node-group-auto-discovery":
				if !strings.HasPrefix(flag, "-") {
					continue
				}
				spec, ok := strings.CutPrefix(value, "mig:")
				if !ok {
					continue
				}
				for _, kv := range strings.Split(spec, ",") {
					if p, ok := strings.CutPrefix(kv, "namePrefix="); ok {
						if re, err := regexp.Compile("^" + p + ".+"); err == nil && re.MatchString(mig) {
							return "--node-group-auto-discovery=" + value
						}
					}
				}
			}
		}
	}
	return ""
}

// rolling says why the Deployment's newest pod template may not yet run
// on every replica ("" when it does): the deployment controller has not
// seen its last change, or some replicas are still of an older template.
// These are the first conditions kubectl rollout status waits for
// (k8s.io/kubectl v0.37.2, pkg/polymorphichelpers/rollout_status.go,
// DeploymentStatusViewer.Status); its last, that the new replicas be
// available, does not matter here: no replica runs the old arguments.
func rolling(d *appsv1.Deployment) string {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case d.Generation > st.ObservedGeneration:
		return "the deployment controller has not yet acted on its last change"
	case st.UpdatedReplicas < want:
		return fmt.Sprintf("%d of %d replicas run its new arguments", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Sprintf("%d old replicas are still running", st.Replicas-st.UpdatedReplicas)
	}
	return ""
}
