package meshtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	corev1 "k8s.io/api/core/v1"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render/docs"
	"github.com/nodegen/nodegen/internal/testing/istiotest"
	"github.com/nodegen/nodegen/internal/testing/meshtest"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// documents splits a YAML stream into its objects' documents, decoded
// strictly enough to know each one's kind.
func documents(t *testing.T, stream []byte) (docs []string, kinds []string) {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs, kinds
		}
		if err != nil {
			t.Fatal(err)
		}
		var u unstructured.Unstructured
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		docs = append(docs, string(doc))
		kinds = append(kinds, u.GetKind())
	}
}

// Every cluster's set, each in a real kube-apiserver of its own with
// Istio's CRDs installed: nodegen's mesh manifests and the official charts
// rendered with nodegen's values pass a server-side dry run with strict
// field validation; the istio-system namespace is created for real first
// (the others live in it). The remote's istio-reader ServiceAccount, with
// a real token, can do what the primary's istiod does with the remote
// secret.
func TestMeshOnAPIServer(t *testing.T) {
	f := meshtest.Fleet()
	f.Mesh.Trust = &model.MeshTrust{PluginCA: &struct{}{}} // its step and Secret, played below
	for _, src := range f.Clusters {
		t.Run(src.Cluster.Name, func(t *testing.T) {
			r := renderCluster(t, f, src)
			cp := testcp.Start(t)
			istiotest.InstallCRDs(t, cp)

			nsDocs, kinds := documents(t, r.files[layout.IstioNamespacePath])
			if !slices.Equal(kinds, []string{"Namespace"}) {
				t.Fatalf("%s kinds %v: want one Namespace", layout.IstioNamespacePath, kinds)
			}
			if err := istiotest.DryRun(t, cp, "", nsDocs[0]); err != nil {
				t.Fatalf("%s: %v", layout.IstioNamespacePath, err)
			}
			istiotest.Create(t, cp, "", nsDocs[0])
			docs, kinds := documents(t, r.files[layout.MeshManifestsPath])
			wantKinds := []string{"Gateway"}
			if len(f.Mesh.RemotesOf(src.Cluster.Name)) > 0 {
				wantKinds = append(wantKinds, "Gateway", "VirtualService")
			}
			if len(f.Mesh.Clusters[src.Cluster.Name].EastWestGateway.ListenerPorts()) > 0 {
				wantKinds = append(wantKinds, "Gateway") // the extra ports' servers
			}
			if !slices.Equal(kinds, wantKinds) {
				t.Errorf("%s kinds %v, want %v", layout.MeshManifestsPath, kinds, wantKinds)
			}
			if err := istiotest.DryRun(t, cp, "", "---\n"+strings.Join(docs, "---\n")); err != nil {
				t.Errorf("%s: %v", layout.MeshManifestsPath, err)
			}
			if f.Mesh.Clusters[src.Cluster.Name].Role == model.MeshRolePrimary {
				playCACerts(t, cp, src.Cluster.Name, r.files[layout.MeshDocsPath])
			}
			ns, _, err := cp.Kubectl(t, "get", "namespace", model.IstioNamespace, "-o", "jsonpath={.metadata.labels.topology\\.istio\\.io/network} {.metadata.annotations.topology\\.istio\\.io/controlPlaneClusters}")
			if err != nil {
				t.Fatal(err)
			}
			want := f.Mesh.Clusters[src.Cluster.Name].Network + " " + f.Mesh.PrimaryOf(src.Cluster.Name)
			if strings.TrimSpace(ns) != strings.TrimSpace(want) {
				t.Errorf("istio-system network and control plane = %q, want %q", ns, want)
			}

			// The base chart's CRDs are the ones installed.
			var crds []string
			for _, o := range r.base.OfKind("CustomResourceDefinition") {
				crds = append(crds, o.GetName())
			}
			installed, _, err := cp.Kubectl(t, "get", "crd", "-o", "jsonpath={.items[*].metadata.name}")
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(crds)
			if got := strings.Fields(installed); !slices.Equal(got, crds) {
				t.Errorf("installed CRDs %v, base chart renders %v", got, crds)
			}
			for chart, objs := range map[string]istiotest.Objects{"base": r.base, "istiod": r.istiod, "gateway": r.gateway} {
				var rest istiotest.Objects
				for _, o := range objs {
					if o.GetKind() != "CustomResourceDefinition" {
						rest = append(rest, o)
					}
				}
				if len(rest) == 0 {
					t.Errorf("chart %s rendered no object besides CRDs", chart)
					continue
				}
				if err := istiotest.DryRun(t, cp, model.IstioNamespace, rest.Stream()); err != nil {
					t.Errorf("chart %s: %v", chart, err)
				}
			}
			if f.Mesh.Clusters[src.Cluster.Name].Role == model.MeshRoleRemote {
				remoteSecretAccess(t, cp, r)
			}
		})
	}
}

