package verify_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/verify"
)

// TestAllReadsEachArtifact: All parses each artifact once and shares it
// between its checks; every check must still see the artifact as
// rendered, so a change to any one of them fails All, naming what is
// wrong.
func TestAllReadsEachArtifact(t *testing.T) {
	src, files := verifiedExample(t)
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
		t.Run(c.name, func(t *testing.T) { allFails(t, src, files, c.path, c.old, c.new, c.want) })
	}
}

// TestTemplateReadsBack: each group's instance template, read back from
// its .tf file, must be the one the model builds; a value changed in the
// file, an attribute verify does not read back, and a metadata file of
// another group each fail All, naming the difference.
func TestTemplateReadsBack(t *testing.T) {
	src, files := verifiedExample(t)
	tf := layout.TerraformGroupPath("spot-gpu-t4")
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"machine type", `machine_type = "n1-standard-8"`, `machine_type = "n1-standard-4"`, `+    "machineType": "n1-standard-4",`},
		{"boot disk size", `disk_size_gb = 200`, `disk_size_gb = 100`, `+          "diskSizeGb": 100,`},
		{"image", `/k8s-node-gpu-1-35"`, `/k8s-node-gpu-1-34"`, `"sourceImage": "projects/acme-hybrid-ai/global/images/family/k8s-node-gpu-1-34"`},
		{"label", `nodegen-node-group   = "spot-gpu-t4"`, `nodegen-node-group   = "gpu-t4"`, `+      "nodegen-node-group": "gpu-t4"`},
		{"accelerator count", "type  = \"nvidia-tesla-t4\"\n    count = 1", "type  = \"nvidia-tesla-t4\"\n    count = 2", `+        "acceleratorCount": 2`},
		{"service account", `local.nodes_service_account_email`, `local.autoscaler_service_account_email`, `+    "serviceAccountRole": "autoscaler"`},
		{"restart", `automatic_restart           = false`, `automatic_restart           = true`, `+      "automaticRestart": true,`},
		{"an attribute not read back", "machine_type = \"n1-standard-8\"\n", "machine_type = \"n1-standard-8\"\n  min_cpu_platform = \"Intel Skylake\"\n", "attribute min_cpu_platform of the instance template is not read back"},
		{"another group's kube-env", `../gce/spot-gpu-t4/kube-env`, `../gce/gpu-t4/kube-env`, "metadata kube-env reads gce/gpu-t4/kube-env, not the group's gce/spot-gpu-t4/kube-env"},
	} {
		t.Run(c.name, func(t *testing.T) { allFails(t, src, files, tf, c.old, c.new, tf+": ", c.want) })
	}
}

// verifiedExample is the tests' example rendered, which All accepts.
func verifiedExample(t *testing.T) (*model.Source, layout.Files) {
	t.Helper()
	src, _ := testsrc.Example(t)
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.All(src, files); err != nil {
		t.Fatalf("the example fails verification: %v", err)
	}
	return src, files
}

// allFails requires All to refuse files with old replaced by new in the
// file at path, saying each of want.
func allFails(t *testing.T, src *model.Source, files layout.Files, path, old, new string, want ...string) {
	t.Helper()
	bad := maps.Clone(files)
	if !strings.Contains(string(bad[path]), old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	bad[path] = []byte(strings.Replace(string(bad[path]), old, new, 1))
	err := verify.All(src, bad)
	if err == nil {
		t.Fatalf("All accepts %s with %q for %q", path, new, old)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("All: %v\nwant it to say %q", err, w)
		}
	}
}
