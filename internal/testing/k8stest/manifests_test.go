package k8stest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

// helmValues lists, for each Helm values file nodegen writes, where its
// Kubernetes fragments are and which Pod spec field the chart puts them in.
var helmValues = map[string]map[string]string{
	layout.GPUOperatorValuesPath: {
		"daemonsets.tolerations":                    "tolerations",
		"node-feature-discovery.worker.tolerations": "tolerations",
	},
	layout.AutoscalerValuesPath: {
		"nodeSelector": "nodeSelector",
		"tolerations":  "tolerations",
	},
}

// monitoringObjects are the out/ files of prometheus-operator's custom
// resources: created against its CRDs (testdata/prometheus-operator,
// prometheus-operator v0.93.0 example/prometheus-operator-crd/) after a
// strict decode into its Go types.
var monitoringObjects = map[string]bool{
	layout.MonitoringPrometheusRulePath: true,
	layout.MonitoringServiceMonitorPath: true,
}

// promRuleFiles are Prometheus rule files, which no API server reads:
// package render's TestMonitoringRulesPromtool has promtool check and
// test them.
var promRuleFiles = map[string]bool{layout.MonitoringRulesPath: true}

// valuesNamespace is the fresh namespace for the Pods that carry the Helm
// values' fragments.
const valuesNamespace = "nodegen-helm-values"

