package render

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/model"
)

// scriptCronJob is a CronJob that runs one of nodegen's scripts (shipped in
// a ConfigMap of the same name) on the autoscaler's dedicated node, the one
// cloud node whose pods may reach the metadata server: as nobody, with a
// read-only root, no capabilities, and a writable /tmp.
type scriptCronJob struct {
	Name      string // the CronJob, its ServiceAccount and ConfigMap, and the pods' app label
	Container string
	Script    string // the file name in the ConfigMap
	Env       []corev1.EnvVar

	Schedule          string
	TimeZone          string // empty: the controller's
	StartingDeadline  int64  // seconds
	SuccessfulHistory int32
	FailedHistory     int32
	BackoffLimit      int32
	ActiveDeadline    int64 // seconds
	LabelJobTemplate  bool  // the Jobs carry the pods' app label too
	TmpInMemory       bool  // /tmp on tmpfs: what passes through it is secret
	// TunnelLoss are the tolerations of an unreachable or not-ready node
	// (TunnelLossTolerations), after the home group's own.
	TunnelLoss []corev1.Toleration
	Home       *model.NodeGroup
	ObjectMeta metav1.ObjectMeta
}

func (c scriptCronJob) object(image string) *batchv1.CronJob {
	no, yes := false, true
	nobody := int64(65534)
	mode := int32(0o555)
	podLabels := map[string]string{"app.kubernetes.io/name": c.Name}
	job := batchv1.JobTemplateSpec{
		Spec: batchv1.JobSpec{
			BackoffLimit:          &c.BackoffLimit,
			ActiveDeadlineSeconds: &c.ActiveDeadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: c.Name,
					RestartPolicy:      corev1.RestartPolicyNever,
					NodeSelector:       map[string]string{model.VerifiedGroupLabel: c.Home.Name},
					Tolerations:        append(Tolerations(c.Home.JoinTaints()), c.TunnelLoss...),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   &yes,
						RunAsUser:      &nobody,
						RunAsGroup:     &nobody,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    c.Container,
						Image:   image,
						Command: []string{"bash", "/nodegen/" + c.Script},
						Env:     c.Env,
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no,
							ReadOnlyRootFilesystem:   &yes,
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "script", MountPath: "/nodegen", ReadOnly: true},
							{Name: "tmp", MountPath: "/tmp"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "script", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: c.Name}, DefaultMode: &mode}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	if c.LabelJobTemplate {
		job.ObjectMeta.Labels = podLabels
	}
	if c.TmpInMemory {
		job.Spec.Template.Spec.Volumes[1].EmptyDir.Medium = corev1.StorageMediumMemory
	}
	cj := &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: c.ObjectMeta,
		Spec: batchv1.CronJobSpec{
			Schedule:                   c.Schedule,
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			StartingDeadlineSeconds:    &c.StartingDeadline,
			SuccessfulJobsHistoryLimit: &c.SuccessfulHistory,
			FailedJobsHistoryLimit:     &c.FailedHistory,
			JobTemplate:                job,
		},
	}
	if c.TimeZone != "" {
		cj.Spec.TimeZone = &c.TimeZone
	}
	return cj
}
