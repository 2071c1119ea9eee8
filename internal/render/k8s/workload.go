package k8s

import (
	"fmt"
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/templates"
)

// A scriptWorkload is one of nodegen's script jobs in the cluster (the
// taint remover, the node garbage collector, the join-token renewer, the
// node CSR approver): a script shipped in a ConfigMap, run by a
// ServiceAccount of its own in hardened pods (hardenedPod), granted by RBAC
// what the script needs and held by a ValidatingAdmissionPolicy to its
// one job, whatever RBAC grants it. Each object is named after the
// workload.
type scriptWorkload struct {
	model.Workload
	Script string // the script's file in templates/, and its key in the ConfigMap
	// ClusterWide grants Rules with a ClusterRole and ClusterRoleBinding;
	// otherwise with a Role and RoleBinding in Namespace.
	ClusterWide bool
	Rules       []rbacv1.PolicyRule
	// Policy holds the ServiceAccount's requests to the job.
	Policy admissionPolicy
}

// labels are the labels of every object of the workload.
func (w scriptWorkload) labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": w.Name(), "app.kubernetes.io/managed-by": "nodegen"}
}

// meta is the metadata of the workload's objects, in its namespace or
// cluster-scoped.
func (w scriptWorkload) meta(namespaced bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: w.Name(), Labels: w.labels()}
	if namespaced {
		m.Namespace = w.Namespace()
	}
	return m
}

// objects are the workload's objects in the order they are applied: the
// ServiceAccount, its role and binding, the ConfigMap with the script,
// the workloads (DaemonSets, a Deployment or a CronJob running
// hardenedPods), the admission policy and its binding.
func (w scriptWorkload) objects(workloads ...runtime.Object) ([]runtime.Object, error) {
	script, err := templates.FS.ReadFile(w.Script)
	if err != nil {
		return nil, fmt.Errorf("%s: the script %s: %w", w.Workload, w.Script, err)
	}
	const rbac = "rbac.authorization.k8s.io/v1"
	roleKind, bindingKind := "Role", "RoleBinding"
	if w.ClusterWide {
		roleKind, bindingKind = "ClusterRole", "ClusterRoleBinding"
	}
	var role, binding runtime.Object
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: roleKind, Name: w.Name()}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: w.Name(), Namespace: w.Namespace()}}
	if w.ClusterWide {
		role = &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: rbac, Kind: roleKind}, ObjectMeta: w.meta(false), Rules: w.Rules}
		binding = &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbac, Kind: bindingKind}, ObjectMeta: w.meta(false), RoleRef: roleRef, Subjects: subjects}
	} else {
		role = &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: rbac, Kind: roleKind}, ObjectMeta: w.meta(true), Rules: w.Rules}
		binding = &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbac, Kind: bindingKind}, ObjectMeta: w.meta(true), RoleRef: roleRef, Subjects: subjects}
	}
	objs := []runtime.Object{
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: w.meta(true)},
		role,
		binding,
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: w.meta(true),
			Data:       map[string]string{w.Script: string(script)},
		},
	}
	objs = append(objs, workloads...)
	return append(objs, w.Policy.objects(w.meta(false), w.User())...), nil
}

// pod is the hardened pod that runs the workload's script on the nodes
// of group, as the container named container, with env (HOME is added).
func (w scriptWorkload) pod(image, container string, group *model.NodeGroup, env []corev1.EnvVar) hardenedPod {
	return hardenedPod{
		Name: w.Name(), Container: container, Image: image, Script: w.Script, Env: env, Group: group,
		Labels: map[string]string{"app.kubernetes.io/name": w.Name()}, MemoryLimit: "128Mi",
	}
}

// cronJob runs pod on schedule, one run at a time (concurrencyPolicy
// Forbid).
func (w scriptWorkload) cronJob(c cronSchedule, pod hardenedPod) *batchv1.CronJob {
	pod.RestartPolicy = corev1.RestartPolicyNever
	job := batchv1.JobTemplateSpec{
		Spec: batchv1.JobSpec{
			BackoffLimit:          &c.BackoffLimit,
			ActiveDeadlineSeconds: &c.ActiveDeadline,
			Template:              pod.template(),
		},
	}
	if c.LabelJobs {
		job.ObjectMeta.Labels = pod.Labels
	}
	cj := &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: w.meta(true),
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

// cronSchedule is when and how a script CronJob runs.
type cronSchedule struct {
	Schedule          string
	TimeZone          string // empty: the controller's
	StartingDeadline  int64  // seconds
	SuccessfulHistory int32
	FailedHistory     int32
	BackoffLimit      int32
	ActiveDeadline    int64 // seconds
	LabelJobs         bool  // the Jobs carry the pods' labels too
}

// deployment runs one replica of pod, restarted when it exits, never two
// at once (Recreate).
func (w scriptWorkload) deployment(pod hardenedPod) *appsv1.Deployment {
	pod.RestartPolicy = corev1.RestartPolicyAlways
	replicas := int32(1)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: w.meta(true),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Selector: &metav1.LabelSelector{MatchLabels: pod.Labels},
			Template: pod.template(),
		},
	}
}

