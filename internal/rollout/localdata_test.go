package rollout_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
)

// volumePod creates pod shop/name on node, Running and Ready, controlled
// by the workload's ReplicaSet (so that nothing else holds it), with the
// volumes given.
func (s *setup) volumePod(t *testing.T, name, node string, vols ...corev1.Volume) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "other"}, OwnerReferences: []metav1.OwnerReference{*s.rsOwner()}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, Volumes: vols},
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

// localPV creates a local PersistentVolume on node's disk and the claim
// bound to it, shop/claim.
func (s *setup) localPV(t *testing.T, pv, claim, node string) {
	t.Helper()
	ctx := context.Background()
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}
	class := "local-ssd"
	_, err := s.admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/ssd0"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.admin.CoreV1().PersistentVolumeClaims("shop").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "shop"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class, VolumeName: pv,
			Resources: corev1.VolumeResourceRequirements{Requests: size}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// Pods whose data is on the VM's disks (a PVC bound to a local PV, a
// hostPath volume) are listed in the plan and not evicted without
// --delete-local-volume-data: --yes stops before touching anything; the
// plan says the VMs' disks go with them; with the flag the rollout evicts
// them and finishes. A pod whose claim is bound to a network disk is
// evicted without it.
func TestRolloutHoldsLocalData(t *testing.T) {
	s := newSetup(t, 1, nil)
	ctx := context.Background()
	old1, old2 := s.oldNodes[0], s.oldNodes[1]
	s.localPV(t, "pv-ssd-1", "pg-data", old1)
	claim := func(name string) corev1.Volume {
		return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	s.volumePod(t, "pg-0", old1, claim("pg-data"))
	s.volumePod(t, "cache-0", old2, corev1.Volume{Name: "raid", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/mnt/disks/raid"}}})
	// A claim bound to a PV on a network disk holds nothing.
	if _, err := s.admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-pd-1"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "pd.csi.storage.gke.io", VolumeHandle: "projects/p/zones/z/disks/d"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	empty := ""
	if _, err := s.admin.CoreV1().PersistentVolumeClaims("shop").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "web-data", Namespace: "shop"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &empty, VolumeName: "pv-pd-1",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.volumePod(t, "files-0", s.oldNodes[2], claim("web-data"))

	plan := s.runCLI()
	t.Logf("plan: exit %d\n%s%s", plan.code, plan.stdout, plan.stderr)
	if plan.code != 0 {
		t.Fatalf("plan: exit %d", plan.code)
	}
	for _, want := range []string{
		old1 + " is not drained: it holds pods not evicted without a flag: shop/pg-0 (data on the VM's disks, lost with it: volume data: PVC pg-data bound to local PV pv-ssd-1: --delete-local-volume-data evicts it)",
		old2 + " is not drained: it holds pods not evicted without a flag: shop/cache-0 (data on the VM's disks, lost with it: hostPath volume raid (/mnt/disks/raid): --delete-local-volume-data evicts it)",
		"each replaced or removed node's VM is deleted with its disks (boot disk, local SSDs)",
		"2 nodes hold pods held back",
	} {
		if !strings.Contains(plan.stdout, want) {
			t.Errorf("the plan lacks %q", want)
		}
	}
	if strings.Contains(plan.stdout, "files-0") {
		t.Errorf("the plan holds shop/files-0, whose claim is on a network disk")
	}

	r := s.runCLI("--yes")
	t.Logf("--yes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != cli.ExitFindings || !strings.Contains(r.stderr, old1+" holds pods the rollout does not evict: shop/pg-0 (data on the VM's disks") {
		t.Errorf("exit %d, want the rollout stopped at shop/pg-0", r.code)
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
		if p.DeletionTimestamp == nil {
			left[p.Name] = true
		}
	}
	for _, name := range []string{"pg-0", "cache-0", "files-0"} {
		if !left[name] {
			t.Errorf("pod %s was evicted", name)
		}
	}

	r = s.runCLI("--yes", "--delete-local-volume-data")
	t.Logf("--yes --delete-local-volume-data: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	for _, want := range []string{"drains also evict pods with data on the VM's disks (--delete-local-volume-data)", "evicted shop/pg-0 from " + old1, "evicted shop/cache-0 from " + old2, "evicted shop/files-0 from " + s.oldNodes[2]} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	s.checkDone(t)
}
