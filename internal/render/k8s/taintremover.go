package k8s

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

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

// taintRemoverObjects returns the taint remover's objects
// (scriptWorkload.objects), with one DaemonSet per GPU group.
func taintRemoverObjects(src *model.Source) ([]runtime.Object, error) {
	w := taintRemover(src)
	var ds []runtime.Object
	for _, g := range src.GPUGroups() {
		ds = append(ds, w.daemonSet(g.TaintRemoverDaemonSet(), taintRemoverPod(w, src.Cluster.TaintRemover.Image, g)))
	}
	return w.objects(ds...)
}

// taintRemoverPod runs on each node of the GPU group g, tolerating its
// taints (the startup taint included), and reads the GPU Operator's
// validation status files: the node's model.GPUValidationsDir, mounted at
// the same path, which is the script's constant VALIDATIONS_DIR.
func taintRemoverPod(w scriptWorkload, image string, g *model.NodeGroup) hardenedPod {
	pod := w.pod(image, "taint-remover", g, []corev1.EnvVar{
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "STARTUP_TAINT_KEY", Value: g.StartupTaint.Key},
		{Name: "STARTUP_TAINT_VALUE", Value: g.StartupTaint.Value},
		{Name: "STARTUP_TAINT_EFFECT", Value: g.StartupTaint.Effect},
		{Name: "GPU_COUNT", Value: strconv.Itoa(g.AdvertisedGPUs())},
	})
	pod.PriorityClass = "system-node-critical"
	pod.MemoryLimit = "64Mi"
	pod.HostDirs = []hostDir{{Volume: "validations", Path: model.GPUValidationsDir}}
	return pod
}

// taintRemoverFile renders the taint remover's manifests.
func taintRemoverFile(src *model.Source, header string) ([]byte, error) {
	objs, err := taintRemoverObjects(src)
	if err != nil {
		return nil, err
	}
	return manifest.MarshalObjects(header, objs)
}
