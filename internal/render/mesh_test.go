package render_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/secrets"
	"github.com/nodegen/nodegen/internal/testing/meshtest"
)

var meshPaths = []string{
	layout.MeshDocsPath,
	layout.IstioBaseValuesPath,
	layout.EastWestGatewayValuesPath,
	layout.IstiodValuesPath,
	layout.MeshManifestsPath,
	layout.IstioNamespacePath,
}

// Every cluster of a mesh gets the same set of files, each with nodegen's
// header, byte-identical from one render to the next, and free of
// anything the secrets scanner takes for a credential; a cluster outside
// the mesh gets none.
func TestMeshFiles(t *testing.T) {
	for _, f := range []*model.Fleet{meshtest.Fleet(), meshtest.MultiPrimary()} {
		for _, src := range f.Clusters {
			files, err := render.MeshFiles(f, src)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(meshPaths)
			if r := f.Mesh.Clusters[src.Cluster.Name].EastWestGateway.ReachedThrough; r != nil && r.InternalLoadBalancer != nil {
				want = append(want, layout.MeshLBPath)
			}
			slices.Sort(want)
			if got := files.Paths(); !slices.Equal(got, want) {
				t.Fatalf("%s: paths %v, want %v", src.Cluster.Name, got, want)
			}
			again, err := render.MeshFiles(f, src)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range want {
				if !layout.IsGenerated(files[p]) {
					t.Errorf("%s %s: no generated header:\n%s", src.Cluster.Name, p, files[p])
				}
				if !bytes.Equal(files[p], again[p]) {
					t.Errorf("%s %s: differs between two renders", src.Cluster.Name, p)
				}
			}
			if list := secrets.Artifacts(files); len(list) > 0 {
				t.Errorf("%s: secrets scanner: %v", src.Cluster.Name, list)
			}
		}
	}
	f := meshtest.Fleet()
	delete(f.Mesh.Clusters, meshtest.Remote)
	if files, err := render.MeshFiles(f, f.Cluster(meshtest.Remote)); err != nil || len(files) != 0 {
		t.Errorf("cluster outside the mesh: files %v, err %v", files.Paths(), err)
	}
}

