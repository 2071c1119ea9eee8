package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

// The names the docs' and the mesh's renderers share with the manifests,
// until each is a package of its own that asks model and manifest.
const (
	CloudBootstrapGroup       = model.CloudBootstrapGroup
	kubeadmNodeBootstrapGroup = model.KubeadmNodeBootstrapGroup
	KubeletClientSigner       = model.KubeletClientSigner
	JoinTokenRenewerName      = string(model.JoinTokenRenewer)
	JoinTokenRenewerNamespace = model.WorkloadNamespace
)

// TaintRemoverDaemonSetName is the name of a group's taint-remover DaemonSet.
func TaintRemoverDaemonSetName(g *model.NodeGroup) string { return g.TaintRemoverDaemonSet() }

// Tolerations is manifest.Tolerations.
func Tolerations(taints []model.Taint) []corev1.Toleration { return manifest.Tolerations(taints) }

// TunnelLossTolerations is manifest.TunnelLossTolerations.
func TunnelLossTolerations(c *model.Cluster) []corev1.Toleration {
	return manifest.TunnelLossTolerations(c)
}

// MarshalObjects is manifest.MarshalObjects.
func MarshalObjects(header string, objs []runtime.Object) ([]byte, error) {
	return manifest.MarshalObjects(header, objs)
}

func marshalValues(header string, v any) ([]byte, error) { return manifest.MarshalValues(header, v) }
