// Package verify re-reads rendered artifacts the way their consumers do,
// so that nodegen never writes a file its consumer would reject or read
// differently from the source.
package verify

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
)

// MetadataValueLimit is GCE's limit on one metadata value (256 KiB).
const MetadataValueLimit = 256 * 1024

// All checks every rendered artifact.
func All(src *model.Source, files render.Files) error {
	var errs []error
	for _, g := range src.Groups() {
		if !g.Cloud() {
			continue
		}
		if err := KubeEnv(g, files[render.KubeEnvPath(g.Name)], render.ExtraStartupTaints(src)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", render.KubeEnvPath(g.Name), err))
		}
		if err := Script(files[render.StartupScriptPath(g.Name)]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", render.StartupScriptPath(g.Name), err))
		}
	}
	for _, p := range []string{render.TaintRemoverPath} {
		if _, err := DecodeObjects(files[p]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	errs = append(errs, Terraform(files))
	return errors.Join(errs...)
}

// KubeEnv checks that a kube-env value fits in GCE metadata and that the
// autoscaler reads from it exactly the group's labels and taints.
func KubeEnv(g *model.NodeGroup, data []byte, flagged []string) error {
	if len(data) > MetadataValueLimit {
		return fmt.Errorf("%d bytes, over GCE's metadata value limit of %d", len(data), MetadataValueLimit)
	}
	t, err := kubeenv.ReadTemplate(data)
	if err != nil {
		return err
	}
	if !maps.Equal(t.Labels, g.NodeLabels) {
		return fmt.Errorf("the autoscaler would read labels %v, want %v", t.Labels, g.NodeLabels)
	}
	got := t.SanitizedTaints(flagged...)
	want := make([]kubeenv.Taint, 0, len(g.Taints))
	for _, tt := range g.Taints {
		want = append(want, kubeenv.Taint{Key: tt.Key, Value: tt.Value, Effect: tt.Effect})
	}
	slices.SortFunc(want, func(a, b kubeenv.Taint) int { return strings.Compare(a.Key, b.Key) })
	if !slices.Equal(got, want) {
		return fmt.Errorf("the autoscaler would read taints %v, want %v", got, want)
	}
	return nil
}

// Script checks that a startup script parses as bash and fits in GCE metadata.
func Script(data []byte) error {
	if len(data) > MetadataValueLimit {
		return fmt.Errorf("%d bytes, over GCE's metadata value limit of %d", len(data), MetadataValueLimit)
	}
	_, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(data), "")
	return err
}

// DecodeObjects splits a YAML stream into documents and decodes each one
// strictly (unknown or duplicate fields are errors) into its k8s.io/api type.
func DecodeObjects(data []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, err
		}
		obj, err := newObject(tm.APIVersion, tm.Kind)
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
		}
		out = append(out, obj)
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func newObject(apiVersion, kind string) (runtime.Object, error) {
	switch apiVersion + "/" + kind {
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Pod":
		return &corev1.Pod{}, nil
	case "apps/v1/DaemonSet":
		return &appsv1.DaemonSet{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "rbac.authorization.k8s.io/v1/ClusterRole":
		return &rbacv1.ClusterRole{}, nil
	case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}, nil
	case "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy":
		return &admissionv1.ValidatingAdmissionPolicy{}, nil
	case "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding":
		return &admissionv1.ValidatingAdmissionPolicyBinding{}, nil
	}
	return nil, fmt.Errorf("unexpected object %s %s", apiVersion, kind)
}
