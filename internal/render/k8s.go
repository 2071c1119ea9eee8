package render

import (
	"time"

	"bytes"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
	"github.com/nodegen/nodegen/internal/yamlout"
	"github.com/nodegen/nodegen/templates"
)

// Taint remover names.
const (
	TaintRemoverNamespace = "kube-system"
	TaintRemoverName      = "nodegen-taint-remover"
	// ValidationsDir is where the GPU Operator's validator writes its status files.
	ValidationsDir = "/run/nvidia/validations"
)

// TaintRemoverScript returns the script the taint remover runs.
func TaintRemoverScript() []byte {
	b, err := templates.FS.ReadFile("taint-remover.sh")
	if err != nil {
		panic(err) // embedded at build time
	}
	return b
}

// TaintRemoverObjects returns the taint remover's objects: a ServiceAccount,
// a ClusterRole allowed only to get and patch nodes, its binding, the
// ConfigMap holding the script, one DaemonSet per GPU group, and the
// ValidatingAdmissionPolicy and binding that narrow what the ServiceAccount
// may do to a node down to removing that node's startup taint.
func TaintRemoverObjects(src *model.Source) []runtime.Object {
	labels := map[string]string{"app.kubernetes.io/name": TaintRemoverName, "app.kubernetes.io/managed-by": "nodegen"}
	meta := func(name string, namespaced bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Labels: labels}
		if namespaced {
			m.Namespace = TaintRemoverNamespace
		}
		return m
	}
	objs := []runtime.Object{
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(TaintRemoverName, true),
		},
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: meta(TaintRemoverName, false),
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""},
				Resources: []string{"nodes"},
				Verbs:     []string{"get", "patch"},
			}},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(TaintRemoverName, false),
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: TaintRemoverName},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: TaintRemoverName, Namespace: TaintRemoverNamespace}},
		},
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: meta(TaintRemoverName, true),
			Data:       map[string]string{"taint-remover.sh": string(TaintRemoverScript())},
		},
	}
	for _, g := range src.GPUGroups() {
		objs = append(objs, taintRemoverDaemonSet(src.Cluster.TaintRemover.Image, g, labels))
	}
	return append(objs, taintRemoverPolicy(src, meta(TaintRemoverName, false))...)
}

// TaintRemoverDaemonSetName is the name of a group's taint-remover DaemonSet.
func TaintRemoverDaemonSetName(g *model.NodeGroup) string { return TaintRemoverName + "-" + g.Name }

// TunnelLossTolerations are the tolerations of the node lifecycle
// controller's NoExecute taints node.kubernetes.io/unreachable and
// node.kubernetes.io/not-ready for the cluster's tunnelLossToleration,
// which the pods nodegen renders for the cloud nodes carry: without them
// the API server's DefaultTolerationSeconds admission gives them 300s
// (kubernetes/kubernetes v1.35.0,
// plugin/pkg/admission/defaulttolerationseconds/admission.go). nil
// without a VPN.
func TunnelLossTolerations(c *model.Cluster) []corev1.Toleration {
	d := c.TunnelLossToleration()
	if d == 0 {
		return nil
	}
	secs := int64(d / time.Second)
	out := make([]corev1.Toleration, 0, 2)
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs})
	}
	return out
}

// Tolerations returns tolerations that tolerate exactly the given taints.
func Tolerations(taints []model.Taint) []corev1.Toleration {
	out := make([]corev1.Toleration, 0, len(taints))
	for _, t := range taints {
		out = append(out, corev1.Toleration{
			Key:      t.Key,
			Operator: corev1.TolerationOpEqual,
			Value:    t.Value,
			Effect:   corev1.TaintEffect(t.Effect),
		})
	}
	return out
}