// The docs give each cluster its own install order: the namespace first,
// the remote attached to its primary before its gateway's pods need the
// primary's istiod, the primary's remote secrets last; and the remote
// secret command for each pair, run against the right contexts.
func TestMeshDocsInstallOrder(t *testing.T) {
	f := meshtest.Fleet()
	order := func(cluster string) []string {
		files, err := render.MeshFiles(f, f.Cluster(cluster))
		if err != nil {
			t.Fatal(err)
		}
		var cmds []string
		for _, line := range strings.Split(string(files[layout.MeshDocsPath]), "\n") {
			line = strings.TrimSpace(line)
			for _, prefix := range []string{"kubectl ", "helm upgrade --install ", "istioctl "} {
				if strings.HasPrefix(line, prefix) {
					cmds = append(cmds, line)
				}
			}
		}
		return cmds
	}
	primary := []string{
		"kubectl --context=cloud apply -f out/istio/namespace.yaml",
		"helm upgrade --install istio-base istio/base --kube-context cloud -n istio-system -f out/istio/base-values.yaml",
		"helm upgrade --install istiod istio/istiod --kube-context cloud -n istio-system -f out/istio/istiod-values.yaml",
		"helm upgrade --install istio-eastwestgateway istio/gateway --kube-context cloud -n istio-system -f out/istio/eastwest-gateway-values.yaml",
		"kubectl --context=cloud apply -f out/istio/mesh.yaml",
		"istioctl create-remote-secret --context=gpu --name=gpu | kubectl apply -f - --context=cloud",
	}
	if got := order(meshtest.Primary); !slices.Equal(got, primary) {
		t.Errorf("primary's steps:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(primary, "\n"))
	}
	remote := []string{
		"kubectl --context=gpu apply -f out/istio/namespace.yaml",
		"helm upgrade --install istio-base istio/base --kube-context gpu -n istio-system -f out/istio/base-values.yaml",
		"helm upgrade --install istiod istio/istiod --kube-context gpu -n istio-system -f out/istio/istiod-values.yaml",
		"istioctl create-remote-secret --context=gpu --name=gpu | kubectl apply -f - --context=cloud",
		"helm upgrade --install istio-eastwestgateway istio/gateway --kube-context gpu -n istio-system -f out/istio/eastwest-gateway-values.yaml",
		"kubectl --context=gpu apply -f out/istio/mesh.yaml",
	}
	if got := order(meshtest.Remote); !slices.Equal(got, remote) {
		t.Errorf("remote's steps:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(remote, "\n"))
	}
	// Pinned: every helm upgrade --install carries the version.
	f.Mesh.IstioVersion = "1.28.1"
	for _, c := range order(meshtest.Remote) {
		if strings.HasPrefix(c, "helm upgrade --install ") && !strings.Contains(c, " --version 1.28.1 ") {
			t.Errorf("unpinned with istioVersion set: %s", c)
		}
	}
	// Multi-primary: each cluster's istiod reads the other one.
	f = meshtest.MultiPrimary()
	files, err := render.MeshFiles(f, f.Cluster(meshtest.Remote))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(files[layout.MeshDocsPath])
	if !strings.Contains(doc, "istioctl create-remote-secret --context=cloud --name=cloud | kubectl apply -f - --context=gpu") {
		t.Errorf("multi-primary: no remote secret of cloud into gpu:\n%s", doc)
	}
}

// meshStructFields are the free-text fields that reach the mesh
// artifacts: the gateway Service's annotation values. (Every other mesh
// field is a name, an address or a number the schema restricts, and
// annotation keys are qualified names, which vet enforces.)
var meshStructFields = []struct {
	name  string
	plain string
	set   func(f *model.Fleet, v string)
}{
	{"gateway annotation value", "x", func(f *model.Fleet, v string) {
		f.Mesh.Clusters[meshtest.Remote].EastWestGateway.Service.Annotations["example.com/a"] = v
	}},
}

// meshStructure renders the fleet with value in field i and with the
// field's plain value, and compares the structure of every mesh artifact
// of every cluster. A key vet rejects is skipped.
func meshStructure(t *testing.T, i uint8, value string) {
	fld := meshStructFields[int(i)%len(meshStructFields)]
	if !utf8.ValidString(value) {
		return // a CUE string is UTF-8: nothing else reaches the model
	}
	fuzzed, plain := meshtest.Fleet(), meshtest.Fleet()
	fld.set(fuzzed, value)
	fld.set(plain, fld.plain)
	for _, c := range fuzzed.Clusters {
		got, err := render.MeshFiles(fuzzed, c)
		if err != nil {
			t.Fatalf("%s %q: %v", fld.name, value, err)
		}
		want, err := render.MeshFiles(plain, plain.Cluster(c.Cluster.Name))
		if err != nil {
			t.Fatal(err)
		}
		if c.Cluster.Name == meshtest.Remote {
			// The value comes back as written.
			var values struct {
				Service struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"service"`
			}
			if err := yaml.Unmarshal(got[layout.EastWestGatewayValuesPath], &values); err != nil {
				t.Fatal(err)
			}
			if a := values.Service.Annotations["example.com/a"]; a != value {
				t.Errorf("%s: annotation reads back as %q, want %q", fld.name, a, value)
			}
		}
		if !slices.Equal(got.Paths(), want.Paths()) {
			t.Fatalf("%s %q: paths %v, want %v", fld.name, value, got.Paths(), want.Paths())
		}
		for _, p := range want.Paths() {
			skeleton := yamlSkeleton
			switch {
			case isMarkdown(p):
				skeleton = markdownSkeleton
			case isTerraform(p):
				skeleton = hclSkeleton
			}
			if g, w := skeleton(t, p, got[p]), skeleton(t, p, want[p]); !slices.Equal(g, w) {
				t.Errorf("%s %q changes the structure of %s/%s:\n%s\nwant\n%s\n--- the file:\n%s",
					fld.name, value, c.Cluster.Name, p, strings.Join(g, "\n"), strings.Join(w, "\n"), got[p])
			}
		}
	}
}

func TestMeshStructureSeeds(t *testing.T) {
	for i := range meshStructFields {
		for _, s := range structSeeds {
			meshStructure(t, uint8(i), s)
		}
	}
}

// FuzzMeshStructure: no annotation key or value changes the structure of
// the mesh's YAML or Markdown artifacts.
func FuzzMeshStructure(f *testing.F) {
	for i, s := range structSeeds {
		f.Add(uint8(i%len(meshStructFields)), s)
	}
	f.Fuzz(func(t *testing.T, i uint8, value string) { meshStructure(t, i, value) })
}
