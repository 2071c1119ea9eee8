package rollout_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
)

// extraPod creates pod shop/name on node, Running and Ready, with the
// given controller (nil for none), annotations and an emptyDir volume if
// asked.
func (s *setup) extraPod(t *testing.T, name, node string, owner *metav1.OwnerReference, annotations map[string]string, emptyDir bool) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "other"}, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	if emptyDir {
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
	created, err := s.admin.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := s.admin.CoreV1().Pods("shop").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (s *setup) rsOwner() *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: s.world.rs.Name, UID: s.world.rs.UID, Controller: &yes}
}

// A drain does not evict, without the flags that allow it, a pod with no
// controller, one with emptyDir data, one annotated safe-to-evict "false"
// or one annotated do-not-disrupt "true": the plan lists each with the
// flag that would evict it, and names the Job pods; --yes stops before
// touching anything; with the flags the rollout evicts them and finishes.
func TestRolloutHoldsUnsafePods(t *testing.T) {
	s := newSetup(t, 1, nil)
	ctx := context.Background()
	old1 := s.oldNodes[0]
	s.extraPod(t, "naked", old1, nil, nil, false)
	s.extraPod(t, "scratch", old1, s.rsOwner(), nil, true)
	s.extraPod(t, "precious", old1, s.rsOwner(), map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}, false)
	s.extraPod(t, "pinned", s.oldNodes[1], s.rsOwner(), map[string]string{"karpenter.sh/do-not-disrupt": "true"}, false)
	suspend := true
	job, err := s.admin.BatchV1().Jobs("shop").Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "report", Namespace: "shop"},
		Spec: batchv1.JobSpec{Suspend: &suspend, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	s.extraPod(t, "report-x1", s.oldNodes[2], &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: &yes}, nil, false)

	var stdout, stderr bytes.Buffer
	if code := cli.Main(s.args(), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	t.Logf("plan:\n%s", stdout.String())
	for _, want := range []string{
		old1 + " is not drained: it holds pods not evicted without a flag: shop/naked (no controller: --force evicts it), shop/precious (cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\": --evict-do-not-disrupt evicts it), shop/scratch (emptyDir data: --delete-emptydir-data evicts it)",
		s.oldNodes[1] + " is not drained: it holds pods not evicted without a flag: shop/pinned (karpenter.sh/do-not-disrupt: \"true\": --evict-do-not-disrupt evicts it)",
		s.oldNodes[2] + ": Job pods evicted, each a failure against its Job's backoffLimit unless the Job's podFailurePolicy ignores DisruptionTarget: shop/report-x1",
		"2 nodes hold pods held back",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the plan lacks %q", want)
		}
	}

	stdout.Reset()
	stderr.Reset()
	code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr)
	t.Logf("rollout without flags: exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want %d", code, cli.ExitFindings)
	}
	if want := old1 + " holds pods the rollout does not evict: shop/naked (no controller: --force evicts it)"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q", want)
	}
	if created, deleted := s.compute.record(); len(created)+len(deleted) > 0 {
		t.Errorf("the MIGs changed: created %v, deleted %v", created, deleted)
	}
	pods, err := s.admin.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			t.Errorf("pod %s is being deleted", p.Name)
		}
		left[p.Name] = true
	}
	for _, name := range []string{"naked", "scratch", "precious", "pinned", "report-x1"} {
		if !left[name] {
			t.Errorf("pod %s is gone", name)
		}
	}
	nodes, _ := s.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			t.Errorf("node %s was cordoned", n.Name)
		}
	}

	stdout.Reset()
	stderr.Reset()
	if code := cli.Main(s.args("--yes", "--force", "--delete-emptydir-data", "--evict-do-not-disrupt"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("rollout with the flags: exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("rollout with the flags:\n%s", stdout.String())
	for _, want := range []string{
		"drains also evict pods without a controller (--force), pods with emptyDir data (--delete-emptydir-data), pods annotated not to be disrupted (--evict-do-not-disrupt)",
		"evicted shop/naked from " + old1, "evicted shop/scratch from " + old1, "evicted shop/precious from " + old1,
		"evicted shop/pinned from " + s.oldNodes[1], "evicted shop/report-x1 from " + s.oldNodes[2],
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	s.checkDone(t)
}

// With onDrainTimeout "force", a drain a PodDisruptionBudget blocks past
// drainTimeout deletes the pods still refused, each with its own grace
// period, and the rollout finishes.
func TestRolloutForcesAfterDrainTimeout(t *testing.T) {
	s := newSetup(t, 0, map[string]string{"rollout.cue": "cluster: rollout: {drainTimeout: \"30s\", onDrainTimeout: \"force\"}\n"})
	ctx := context.Background()
	// Deleting pods is the one right "force" adds.
	if _, err := s.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "nodegen-rollout-force"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nodegen-rollout-force"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "nodegen-rollout-force"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "nodegen-rollout"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitAllowed(t, s.admin, "nodegen-rollout", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods"})
	start := time.Now()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("rollout exit %d\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("rollout (%s):\n%s", time.Since(start).Round(time.Second), stdout.String())
	for _, want := range []string{"drain timeout 30s (then force: delete the pods a budget still protects)", "its eviction was refused for 30s (cluster.rollout.onDrainTimeout: force)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if time.Since(start) < 30*time.Second {
		t.Errorf("the rollout took %s: it forced before the drain timeout", time.Since(start))
	}
	// The deletions were graceful, with the pods' own grace period (30 s,
	// the default terminationGracePeriodSeconds).
	s.obs.mu.Lock()
	for name, g := range s.obs.firstGrace {
		if g != 30 {
			t.Errorf("pod %s was deleted with a grace period of %d s, want its own 30 s", name, g)
		}
	}
	s.obs.mu.Unlock()
	s.checkDone(t)
}