// committedYAML reads every YAML file under the committed out/ and sorts
// it into Kubernetes manifests (every document decodes strictly into a
// known k8s.io/api type) and known Helm values files. Anything else fails
// the test, so a new YAML artifact cannot escape the server's checks.
func (e *env) committedYAML(t *testing.T) (manifests, values, custom map[string][]byte) {
	t.Helper()
	manifests, values, custom = map[string][]byte{}, map[string][]byte{}, map[string][]byte{}
	out := filepath.Join(e.root, "out")
	err := filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return err
		}
		rel, err := filepath.Rel(out, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if slices.Contains(calicoFiles, rel) {
			return nil // custom resources: testCalico
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, ok := helmValues[rel]; ok {
			values[rel] = b
		} else if monitoringObjects[rel] {
			custom[rel] = b
		} else if promRuleFiles[rel] {
			return nil
		} else if _, derr := k8sdecode.Objects(b); derr == nil {
			manifests[rel] = b
		} else {
			t.Errorf("out/%s: neither Kubernetes objects (%v) nor a known Helm values file; say how the server should check it", rel, derr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return manifests, values, custom
}

func (e *env) testManifests(t *testing.T) {
	manifests, values, custom := e.committedYAML(t)
	if manifests[layout.TaintRemoverPath] == nil {
		t.Fatalf("no %s among the committed manifests %v", layout.TaintRemoverPath, model.SortedKeys(manifests))
	}
	if len(values) != len(helmValues) {
		t.Errorf("committed Helm values files %v, want %v", model.SortedKeys(values), model.SortedKeys(helmValues))
	}
	t.Run("DryRunThenCreate", func(t *testing.T) {
		for _, path := range model.SortedKeys(manifests) {
			e.createManifest(t, path, manifests[path])
		}
	})
	t.Run("HelmValuesFragments", func(t *testing.T) {
		e.admin(t, "", "create", "namespace", valuesNamespace)
		for _, path := range model.SortedKeys(values) {
			e.createValuesPods(t, path, values[path])
		}
	})
	t.Run("MonitoringCustomResources", func(t *testing.T) {
		if len(custom) != len(monitoringObjects) {
			t.Errorf("committed monitoring objects %v, want %v", model.SortedKeys(custom), model.SortedKeys(monitoringObjects))
		}
		e.installMonitoringCRDs(t)
		for _, path := range model.SortedKeys(custom) {
			e.createCustom(t, path, custom[path])
		}
	})
	t.Run("BrokenManifestsAreRejected", func(t *testing.T) {
		e.testBroken(t, manifests[layout.TaintRemoverPath])
	})
	t.Run("Calico", e.testCalico)
}

// objectNames returns kubectl's "-o name" for each object:
// kind[.group]/name, kind in lower case.
func objectNames(t *testing.T, objs []runtime.Object) []string {
	t.Helper()
	var names []string
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		kind := strings.ToLower(gvk.Kind)
		if gvk.Group != "" {
			kind += "." + gvk.Group
		}
		names = append(names, kind+"/"+m.GetName())
	}
	return names
}

func lines(s string) []string { return strings.Fields(s) }

// createManifest creates every object of a manifest file with server-side
// dry-run (strict field validation), then for real, then reads them back.
//
// The objects keep their namespace, kube-system, as `kubectl apply -f
// out/k8s/` creates them: the ClusterRoleBinding's subject and the user
// the policy matches name kube-system too, so moving the namespaced
// objects elsewhere would test objects nodegen does not ship. Here
// kube-system is as fresh as a new namespace: the control plane, etcd
// included, is this test binary's own, and nothing else writes to it.
// (The Helm values' fragments carry no namespace; their Pods go to a
// fresh one.)
func (e *env) createManifest(t *testing.T, path string, data []byte) {
	t.Helper()
	objs, err := k8sdecode.Objects(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	want := objectNames(t, objs)
	for _, step := range [][]string{
		{"create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-"},
		{"create", "--validate=strict", "-o", "name", "-f", "-"},
		{"get", "-o", "name", "-f", "-"},
	} {
		out, _, err := kubectl(t, e.cp.Admin(), string(data), step...)
		if err != nil {
			t.Fatalf("%s: the server rejected it: %v", path, err)
		}
		if got := lines(out); !slices.Equal(got, want) {
			t.Fatalf("%s: kubectl %s: objects %v, want %v", path, strings.Join(step, " "), got, want)
		}
	}
}

// createValuesPods puts each Kubernetes fragment of a Helm values file
// into the Pod spec field the chart puts it in, and creates that Pod
// (dry-run, then for real) in a fresh namespace. The fragment goes in as
// the raw JSON of the values, so the server, not a Go type, judges it.
func (e *env) createValuesPods(t *testing.T, path string, data []byte) {
	t.Helper()
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	fragments := helmValues[path]
	if fragments == nil {
		t.Fatalf("%s: not a known values file", path)
	}
	for _, at := range model.SortedKeys(fragments) {
		var v any = values
		for _, k := range strings.Split(at, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if v == nil {
			t.Errorf("%s: no %s", path, at)
			continue
		}
		name := strings.NewReplacer(".", "-", "/", "-").Replace(strings.ToLower(strings.TrimSuffix(filepath.Base(path), ".yaml") + "-" + at))
		spec := map[string]any{
			"containers":  []any{map[string]any{"name": "c", "image": "registry.k8s.io/pause:3.10"}},
			fragments[at]: v,
		}
		ns := valuesNamespace
		if path == layout.AutoscalerValuesPath {
			// The chart's pods run in the release's namespace (the day-0
			// steps' helm --namespace) as the ServiceAccount of
			// rbac.serviceAccount.name; only such pods may tolerate the
			// autoscaler's nodes (out/k8s/autoscaler-node.yaml).
			rbac, _ := values["rbac"].(map[string]any)
			sa, _ := rbac["serviceAccount"].(map[string]any)
			spec["serviceAccountName"] = sa["name"]
			ns = e.src.Cluster.Autoscaler.Namespace
		}
		pod := map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     spec,
		}
		b, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"create", "--dry-run=server", "--validate=strict", "-f", "-"},
			{"create", "--validate=strict", "-f", "-"},
		} {
			if _, _, err := kubectl(t, e.cp.Admin(), string(b), args...); err != nil {
				t.Errorf("%s: %s as a Pod's %s: %v", path, at, fragments[at], err)
			}
		}
	}
}

// serverCheck creates a YAML stream with server-side dry-run and strict
// field validation, the first step of createManifest.
func (e *env) serverCheck(t *testing.T, data []byte) error {
	t.Helper()
	_, _, err := kubectl(t, e.cp.Admin(), string(data), "create", "--dry-run=server", "--validate=strict", "-f", "-")
	return err
}

// testBroken breaks one object of the taint remover's manifest at a time
// and checks that the server check rejects it for that reason, while the
// same object unbroken (under the same fresh name) passes.
func (e *env) testBroken(t *testing.T, data []byte) {
	objs, err := k8sdecode.Objects(data)
	if err != nil {
		t.Fatal(err)
	}
	find := func(kind string) runtime.Object {
		for _, o := range objs {
			if o.GetObjectKind().GroupVersionKind().Kind == kind {
				return o.DeepCopyObject()
			}
		}
		t.Fatalf("no %s in %s", kind, layout.TaintRemoverPath)
		return nil
	}
	cases := []struct {
		name, kind string
		breakIt    func(runtime.Object)
		raw        func(map[string]any) // applied to the JSON form, after breakIt
		want       string
	}{
		{
			name: "DaemonSetSelectorMissesTemplate", kind: "DaemonSet",
			breakIt: func(o runtime.Object) {
				o.(*appsv1.DaemonSet).Spec.Selector.MatchLabels["app.kubernetes.io/instance"] = "another"
			},
			want: "selector` does not match template `labels`",
		},
		{
			name: "TolerationOperatorNotAnEnumValue", kind: "DaemonSet",
			breakIt: func(o runtime.Object) {
				o.(*appsv1.DaemonSet).Spec.Template.Spec.Tolerations[0].Operator = "Sometimes"
			},
			want: `Unsupported value: "Sometimes"`,
		},
		{
			name: "UnknownField", kind: "DaemonSet",
			raw: func(m map[string]any) {
				m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["nodeSelectr"] = map[string]any{}
			},
			want: `unknown field "spec.template.spec.nodeSelectr"`,
		},
		{
			name: "PolicyCELSyntaxError", kind: "ValidatingAdmissionPolicy",
			breakIt: func(o runtime.Object) {
				v := &o.(*admissionv1.ValidatingAdmissionPolicy).Spec.Validations[0]
				v.Expression = "variables.update &&"
			},
			want: "compilation failed",
		},
		{
			name: "BindingActionNotAnEnumValue", kind: "ValidatingAdmissionPolicyBinding",
			breakIt: func(o runtime.Object) {
				o.(*admissionv1.ValidatingAdmissionPolicyBinding).Spec.ValidationActions = []admissionv1.ValidationAction{"Block"}
			},
			want: `Unsupported value: "Block"`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			encode := func(o runtime.Object, raw func(map[string]any)) []byte {
				m, err := meta.Accessor(o)
				if err != nil {
					t.Fatal(err)
				}
				m.SetName("nodegen-broken-" + strings.ToLower(c.name))
				b, err := manifest.MarshalObjects("", []runtime.Object{o})
				if err != nil {
					t.Fatal(err)
				}
				if raw == nil {
					return b
				}
				var doc map[string]any
				if err := yaml.Unmarshal(b, &doc); err != nil {
					t.Fatal(err)
				}
				raw(doc)
				if b, err = yaml.Marshal(doc); err != nil {
					t.Fatal(err)
				}
				return b
			}
			if err := e.serverCheck(t, encode(find(c.kind), nil)); err != nil {
				t.Fatalf("the unbroken %s was rejected: %v", c.kind, err)
			}
			o := find(c.kind)
			if c.breakIt != nil {
				c.breakIt(o)
			}
			err := e.serverCheck(t, encode(o, c.raw))
			if err == nil {
				t.Fatalf("the server accepted the broken %s", c.kind)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("the server rejected the broken %s with %v; want %q", c.kind, err, c.want)
			}
		})
	}
}

