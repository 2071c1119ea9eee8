package render

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

// ValidationsDir is where the GPU Operator's validator writes its status
// files, which the taint remover reads.
const ValidationsDir = "/run/nvidia/validations"

// taintRemover is the taint remover's workload: a ClusterRole allowed
// only to get and patch nodes, and the ValidatingAdmissionPolicy that
// narrows what its ServiceAccount may do to a node down to removing that
// node's startup taint (taintRemoverPolicy).
func taintRemover(src *model.Source) scriptWorkload {
	return scriptWorkload{
		Workload: model.TaintRemover, Script: "taint-remover.sh", ClusterWide: true,
		Rules:  []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}},
		Policy: taintRemoverPolicy(src),
	}
}

// TaintRemoverObjects returns the taint remover's objects
// (scriptWorkload.objects), with one DaemonSet per GPU group.
func TaintRemoverObjects(src *model.Source) ([]runtime.Object, error) {
	w := taintRemover(src)
	var ds []runtime.Object
	for _, g := range src.GPUGroups() {
		ds = append(ds, w.daemonSet(g.TaintRemoverDaemonSet(), taintRemoverPod(w, src.Cluster.TaintRemover.Image, g)))
	}
	return w.objects(ds...)
}

// taintRemoverPod runs on each node of the GPU group g, tolerating its
// taints (the startup taint included), and reads the GPU Operator's
// validation status files.
func taintRemoverPod(w scriptWorkload, image string, g *model.NodeGroup) hardenedPod {
	pod := w.pod(image, "taint-remover", g, []corev1.EnvVar{
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "STARTUP_TAINT_KEY", Value: g.StartupTaint.Key},
		{Name: "STARTUP_TAINT_VALUE", Value: g.StartupTaint.Value},
		{Name: "STARTUP_TAINT_EFFECT", Value: g.StartupTaint.Effect},
		{Name: "GPU_COUNT", Value: strconv.Itoa(g.AdvertisedGPUs())},
		{Name: "VALIDATIONS_DIR", Value: ValidationsDir},
	})
	pod.PriorityClass = "system-node-critical"
	pod.MemoryLimit = "64Mi"
	pod.HostDirs = []hostDir{{Volume: "validations", Path: ValidationsDir}}
	return pod
}

// TaintRemover renders the taint remover's manifests.
func TaintRemover(src *model.Source, header string) ([]byte, error) {
	objs, err := TaintRemoverObjects(src)
	if err != nil {
		return nil, err
	}
	return manifest.MarshalObjects(header, objs)
}

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
				out = append(out, manifest.Tolerations([]model.Taint{t})...)
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
	return manifest.MarshalValues(header, values)
}
