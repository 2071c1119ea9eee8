// Package manifest writes Kubernetes objects and Helm values files as
// nodegen renders them: tolerations of the source's taints, the
// tolerations of a lost tunnel, a stream of objects, values after the
// generated-file header.
package manifest

import (
	"bytes"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
	"github.com/nodegen/nodegen/internal/yamlout"
)

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

// MarshalObjects renders objects as a multi-document YAML stream after
// header, each without its status. The objects are marshalled in
// parallel.
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

// MarshalValues renders a Helm values file: header, then v as YAML.
func MarshalValues(header string, v any) ([]byte, error) {
	y, err := yamlout.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal values: %w", err)
	}
	return append([]byte(header), y...), nil
}
