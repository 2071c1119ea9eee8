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
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/revision"
)

// All checks every rendered artifact. The node groups' artifacts are
// checked in parallel; the errors are reported in group order. Each
// artifact is parsed once: a group's kube-env, startup script and
// Terraform file are read by every check of the group that needs them,
// and the GPU Operator's values once for all groups.
func All(src *model.Source, files layout.Files) error {
	cloud := src.CloudGroups()
	flagged := src.ExtraStartupTaints()
	gpu := newGPUValues(files[layout.GPUOperatorValuesPath])
	groupErrs := make([][3]error, len(cloud))
	tfDiags := make(map[string]hcl.Diagnostics, len(cloud))
	tfParsed := make([]hcl.Diagnostics, len(cloud))
	par.Do(len(cloud), func(i int) {
		g := cloud[i]
		env := readKubeEnv(files[layout.KubeEnvPath(g.Name)])
		if err := env.check(g, flagged); err != nil {
			groupErrs[i][0] = &diag.GroupError{Group: g.Name, Path: layout.KubeEnvPath(g.Name), Err: err}
		} else if err := revision.CheckRead(src, g, files[layout.KubeEnvPath(g.Name)], files[layout.StartupScriptPath(g.Name)], env.tmpl); err != nil {
			groupErrs[i][0] = &diag.GroupError{Group: g.Name, Path: layout.KubeEnvPath(g.Name), Err: err}
		}
		// The group's Terraform file, parsed here once for capacity and
		// for the parse check of every .tf file (terraform below).
		tfPath := layout.TerraformGroupPath(g.Name)
		tf, diags := hclsyntax.ParseConfig(files[tfPath], tfPath, hcl.InitialPos)
		tfParsed[i] = diags
		scriptPath := layout.StartupScriptPath(g.Name)
		script, err := parseScript(files[scriptPath])
		if err != nil {
			groupErrs[i][1] = &diag.GroupError{Group: g.Name, Path: scriptPath, Err: err}
			return
		}
		// The script's syntax tree, walked once for the heredocs the
		// checks below read.
		docs := quotedHeredocs(script)
		if err := joinConfiguration(src, g, docs, env, flagged); err != nil {
			groupErrs[i][2] = &diag.GroupError{Group: g.Name, Path: scriptPath, Err: err}
		} else if err := capacity(g, docs, env, gpu, tf, diags); err != nil {
			groupErrs[i][2] = &diag.GroupError{Group: g.Name, Path: scriptPath, Err: err}
		}
	})
	for i, g := range cloud {
		if p := layout.TerraformGroupPath(g.Name); files[p] != nil {
			tfDiags[p] = tfParsed[i]
		}
	}
	var errs []error
	for _, e := range groupErrs {
		errs = append(errs, e[0], e[1], e[2])
	}
	if b := files[layout.OnpremProviderIDPath]; b != nil {
		if _, err := parseScript(b); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", layout.OnpremProviderIDPath, err))
		}
	} else if src.Cluster.SetsOnpremProviderID() {
		errs = append(errs, fmt.Errorf("%s: missing", layout.OnpremProviderIDPath))
	}
	for _, p := range []string{layout.TaintRemoverPath, layout.NodeLifecyclePath, layout.JoinTokenRenewerPath, layout.NodeCSRApproverPath, layout.PriorityExpanderPath} {
		if files[p] == nil && p == layout.JoinTokenRenewerPath && !render.RendersJoinTokenRenewer(src) {
			continue
		}
		if files[p] == nil && p == layout.NodeCSRApproverPath && !render.RendersNodeCSRApprover(src) {
			continue
		}
		if files[p] == nil && p == layout.PriorityExpanderPath && !src.Cluster.Autoscaler.UsesPriority() {
			continue
		}
		if _, err := DecodeObjects(files[p]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	errs = append(errs, terraform(files, tfDiags))
	return errors.Join(errs...)
}

// kubeEnv is a kube-env read once the autoscaler's way
// (kubeenv.ReadTemplate) for every check of its group.
type kubeEnv struct {
	size int
	tmpl *kubeenv.Template
	err  error
}

func readKubeEnv(data []byte) *kubeEnv {
	t, err := kubeenv.ReadTemplate(data)
	return &kubeEnv{size: len(data), tmpl: t, err: err}
}

// check checks that a kube-env value fits in GCE metadata and that the
// autoscaler reads from it exactly the group's labels and taints.
func (e *kubeEnv) check(g *model.NodeGroup, flagged []string) error {
	if e.size > gce.MetadataValueLimit {
		return fmt.Errorf("%d bytes, over GCE's metadata value limit of %d", e.size, gce.MetadataValueLimit)
	}
	if e.err != nil {
		return e.err
	}
	return e.tmpl.MatchesSource(g, flagged...)
}

// parseScript parses a startup script as bash, after checking that it
// fits in GCE metadata.
func parseScript(data []byte) (*syntax.File, error) {
	if len(data) > gce.MetadataValueLimit {
		return nil, fmt.Errorf("%d bytes, over GCE's metadata value limit of %d", len(data), gce.MetadataValueLimit)
	}
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(data), "")
}

// DecodeObjects splits a YAML stream into documents and decodes each one
// strictly (unknown or duplicate fields are errors) into its k8s.io/api
// type. The documents are decoded in parallel.
func DecodeObjects(data []byte) ([]runtime.Object, error) {
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
