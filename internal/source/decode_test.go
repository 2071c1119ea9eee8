package source

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/bench"
)

// exampleDir is the tests' copy of the example (internal/testing/testsrc imports
// this package, so it cannot be used here).
const exampleDir = "../testing/testsrc/testdata/nodegroups"

// TestDecodeMatchesCUE checks that the loader's decoder gives exactly what
// cue.Value.Decode gives, on the shipped example, a synthetic fleet, and a
// source that sets what those leave out (a metadata-key join token, a
// whole number for a float, an explicit startup taint, spot, arm64, every
// autoscaling option and reservation).
func TestDecodeMatchesCUE(t *testing.T) {
	synthetic := filepath.Join(t.TempDir(), "synthetic")
	if err := bench.Write(synthetic, 40); err != nil {
		t.Fatal(err)
	}
	edge := t.TempDir()
	files := map[string]string{
		"cluster.cue": `cluster: {
	name: "edge"
	kubernetesVersion: "1.35.2"
	controlPlaneEndpoint: "cp.example.com:6443"
	caCertHashes: ["sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d", "sha256:0f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d"]
	joinToken: metadataKey: "kubeadm-token"
	gcp: {project: "edge-project", region: "europe-west4"}
	autoscaler: {
		nodeGroup: "ca", singleZone: true
		version: "v1.35.1"
		balanceSimilarNodeGroups: true
		scaleDownUtilizationThreshold: 1
		scaleDownGpuUtilizationThreshold: 0.25
	}
}
`,
		"groups.cue": `nodeGroups: {
	ca: {
		kind: "gce-static"
		zones: ["europe-west4-a"]
		machineType: "t2a-standard-2"
		arch: "arm64"
		image: "img"
		min: 1
		max: 1
		taints: [{key: "example.com/ca", effect: "NoSchedule"}]
	}
	gpu: {
		kind: "gce"
		zones: ["europe-west4-a", "europe-west4-b", "europe-west4-c"]
		machineType: "g2-standard-8"
		image: "img"
		osDistribution: "cos"
		bootDiskType: "pd-ssd"
		spot: true
		min: 0
		max: 3
		gpu: {type: "nvidia-l4", count: 1}
		labels: {"example.com/a": "1", "example.com/b": ""}
		startupTaint: {key: "example.com/gpu-not-ready", value: "true", effect: "NoSchedule"}
		kubelet: {
			kubeReserved: {cpu: "200m", "ephemeral-storage": "1Gi"}
			systemReserved: {memory: "1Gi"}
			evictionHard: {"memory.available": "200Mi", "nodefs.available": "5%"}
		}
		autoscaling: {
			scaleDownUtilizationThreshold: 0
			scaleDownGpuUtilizationThreshold: 1
			scaleDownUnneededTime: "1h30m"
			scaleDownUnreadyTime: "5m"
			maxNodeProvisionTime: "25m"
		}
	}
	rack: {
		kind: "onprem"
		description: "on-prem"
		gpu: {type: "nvidia-h100-80gb", count: 8}
		labels: "example.com/rack": "r1"
	}
}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(edge, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, dir := range map[string]string{"example": exampleDir, "synthetic": synthetic, "edge": edge} {
		t.Run(name, func(t *testing.T) {
			l, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			var want, got model.Source
			if err := l.Value.Decode(&want); err != nil {
				t.Fatal(err)
			}
			if err := decode(l.Value, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decode differs from cue.Value.Decode:\n got  %+v\n want %+v", got, want)
			}
			if len(got.NodeGroups) == 0 || got.Cluster.Name == "" {
				t.Errorf("decoded nothing: %+v", got)
			}
		})
	}
}
