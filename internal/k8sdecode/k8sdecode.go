// Package k8sdecode decodes the Kubernetes manifests nodegen writes the
// way a strict client reads them: each document into its k8s.io/api type,
// unknown or duplicate fields being errors.
package k8sdecode

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/par"
)

// Objects splits a YAML stream into documents and decodes each one
// strictly (unknown or duplicate fields are errors) into its k8s.io/api
// type. The documents are decoded in parallel.
func Objects(data []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		docs = append(docs, doc)
	}
	objs := make([]runtime.Object, len(docs))
	errs := make([]error, len(docs))
	par.Do(len(docs), func(i int) { objs[i], errs[i] = decodeObject(docs[i]) })
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// decodeObject decodes one YAML document strictly into its k8s.io/api type.
func decodeObject(doc []byte) (runtime.Object, error) {
	apiVersion, kind, ok := peekTypeMeta(doc)
	if !ok {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, err
		}
		apiVersion, kind = tm.APIVersion, tm.Kind
	}
	obj, err := newObject(apiVersion, kind)
	if err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", apiVersion, kind, err)
	}
	// The peek only picks the type; the strict decode is what counts, and
	// it must agree.
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != kind || gvk.GroupVersion().String() != apiVersion {
		return nil, fmt.Errorf("%s %s: decoded as %s", apiVersion, kind, gvk)
	}
	return obj, nil
}

// peekTypeMeta finds a document's apiVersion and kind, to pick the type to
// decode into, without parsing the whole document: it looks for them as
// unquoted top-level keys. ok is false when either is missing or written
// in any other form; the caller then parses the document.
func peekTypeMeta(doc []byte) (apiVersion, kind string, ok bool) {
	for line := range bytes.Lines(doc) {
		line = bytes.TrimRight(line, "\r\n")
		if k, v, found := bytes.Cut(line, []byte(": ")); found && !bytes.ContainsAny(v, `"'#{}[]&*!|>%@`+"`") {
			switch string(k) {
			case "apiVersion":
				if apiVersion != "" {
					return "", "", false
				}
				apiVersion = string(bytes.TrimSpace(v))
			case "kind":
				if kind != "" {
					return "", "", false
				}
				kind = string(bytes.TrimSpace(v))
			}
		}
	}
	if apiVersion == "" || kind == "" {
		return "", "", false
	}
	return apiVersion, kind, true
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
	case "batch/v1/CronJob":
		return &batchv1.CronJob{}, nil
	case "rbac.authorization.k8s.io/v1/Role":
		return &rbacv1.Role{}, nil
	case "rbac.authorization.k8s.io/v1/RoleBinding":
		return &rbacv1.RoleBinding{}, nil
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