// installMonitoringCRDs creates prometheus-operator's PrometheusRule and
// ServiceMonitor CRDs and waits until they are Established.
func (e *env) installMonitoringCRDs(t *testing.T) {
	t.Helper()
	dir := filepath.Join("testdata", "prometheus-operator")
	for _, crd := range []string{"prometheusrules", "servicemonitors"} {
		b, err := os.ReadFile(filepath.Join(dir, "monitoring.coreos.com_"+crd+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		e.admin(t, string(b), "apply", "--server-side", "--field-manager=k8stest", "-f", "-")
		e.admin(t, "", "wait", "--for=condition=Established", "--timeout=60s", "customresourcedefinition/"+crd+".monitoring.coreos.com")
	}
}

// createCustom decodes a file of prometheus-operator's objects strictly
// into its Go types, then creates them with server-side dry-run (strict
// field validation against the CRD's schema), for real, and reads them
// back.
func (e *env) createCustom(t *testing.T, path string, data []byte) {
	t.Helper()
	var want []string
	for _, doc := range strings.Split(string(data), "\n---\n")[1:] {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var err error
		switch meta.Kind {
		case "PrometheusRule":
			err = yaml.UnmarshalStrict([]byte(doc), &monitoringv1.PrometheusRule{})
		case "ServiceMonitor":
			err = yaml.UnmarshalStrict([]byte(doc), &monitoringv1.ServiceMonitor{})
		default:
			err = fmt.Errorf("kind %q is none of prometheus-operator's nodegen renders", meta.Kind)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		want = append(want, strings.ToLower(meta.Kind)+".monitoring.coreos.com/"+meta.Metadata.Name)
	}
	if len(want) == 0 {
		t.Fatalf("%s: no object", path)
	}
	for _, step := range [][]string{
		{"create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-"},
		{"create", "--validate=strict", "-o", "name", "-f", "-"},
		{"get", "-o", "name", "-f", "-"},
	} {
		out, _, err := kubectl(t, e.cp.Admin(), string(data), step...)
		if err != nil {
			t.Fatalf("%s: the server rejected it: %v", path, err)
		}
		if got := lines(out); !slices.Equal(got, want) {
			t.Fatalf("%s: kubectl %s: objects %v, want %v", path, strings.Join(step, " "), got, want)
		}
	}
}
