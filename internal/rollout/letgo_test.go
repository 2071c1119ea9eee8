package rollout_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// chartArgs are the autoscaler's arguments as the chart renders them
// from a values.yaml: the lines of the same gen's flags.txt (helm
// template of chart 9.59.0 renders every one of them).
func chartArgs(t *testing.T, files layout.Files) []string {
	t.Helper()
	var args []string
	for _, l := range strings.Split(string(files[layout.AutoscalerFlagsPath]), "\n") {
		if strings.HasPrefix(l, "--") {
			args = append(args, l)
		}
	}
	if len(args) == 0 {
		t.Fatalf("%s has no flag", layout.AutoscalerFlagsPath)
	}
	return args
}

// autoscalerDeployment creates the autoscaler's Deployment running args,
// or, once it exists, gives it args as helm upgrade does; rolledOut says
// whether its status then says, as the deployment controller would once
// its one replica runs them, that every replica runs them.
func (s *setup) autoscalerDeployment(t *testing.T, args []string, rolledOut bool) {
	t.Helper()
	ctx := context.Background()
	ns := s.src.Cluster.Autoscaler.Namespace
	deps := s.admin.AppsV1().Deployments(ns)
	d, err := deps.Get(ctx, model.AutoscalerFullname, metav1.GetOptions{})
	if err != nil {
		one := int32(1)
		sel := map[string]string{"app.kubernetes.io/name": "cluster-autoscaler"}
		d, err = deps.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: model.AutoscalerFullname, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cluster-autoscaler",
						Image:   "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2",
						Command: []string{"./cluster-autoscaler"}, Args: args}}}}},
		}, metav1.CreateOptions{})
	} else {
		d.Spec.Template.Spec.Containers[0].Args = args
		d, err = deps.Update(ctx, d, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if !rolledOut {
		return
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if _, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A zone removed from the source while the running autoscaler's --nodes
// still names its MIGs (the Deployment as helm installed it from the
// values of before): the plan gives the whole order, helm upgrade
// first; --yes refuses, naming the MIG, the argument and the exact
// command, and neither drains a node nor deletes a MIG. After helm
// upgrade gave the Deployment the new arguments, it still refuses while
// the deployment controller has not rolled them out; once it has, the
// rollout drains the nodes and deletes the MIGs.
func TestRolloutRefusesWhileAutoscalerNamesLeavingMIG(t *testing.T) {
	s := newSetupOf(t, 1, nil, false, zoneRemoved)
	cl := &s.src.Cluster
	gpu, cpu := s.src.NodeGroups["gpu-t4"], s.src.NodeGroups["cpu-burst"]
	mig, cpuMIG := cl.MIGName(gpu, "us-central1-b"), cl.MIGName(cpu, "us-central1-b")
	const upgrade = "helm upgrade --install cluster-autoscaler autoscaler/cluster-autoscaler --version 9.59.0 --namespace kube-system -f out/cluster-autoscaler/values.yaml"
	oldArgs, newArgs := chartArgs(t, s.oldFiles), chartArgs(t, s.files)
	named := "--nodes=0:4:https://www.googleapis.com/compute/v1/projects/" + cl.GCP.Project + "/zones/us-central1-b/instanceGroups/" + mig
	if !slices.Contains(oldArgs, named) || slices.Contains(newArgs, named) {
		t.Fatalf("the old flags should name %s, the new not: old %v, new %v", named, oldArgs, newArgs)
	}
	s.autoscalerDeployment(t, oldArgs, true)

	s.planSays(t,
		"leaving the source, first",
		"in this order: 1. `"+upgrade+"` (the autoscaler stops sizing these MIGs: --yes refuses while its Deployment still names one), 2. `nodegen rollout --yes`, 3. `terraform apply`",
	)
	refused := func(wants ...string) {
		t.Helper()
		res := s.runCLI("--yes")
		t.Logf("rollout: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		if res.code != 1 {
			t.Errorf("exit %d, want 1", res.code)
		}
		for _, want := range wants {
			if !strings.Contains(res.stdout+res.stderr, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		if created, deleted := s.compute.record(); len(created)+len(deleted) > 0 {
			t.Errorf("created %v, deleted %v: nothing may change while the autoscaler names the MIG", created, deleted)
		}
		if got := s.compute.migsDeleted(); len(got) > 0 {
			t.Errorf("deleted MIGs %v while the autoscaler names them", got)
		}
		_, _, _, cordons, _ := s.obs.report()
		if len(cordons) > 0 {
			t.Errorf("cordoned %v while the autoscaler names their MIG", cordons)
		}
	}
	refused(
		"gpu-t4 (us-central1-b): gpu-t4/us-central1-b: the running autoscaler (Deployment kube-system/cluster-autoscaler) still names MIG "+mig+" ("+named+")",
		"upgrade it first: `"+upgrade+"`, then run the rollout again; nothing of MIG "+mig+" was drained or deleted",
		"cpu-burst (us-central1-b): cpu-burst/us-central1-b: the running autoscaler (Deployment kube-system/cluster-autoscaler) still names MIG "+cpuMIG,
	)

	// helm upgrade: the new arguments, not yet rolled out.
	s.autoscalerDeployment(t, newArgs, false)
	refused("the autoscaler's Deployment kube-system/cluster-autoscaler no longer names MIG " + mig + ", but the deployment controller has not yet acted on its last change; wait for it (`kubectl -n kube-system rollout status deployment/cluster-autoscaler`)")

	s.autoscalerDeployment(t, newArgs, true)
	out := s.rolloutYes(t)
	for _, want := range []string{"drained " + s.oldNodes[0], "MIG " + mig + " is empty and deleted", "rollout done"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if got := s.compute.migsDeleted(); !slices.Equal(got, []string{"us-central1-b/" + mig, "us-central1-b/" + cpuMIG}) {
		t.Errorf("deleted MIGs %v, want gpu-t4's and cpu-burst's of the removed zone", got)
	}
	s.oldNodesGone(t, 2)
	s.drainedWithinBudget(t)
}