// daemonSet runs pod on every node of its group, as the DaemonSet name
// whose objects also carry the label app.kubernetes.io/instance=name.
func (w scriptWorkload) daemonSet(name string, pod hardenedPod) *appsv1.DaemonSet {
	labels := w.labels()
	labels["app.kubernetes.io/instance"] = name
	pod.Labels = map[string]string{"app.kubernetes.io/name": w.Name(), "app.kubernetes.io/instance": name}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace(), Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: pod.Labels},
			Template: pod.template(),
		},
	}
}

// A hardenedPod runs one of nodegen's scripts (shipped in the ConfigMap
// Name, mounted read-only at /nodegen) as the ServiceAccount Name on the
// nodes of Group, selected by the verified group label and tolerating the
// group's taints: as nobody, with a read-only root, no capabilities, no
// privilege escalation, the runtime's seccomp profile, and a writable
// /tmp that is also HOME.
type hardenedPod struct {
	Name      string // the ServiceAccount and the script's ConfigMap
	Labels    map[string]string
	Container string
	Image     string
	Script    string // the file name in the ConfigMap
	Env       []corev1.EnvVar
	Group     *model.NodeGroup
	// TunnelLoss are the tolerations of an unreachable or not-ready node
	// (TunnelLossTolerations), after the group's own.
	TunnelLoss    []corev1.Toleration
	RestartPolicy corev1.RestartPolicy
	PriorityClass string
	MemoryLimit   string
	// HostDirs are directories of the node mounted read-only at their own
	// path (created if missing), each a volume of the given name.
	HostDirs    []hostDir
	TmpInMemory bool // /tmp on tmpfs: what passes through it is secret
}

type hostDir struct{ Volume, Path string }

func (p hardenedPod) template() corev1.PodTemplateSpec {
	no, yes := false, true
	nobody := int64(65534)
	mode := int32(0o555)
	env := append(append([]corev1.EnvVar(nil), p.Env...), corev1.EnvVar{Name: "HOME", Value: "/tmp"})
	mounts := []corev1.VolumeMount{{Name: "script", MountPath: "/nodegen", ReadOnly: true}}
	volumes := []corev1.Volume{{Name: "script", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: p.Name}, DefaultMode: &mode}}}}
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	for _, d := range p.HostDirs {
		mounts = append(mounts, corev1.VolumeMount{Name: d.Volume, MountPath: d.Path, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: d.Volume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: d.Path, Type: &dirOrCreate}}})
	}
	tmp := &corev1.EmptyDirVolumeSource{}
	if p.TmpInMemory {
		tmp.Medium = corev1.StorageMediumMemory
	}
	mounts = append(mounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	volumes = append(volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: tmp}})
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: p.Labels},
		Spec: corev1.PodSpec{
			ServiceAccountName: p.Name,
			RestartPolicy:      p.RestartPolicy,
			PriorityClassName:  p.PriorityClass,
			NodeSelector:       map[string]string{model.VerifiedGroupLabel: p.Group.Name},
			Tolerations:        append(manifest.Tolerations(p.Group.JoinTaints()), p.TunnelLoss...),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &yes,
				RunAsUser:      &nobody,
				RunAsGroup:     &nobody,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:    p.Container,
				Image:   p.Image,
				Command: []string{"bash", "/nodegen/" + p.Script},
				Env:     env,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(p.MemoryLimit)},
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: mounts,
			}},
			Volumes: volumes,
		},
	}
}

// An admissionPolicy is a ValidatingAdmissionPolicy that holds one user
// (a ServiceAccount's user name) to its job: every request of that user,
// and only of that user, on the resources of Match must pass Validations,
// and a failing or erroring check denies (failurePolicy Fail).
type admissionPolicy struct {
	Condition   string // the match condition's name
	Match       admissionv1.Rule
	Variables   []admissionv1.Variable
	Validations []admissionv1.Validation
}

// coreResource matches a core resource and its subresources.
func coreResource(resource string) admissionv1.Rule {
	return admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{resource, resource + "/*"}}
}

// everyResource matches every resource and subresource of every API group.
var everyResource = admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}}

// denyUnless is a validation that denies, with the reason Forbidden and
// the message message (a CEL string expression), a request for which
// expr is false.
func denyUnless(expr, message string) admissionv1.Validation {
	forbidden := metav1.StatusReasonForbidden
	return admissionv1.Validation{Expression: expr, MessageExpression: message, Reason: &forbidden}
}

// objects are the policy named meta.Name for user and the binding that
// denies what it rejects.
func (p admissionPolicy) objects(meta metav1.ObjectMeta, user string) []runtime.Object {
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: meta,
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.OperationAll},
						Rule:       p.Match,
					},
				}},
			},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       p.Condition,
				Expression: "request.userInfo.username == " + strconv.Quote(user),
			}},
			Variables:   p.Variables,
			Validations: p.Validations,
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: meta,
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        meta.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return []runtime.Object{policy, binding}
}
