package rollout_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/model"
)

// autoscalerDeployment creates or replaces the autoscaler's Deployment as
// the chart makes it, its container's command naming the MIGs given
// (--nodes=MIN:MAX:URL), and with rolledOut plays the Deployment
// controller that rolled the change out to its one replica.
func (s *setup) autoscalerDeployment(t *testing.T, rolledOut bool, migs ...string) {
	t.Helper()
	ctx := context.Background()
	cl := &s.src.Cluster
	cmd := []string{"./cluster-autoscaler", "--cloud-provider=gce"}
	for _, m := range migs {
		zone := m[strings.LastIndex(m, "-us-")+1:]
		cmd = append(cmd, "--nodes=0:4:https://www.googleapis.com/compute/v1/projects/"+cl.GCP.Project+"/zones/"+zone+"/instanceGroups/"+m)
	}
	deps := s.admin.AppsV1().Deployments(cl.Autoscaler.Namespace)
	one := int32(1)
	sel := map[string]string{"app.kubernetes.io/name": "cluster-autoscaler"}
	d, err := deps.Get(ctx, model.AutoscalerFullname, metav1.GetOptions{})
	if err != nil {
		d, err = deps.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: model.AutoscalerFullname, Namespace: cl.Autoscaler.Namespace},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "cluster-autoscaler", Image: "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2", Command: cmd}}}}},
		}, metav1.CreateOptions{})
	} else {
		d.Spec.Template.Spec.Containers[0].Command = cmd
		d, err = deps.Update(ctx, d, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if rolledOut {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		if _, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// A zone removed from the source while the running autoscaler still names
// its MIG: --yes neither drains nor deletes that MIG, and names the exact
// helm upgrade; the removed zone's other MIG, which the autoscaler does
// not name, goes. Upgraded but not rolled out yet, it still waits; once
// the autoscaler's change is rolled out, the MIG is drained and deleted.
func TestRolloutWaitsForAutoscalerToForgetMIG(t *testing.T) {
	s := newSetupOf(t, 1, nil, false, zoneRemoved)
	cl := &s.src.Cluster
	gpu, cpu := s.src.NodeGroups["gpu-t4"], s.src.NodeGroups["cpu-burst"]
	mig, migA := cl.MIGName(gpu, "us-central1-b"), cl.MIGName(gpu, "us-central1-a")
	cpuMIG := cl.MIGName(cpu, "us-central1-b")
	s.autoscalerDeployment(t, true, migA, mig)

	r := s.runCLI("--yes")
	t.Logf("while the autoscaler names %s: exit %d\n%s%s", mig, r.code, r.stdout, r.stderr)
	for _, want := range []string{
		"the running autoscaler may still size MIG " + mig + ": its Deployment kube-system/cluster-autoscaler still names it (--nodes=0:4:https://www.googleapis.com/compute/v1/projects/" + cl.GCP.Project + "/zones/us-central1-b/instanceGroups/" + mig + ")",
		"helm upgrade --install cluster-autoscaler autoscaler/cluster-autoscaler --version 9.59.0 --namespace kube-system -f out/cluster-autoscaler/values.yaml",
	} {
		if r.code != cli.ExitFindings || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, want %d and %q", r.code, cli.ExitFindings, want)
		}
	}
	if _, deleted := s.compute.record(); len(deleted) > 0 {
		t.Errorf("deleted %v while the autoscaler names their MIG", deleted)
	}
	if got := s.compute.migsDeleted(); !slices.Equal(got, []string{"us-central1-b/" + cpuMIG}) {
		t.Errorf("deleted MIGs %v, want %s alone (the autoscaler does not name it)", got, cpuMIG)
	}
	if _, _, _, cordons, _ := s.obs.report(); len(cordons) > 0 {
		t.Errorf("cordoned %v while the autoscaler names their MIG", cordons)
	}

	// helm upgrade: the Deployment no longer names it, but its new pods
	// are not rolled out yet.
	s.autoscalerDeployment(t, false, migA)
	r = s.runCLI("--yes")
	t.Logf("upgraded, not rolled out: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != cli.ExitFindings || !strings.Contains(r.stderr, "no longer names it, but the change is not rolled out yet") {
		t.Errorf("exit %d, want the rollout waiting for the autoscaler's change", r.code)
	}
	if _, deleted := s.compute.record(); len(deleted) > 0 {
		t.Errorf("deleted %v before the autoscaler's change was rolled out", deleted)
	}

	s.autoscalerDeployment(t, true, migA)
	out := s.rolloutYes(t)
	if !strings.Contains(out, "MIG "+mig+" is empty and deleted") {
		t.Errorf("output lacks the MIG's deletion")
	}
	if _, deleted := s.compute.record(); !slices.Equal(deleted, s.oldNodes) {
		t.Errorf("deleted %v, want %v", deleted, s.oldNodes)
	}
	s.oldNodesGone(t, 2)
	s.drainedWithinBudget(t)
}
