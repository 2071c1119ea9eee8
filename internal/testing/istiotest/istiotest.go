// Package istiotest renders the official Istio Helm charts in tests, with
// the Helm Go SDK, and installs Istio's CRDs into a test control plane.
//
// The charts come from the Go module istio.io/istio: its small package
// istio.io/istio/manifests embeds manifests/charts (and imports nothing
// but the standard library), so the charts are exactly those of the
// module version in go.mod, with no download at test time.
//
// Render loads a chart from the embedded files, coalesces the chart's
// values with the given ones and validates them against the chart's
// values.schema.json (the gateway chart has one) the way `helm install`
// and `helm template` do, then renders the templates and decodes every
// object. A value the schema rejects fails the test.
package istiotest

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"istio.io/istio/manifests"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// The charts under manifests/charts of istio.io/istio.
const (
	Base    = "base"
	Istiod  = "istio-control/istio-discovery"
	Gateway = "gateway"
)

// CRDsPath is the file of every Istio CRD in the embedded charts: the base
// chart renders the same CRDs from it.
const CRDsPath = "charts/base/files/crd-all.gen.yaml"

// Object is one object a chart rendered, with the YAML it came from.
type Object struct {
	*unstructured.Unstructured
	// Template is the chart template that rendered it.
	Template string
	// YAML is the object's document as rendered.
	YAML string
}

// Objects are a chart's rendered objects in Helm's install order.
type Objects []Object

// Find returns the object of kind and name, or nil.
func (o Objects) Find(kind, name string) *Object {
	for i := range o {
		if o[i].GetKind() == kind && o[i].GetName() == name {
			return &o[i]
		}
	}
	return nil
}

// OfKind returns the objects of kind.
func (o Objects) OfKind(kind string) Objects {
	var out Objects
	for _, obj := range o {
		if obj.GetKind() == kind {
			out = append(out, obj)
		}
	}
	return out
}

// Stream returns the objects as one multi-document YAML stream.
func (o Objects) Stream() string {
	var b strings.Builder
	for _, obj := range o {
		b.WriteString("---\n")
		b.WriteString(obj.YAML)
		if !strings.HasSuffix(obj.YAML, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// KubeVersion is the Kubernetes version the charts are rendered for: the
// version of the test control plane.
const KubeVersion = testcp.KubernetesVersion

// LoadChart loads the chart at dir (one of Base, Istiod, Gateway) from
// the embedded files.
func LoadChart(dir string) (*chart.Chart, error) {
	root := path.Join("charts", dir)
	var files []*loader.BufferedFile
	err := fs.WalkDir(manifests.FS, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(manifests.FS, p)
		if err != nil {
			return err
		}
		files = append(files, &loader.BufferedFile{Name: strings.TrimPrefix(p, root+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	return loader.LoadFiles(files)
}

// RenderChart renders the chart at dir as `helm template --namespace
// namespace releaseName <chart> -f values` would, for KubeVersion, and
// returns its objects in install order. Values that do not meet the
// chart's schema are an error.
func RenderChart(dir, releaseName, namespace string, values map[string]any) (Objects, error) {
	ch, err := LoadChart(dir)
	if err != nil {
		return nil, err
	}
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	top, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	rendered, err := engine.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	for name := range rendered {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(rendered, name)
		}
	}
	hooks, ms, err := releaseutil.SortManifests(rendered, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("chart %s: %d hooks rendered; this helper installs no hooks", dir, len(hooks))
	}
	var objs Objects
	for _, m := range ms {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m.Content), &u.Object); err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", dir, m.Name, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, Object{Unstructured: u, Template: m.Name, YAML: m.Content})
	}
	return objs, nil
}

// Render is RenderChart failing the test on an error.
func Render(t testing.TB, dir, releaseName, namespace string, values map[string]any) Objects {
	t.Helper()
	objs, err := RenderChart(dir, releaseName, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// ValuesFile decodes a Helm values file (YAML) as Helm's -f does.
func ValuesFile(t testing.TB, data []byte) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues(data)
	if err != nil {
		t.Fatalf("values file: %v", err)
	}
	return v
}

// CRDs returns Istio's CRD file from the embedded charts.
func CRDs(t testing.TB) []byte {
	t.Helper()
	b, err := fs.ReadFile(manifests.FS, CRDsPath)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// InstallCRDs creates every Istio CRD in the control plane and waits until
// each is Established, so that objects of their kinds can be created.
func InstallCRDs(t testing.TB, cp *testcp.ControlPlane) {
	t.Helper()
	crds := CRDs(t)
	names, err := crdNames(crds)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("%s holds no CustomResourceDefinition", CRDsPath)
	}
	kubectl(t, cp, crds, "apply", "--server-side", "--field-manager=istiotest", "-f", "-")
	args := []string{"wait", "--for=condition=Established", "--timeout=" + (60 * time.Second).String()}
	for _, n := range names {
		args = append(args, "customresourcedefinition/"+n)
	}
	kubectl(t, cp, nil, args...)
}

// crdNames returns the names of the CustomResourceDefinitions in a stream.
func crdNames(stream []byte) ([]string, error) {
	var names []string
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	for {
		var u unstructured.Unstructured
		if err := d.Decode(&u.Object); err == io.EOF {
			return names, nil
		} else if err != nil {
			return nil, err
		}
		if u.GetKind() == "CustomResourceDefinition" {
			names = append(names, u.GetName())
		}
	}
}

func kubectl(t testing.TB, cp *testcp.ControlPlane, stdin []byte, args ...string) string {
	t.Helper()
	cmd := cp.KubectlCmd(t, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// DryRun creates the YAML stream in the control plane with server-side
// dry-run and strict field validation (dryRun=All, fieldValidation=Strict):
// every object is decoded, defaulted, validated and admitted by the real
// API server, and none is stored. Namespaced objects without a namespace
// go to namespace (when not ""), as `helm install -n namespace` puts them.
// It returns kubectl's error output.
func DryRun(t testing.TB, cp *testcp.ControlPlane, namespace, stream string) error {
	t.Helper()
	args := []string{"create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-"}
	if namespace != "" {
		args = append(args, "--namespace", namespace)
	}
	cmd := cp.KubectlCmd(t, args...)
	cmd.Stdin = strings.NewReader(stream)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v\n%s", err, stderr.String())
	}
	return nil
}

// Create creates the YAML stream in the control plane for real, failing
// the test on an error.
func Create(t testing.TB, cp *testcp.ControlPlane, namespace, stream string) {
	t.Helper()
	args := []string{"create", "-f", "-"}
	if namespace != "" {
		args = append(args, "--namespace", namespace)
	}
	kubectl(t, cp, []byte(stream), args...)
}