func taintRemoverDaemonSet(image string, g *model.NodeGroup, common map[string]string) *appsv1.DaemonSet {
	name := TaintRemoverDaemonSetName(g)
	podLabels := map[string]string{"app.kubernetes.io/name": TaintRemoverName, "app.kubernetes.io/instance": name}
	labels := map[string]string{"app.kubernetes.io/instance": name}
	for k, v := range common {
		labels[k] = v
	}
	no, yes := false, true
	nobody := int64(65534)
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	mode := int32(0o555)
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: TaintRemoverNamespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: TaintRemoverName,
					PriorityClassName:  "system-node-critical",
					NodeSelector:       map[string]string{model.VerifiedGroupLabel: g.Name},
					Tolerations:        Tolerations(g.JoinTaints()),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   &yes,
						RunAsUser:      &nobody,
						RunAsGroup:     &nobody,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    "taint-remover",
						Image:   image,
						Command: []string{"bash", "/nodegen/taint-remover.sh"},
						Env: []corev1.EnvVar{
							{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
							{Name: "STARTUP_TAINT_KEY", Value: g.StartupTaint.Key},
							{Name: "STARTUP_TAINT_VALUE", Value: g.StartupTaint.Value},
							{Name: "STARTUP_TAINT_EFFECT", Value: g.StartupTaint.Effect},
							{Name: "GPU_COUNT", Value: strconv.Itoa(g.AdvertisedGPUs())},
							{Name: "VALIDATIONS_DIR", Value: ValidationsDir},
							{Name: "HOME", Value: "/tmp"},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no,
							ReadOnlyRootFilesystem:   &yes,
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "script", MountPath: "/nodegen", ReadOnly: true},
							{Name: "validations", MountPath: ValidationsDir, ReadOnly: true},
							{Name: "tmp", MountPath: "/tmp"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "script", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: TaintRemoverName}, DefaultMode: &mode}}},
						{Name: "validations", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: ValidationsDir, Type: &dirOrCreate}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

// TaintRemover renders the taint remover's manifests.
func TaintRemover(src *model.Source, header string) ([]byte, error) {
	return MarshalObjects(header, TaintRemoverObjects(src))
}

// MarshalObjects renders objects as a multi-document YAML stream, each
// without its status. The objects are marshalled in parallel.
func MarshalObjects(header string, objs []runtime.Object) ([]byte, error) {
	docs := make([][]byte, len(objs))
	errs := make([]error, len(objs))
	par.Do(len(objs), func(i int) { docs[i], errs[i] = marshalObject(objs[i]) })
	var b bytes.Buffer
	size := len(header)
	for _, d := range docs {
		size += len("---\n") + len(d)
	}
	b.Grow(size)
	b.WriteString(header)
	for i, d := range docs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		b.WriteString("---\n")
		b.Write(d)
	}
	return b.Bytes(), nil
}

// marshalObject renders one object as YAML, without its status.
func marshalObject(o runtime.Object) ([]byte, error) { return yamlout.MarshalWithout(o, "status") }

// GPUOperatorTolerations are the tolerations the GPU Operator's operands
// and NFD workers need on the GPU groups' nodes: the operator's default
// nvidia.com/gpu toleration plus every taint of every GPU group, the
// startup taints included. Without them the operator never validates a
// tainted node and its startup taint is never removed.
func GPUOperatorTolerations(src *model.Source) []corev1.Toleration {
	out := []corev1.Toleration{{Key: model.GPUResource, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	for _, g := range src.GPUGroups() {
		for _, t := range g.JoinTaints() {
			taint := &corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
			if !corev1helpers.TolerationsTolerateTaint(klog.Background(), out, taint, false) {
				out = append(out, Tolerations([]model.Taint{t})...)
			}
		}
	}
	return out
}

// GPUOperatorValues renders the GPU Operator Helm values.
func GPUOperatorValues(src *model.Source, header string) ([]byte, error) {
	tols := GPUOperatorTolerations(src)
	nfd := append([]corev1.Toleration{{
		Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpEqual, Value: "", Effect: corev1.TaintEffectNoSchedule,
	}}, tols...)
	values := map[string]any{
		"daemonsets":             map[string]any{"tolerations": tols},
		"node-feature-discovery": map[string]any{"worker": map[string]any{"tolerations": nfd}},
	}
	dp, err := devicePluginValues(src)
	if err != nil {
		return nil, err
	}
	if dp != nil {
		values["devicePlugin"] = dp
	}
	return marshalValues(header, values)
}

func marshalValues(header string, v any) ([]byte, error) {
	y, err := yamlout.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal values: %w", err)
	}
	return append([]byte(header), y...), nil
}
