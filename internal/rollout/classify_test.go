package rollout

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// classify follows kubectl drain's filters (k8s.io/kubectl v0.37.2
// pkg/drain/filters.go) and the autoscalers' annotations, pod by pod.
func TestClassify(t *testing.T) {
	yes := true
	owner := func(apiVersion, kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "o", UID: "u", Controller: &yes}}
	}
	emptyDir := []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod := func(owners []metav1.OwnerReference, ann map[string]string, vols []corev1.Volume, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: owners, Annotations: ann},
			Spec: corev1.PodSpec{Volumes: vols}, Status: corev1.PodStatus{Phase: phase}}
	}
	hostPath := []corev1.Volume{{Name: "raid", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/mnt/disks/raid"}}}}
	claim := func(name string) []corev1.Volume {
		return []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	}
	ephemeral := []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
	local := LocalClaims{"ns/pg-data": "local PV pv-1", "ns/p-scratch": "local PV pv-2"}
	safeRaid := map[string]string{SafeToEvictLocalVolumesAnnotation: "other, raid"}
	rs := owner("apps/v1", "ReplicaSet")
	all := DrainOptions{Force: true, DeleteEmptyDirData: true, EvictDoNotDisrupt: true}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		opts DrainOptions
		want podAction
		flag string
	}{
		{"ReplicaSet pod", pod(rs, nil, nil, corev1.PodRunning), DrainOptions{}, podEvicted, ""},
		{"DaemonSet pod", pod(owner("apps/v1", "DaemonSet"), nil, nil, corev1.PodRunning), all, podLeft, ""},
		{"finished DaemonSet pod", pod(owner("apps/v1", "DaemonSet"), nil, nil, corev1.PodSucceeded), DrainOptions{}, podEvicted, ""},
		{"mirror pod", pod(nil, map[string]string{corev1.MirrorPodAnnotationKey: "x"}, nil, corev1.PodRunning), all, podLeft, ""},
		{"no controller", pod(nil, nil, nil, corev1.PodRunning), DrainOptions{}, podHeld, "--force"},
		{"no controller, --force", pod(nil, nil, nil, corev1.PodRunning), DrainOptions{Force: true}, podEvicted, ""},
		{"no controller, finished", pod(nil, nil, nil, corev1.PodFailed), DrainOptions{}, podEvicted, ""},
		{"emptyDir", pod(rs, nil, emptyDir, corev1.PodRunning), DrainOptions{}, podHeld, "--delete-emptydir-data"},
		{"emptyDir, --delete-emptydir-data", pod(rs, nil, emptyDir, corev1.PodRunning), DrainOptions{DeleteEmptyDirData: true}, podEvicted, ""},
		{"emptyDir without a controller", pod(nil, nil, emptyDir, corev1.PodRunning), DrainOptions{}, podHeld, "--delete-emptydir-data --force"},
		{"safe-to-evict false", pod(rs, map[string]string{SafeToEvictAnnotation: "false"}, nil, corev1.PodRunning), DrainOptions{}, podHeld, "--evict-do-not-disrupt"},
		{"safe-to-evict true", pod(rs, map[string]string{SafeToEvictAnnotation: "true"}, nil, corev1.PodRunning), DrainOptions{}, podEvicted, ""},
		{"do-not-disrupt", pod(rs, map[string]string{DoNotDisruptAnnotation: "true"}, nil, corev1.PodRunning), DrainOptions{}, podHeld, "--evict-do-not-disrupt"},
		{"do-not-disrupt, --evict-do-not-disrupt", pod(rs, map[string]string{DoNotDisruptAnnotation: "true"}, nil, corev1.PodRunning), DrainOptions{EvictDoNotDisrupt: true}, podEvicted, ""},
		{"Job pod", pod(owner("batch/v1", "Job"), nil, nil, corev1.PodRunning), DrainOptions{}, podEvicted, ""},
		{"hostPath", pod(rs, nil, hostPath, corev1.PodRunning), all, podHeld, "--delete-local-volume-data"},
		{"hostPath, --delete-local-volume-data", pod(rs, nil, hostPath, corev1.PodRunning), DrainOptions{DeleteLocalVolumeData: true}, podEvicted, ""},
		{"hostPath named safe-to-evict-local-volumes", pod(rs, safeRaid, hostPath, corev1.PodRunning), DrainOptions{}, podEvicted, ""},
		{"claim bound to a local PV", pod(rs, nil, claim("pg-data"), corev1.PodRunning), all, podHeld, "--delete-local-volume-data"},
		{"claim bound to another PV", pod(rs, nil, claim("web-data"), corev1.PodRunning), DrainOptions{}, podEvicted, ""},
		{"generic ephemeral volume on a local PV", pod(rs, nil, ephemeral, corev1.PodRunning), DrainOptions{}, podHeld, "--delete-local-volume-data"},
		{"hostPath, finished", pod(rs, nil, hostPath, corev1.PodSucceeded), DrainOptions{}, podEvicted, ""},
	} {
		got, held := classify(c.pod, c.opts, local)
		if got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		switch {
		case held == nil && c.flag != "":
			t.Errorf("%s: not held, want flag %q", c.name, c.flag)
		case held != nil && held.Flag != c.flag:
			t.Errorf("%s: held for %q (flag %q), want flag %q", c.name, held.Reason, held.Flag, c.flag)
		}
	}
	if !isJobPod(pod(owner("batch/v1", "Job"), nil, nil, corev1.PodRunning)) || isJobPod(pod(rs, nil, nil, corev1.PodRunning)) {
		t.Errorf("isJobPod")
	}
}