// remoteSecretAccess creates the charts' istio-reader ServiceAccount and
// RBAC for real and acts as that ServiceAccount with a real token, as the
// primary's istiod does with the kubeconfig of the remote secret: it reads
// the remote's endpoints and services, and, since the remote names the
// primary in controlPlaneClusters, patches the remote's injection webhook
// and writes the root-certificate ConfigMaps; it can do nothing else.
func remoteSecretAccess(t *testing.T, cp *testcp.ControlPlane, r rendered) {
	t.Helper()
	var rbac istiotest.Objects
	for _, o := range append(slices.Clone(r.base), r.istiod...) {
		if o.GetLabels()["app"] == "istio-reader" || (o.GetKind() == "MutatingWebhookConfiguration") {
			rbac = append(rbac, o)
		}
	}
	istiotest.Create(t, cp, model.IstioNamespace, rbac.Stream())
	reader := cp.ServiceAccount(t, model.IstioNamespace, "istio-reader-service-account")
	for _, args := range [][]string{
		{"get", "endpointslices.discovery.k8s.io", "-A"},
		{"get", "services", "-A"},
		{"get", "pods", "-A"},
		{"get", "namespaces"},
		{"patch", "mutatingwebhookconfiguration", "istio-sidecar-injector", "--type=merge", "-p", `{"metadata":{"labels":{"probe":"1"}}}`, "--dry-run=server"},
		{"create", "configmap", "istio-ca-root-cert", "-n", "default", "--from-literal=root-cert.pem=x", "--dry-run=server"},
	} {
		if _, stderr, err := reader.Kubectl(t, args...); err != nil {
			t.Errorf("istio-reader %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
	}
	for _, args := range [][]string{
		{"create", "deployment", "probe", "--image=x", "-n", "default", "--dry-run=server"},
		{"delete", "namespace", "default", "--dry-run=server"},
	} {
		if _, _, err := reader.Kubectl(t, args...); err == nil {
			t.Errorf("istio-reader may %s: more than the remote secret needs", strings.Join(args, " "))
		}
	}
}

// playCACerts runs the install steps' cacerts command, as the docs give
// it, against the control plane with a server-side dry run: with the
// intermediate CA's files where the command reads them, it makes the
// Secret cacerts in istio-system with exactly Istio's plugin-CA keys, and
// the docs hold no key.
func playCACerts(t *testing.T, cp *testcp.ControlPlane, cluster string, doc []byte) {
	t.Helper()
	var cmd string
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "kubectl --context="+cluster+" ") && strings.Contains(l, "create secret generic "+model.CACertsSecret) {
			cmd = l
		}
	}
	if cmd == "" {
		t.Fatalf("%s: no step creates the Secret %s", layout.MeshDocsPath, model.CACertsSecret)
	}
	// The command runs from the directory that holds out/ (the
	// repository's root): lay the files out where it reads them, in a
	// temporary repository.
	repo := t.TempDir()
	tree := filepath.Join(repo, "out", cluster)
	dir := filepath.Join(repo, filepath.FromSlash(docs.CACertsDir(cluster)))
	for _, d := range []string{tree, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range model.CACertsKeys {
		if err := os.WriteFile(filepath.Join(dir, k), []byte("-----BEGIN TEST-----\n"+k+"\n-----END TEST-----\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := strings.Fields(cmd)[1:]
	args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "--context=") })
	c := cp.KubectlCmd(t, append(args, "--dry-run=server", "-o", "json")...)
	c.Dir = repo
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	var secret corev1.Secret
	if err := json.Unmarshal(out, &secret); err != nil {
		t.Fatal(err)
	}
	if secret.Name != model.CACertsSecret || secret.Namespace != model.IstioNamespace || !slices.Equal(slices.Sorted(maps.Keys(secret.Data)), slices.Sorted(slices.Values(model.CACertsKeys))) {
		t.Errorf("the step makes Secret %s/%s with keys %v, want %s/%s with %v", secret.Namespace, secret.Name, slices.Sorted(maps.Keys(secret.Data)), model.IstioNamespace, model.CACertsSecret, model.CACertsKeys)
	}
	if strings.Contains(string(doc), "BEGIN TEST") {
		t.Error("the docs hold key material")
	}
}
