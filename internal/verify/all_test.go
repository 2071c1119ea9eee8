package verify_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/verify"
)

// TestAllReadsEachArtifact: All parses each artifact once and shares it
// between its checks; every check must still see the artifact as
// rendered, so a change to any one of them fails All, naming what is
// wrong.
func TestAllReadsEachArtifact(t *testing.T) {
	src, _ := testsrc.Example(t)
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.All(src, files); err != nil {
		t.Fatalf("the example fails verification: %v", err)
	}
	spotTF := layout.TerraformGroupPath("spot-gpu-t4")
	for _, c := range []struct {
		name, path, old, new, want string
	}{
		{"terraform syntax", spotTF, "resource \"google_compute_instance_template\"", "resource \"google_compute_instance_template\" {", spotTF + ":"},
		{"terraform spot", spotTF, `provisioning_model          = "SPOT"`, `provisioning_model          = "STANDARD"`, `spot: terraform provisioning_model "STANDARD"`},
		{"device plugin replicas", layout.GPUOperatorValuesPath, "replicas: 4", "replicas: 2", "nvidia.com/gpu: template 4, device plugin 2, source 4"},
		{"device plugin config", layout.GPUOperatorValuesPath, "      spot-gpu-t4: |", "      spot-gpu-t5: |", `config "spot-gpu-t4" is not in the device plugin ConfigMap`},
		{"gpu values syntax", layout.GPUOperatorValuesPath, "devicePlugin:\n", "devicePlugin: [\n", "device plugin: "},
		{"kube-env label", layout.KubeEnvPath("gpu-t4"), "example.com/pool=gpu-burst", "example.com/pool=gpu-burst2", "labels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := maps.Clone(files)
			if !strings.Contains(string(bad[c.path]), c.old) {
				t.Fatalf("%s does not contain %q", c.path, c.old)
			}
			bad[c.path] = []byte(strings.Replace(string(bad[c.path]), c.old, c.new, 1))
			err := verify.All(src, bad)
			if err == nil {
				t.Fatalf("All accepts %s with %q for %q", c.path, c.new, c.old)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("All: %v\nwant it to say %q", err, c.want)
			}
		})
	}
}
