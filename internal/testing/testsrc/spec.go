package testsrc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"cuelang.org/go/cue/literal"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/validate"
)

// Spec holds the free-text and user-named values of a small source the
// tests write as CUE and load with the real loader (schema, then the Go
// rules), so that a value reaches the renderers only if nodegen accepts
// it. The zero value of a field means its default below.
type Spec struct {
	GPUDescription    string // description of the gce GPU group
	StaticDescription string // description of the autoscaler's gce-static group
	OnPremDescription string // description of the onprem group
	Image             string // boot image of the GPU group
	TaintRemoverImage string // cluster.taintRemover.image
	LabelValue        string // value of the GPU group's label example.com/pool
	TaintValue        string // value of the GPU group's taint example.com/dedicated
	Secret            string // cluster.joinToken.secretManager.secret
	// MetadataKey, when set, replaces the Secret Manager join token by a
	// project metadata key.
	MetadataKey string
	// Cluster is raw CUE added inside cluster: { ... }.
	Cluster string
	// DirName names the source directory (default nodegroups); GPUFile
	// names the GPU group's file, without its .cue (default gpu-t4).
	DirName, GPUFile string
}

func (s Spec) or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// q quotes s as a CUE string literal.
func q(s string) string { return literal.String.Quote(s) }

// Files returns the source's CUE files by name.
func (s Spec) Files() map[string]string {
	join := "joinToken: secretManager: secret: " + q(s.or(s.Secret, "kubeadm-join-token"))
	if s.MetadataKey != "" {
		join = "joinToken: metadataKey: " + q(s.MetadataKey)
	}
	return map[string]string{
		"cluster.cue": fmt.Sprintf(`cluster: {
	name:                 "hybrid-ai"
	kubernetesVersion:    "1.35.2"
	controlPlaneEndpoint: "10.20.0.10:6443"
	caCertHashes: ["sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d"]
	%s
	gcp: {project: "acme-hybrid-ai", region: "us-central1"}
	autoscaler: {nodeGroup: "autoscaler", singleZone: true}
	taintRemover: image: %s
	%s
}
`, join, q(s.or(s.TaintRemoverImage, "docker.io/alpine/k8s:1.34.5")), s.Cluster),
		"autoscaler.cue": fmt.Sprintf(`nodeGroups: autoscaler: {
	kind:        "gce-static"
	description: %s
	zones: ["us-central1-a"]
	machineType: "e2-standard-2"
	image:       "projects/acme-hybrid-ai/global/images/family/k8s-node-1-35"
	min:         1
	max:         1
	labels: "example.com/role": "cluster-autoscaler"
	taints: [{key: "example.com/dedicated", value: "cluster-autoscaler", effect: "NoSchedule"}]
}
`, q(s.or(s.StaticDescription, "Dedicated node for the Cluster Autoscaler"))),
		"gpu-t4.cue": fmt.Sprintf(`nodeGroups: "gpu-t4": {
	kind:        "gce"
	description: %s
	zones: ["us-central1-a", "us-central1-b"]
	machineType: "n1-standard-8"
	image:       %s
	min:         0
	max:         4
	gpu: {type: "nvidia-tesla-t4", count: 1}
	labels: "example.com/pool": %s
	taints: [{key: "example.com/dedicated", value: %s, effect: "NoSchedule"}]
}
`, q(s.or(s.GPUDescription, "Cloud T4 GPU burst workers")),
			q(s.or(s.Image, "projects/acme-hybrid-ai/global/images/family/k8s-node-gpu-1-35")),
			q(s.LabelValue), q(s.TaintValue)),
		"cpu-burst.cue": `nodeGroups: "cpu-burst": {
	kind: "gce"
	zones: ["us-central1-a"]
	machineType: "n2-standard-8"
	image:       "projects/acme-hybrid-ai/global/images/family/k8s-node-1-35"
	min:         0
	max:         10
	labels: "example.com/pool": "cpu-burst"
}
`,
		"onprem-gpu.cue": fmt.Sprintf(`nodeGroups: "onprem-gpu": {
	kind:        "onprem"
	description: %s
	gpu: {type: "nvidia-tesla-a100", count: 8}
	labels: "example.com/pool": "gpu-onprem"
	taints: [{key: "nvidia.com/gpu", value: "present", effect: "NoSchedule"}]
}
`, q(s.or(s.OnPremDescription, "On-prem A100 servers"))),
	}
}

// Load writes the source to a temporary nodegroups/ directory and loads it
// as nodegen vet and gen do (the schema, then every rule of validate). It
// returns the problems nodegen reports instead of a source when it
// rejects the input.
func (s Spec) Load(t testing.TB) (*model.Source, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), s.or(s.DirName, "nodegroups"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err // a name the file system refuses
	}
	for name, text := range s.Files() {
		if name == "gpu-t4.cue" {
			name = s.or(s.GPUFile, "gpu-t4") + ".cue"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return nil, err // a name the file system refuses
		}
	}
	l, err := source.Open(dir)
	if err != nil {
		return nil, err
	}
	if list := validate.Loaded(l); len(list) > 0 {
		return nil, list
	}
	return l.Fleet.Clusters[0], nil
}

// MustRender loads and renders a source nodegen must accept.
func (s Spec) MustRender(t testing.TB) (*model.Source, layout.Files) {
	t.Helper()
	src, err := s.Load(t)
	if err != nil {
		t.Fatalf("nodegen rejects the test's source: %v", err)
	}
	files, err := render.All(src)
	if err != nil {
		t.Fatalf("rendering the test's source: %v", err)
	}
	return src, files
}
