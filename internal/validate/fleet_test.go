package validate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/validate"
)

// fleetFile reads a file of the tests' fleet source.
func fleetFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testsrc.FleetDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A third cluster whose names start like serve's: GCE names shared in one
// project are reported, at each cluster's value; in another project, or
// without a shared zone for a mere prefix, they are not.
func TestFleetGCENames(t *testing.T) {
	third := func(project, group, zones, token string) string {
		return `clusters: "serve-gpu": {
	cluster: _cluster & {
		controlPlaneEndpoint: "10.40.0.10:6443"
		gcp: project: "` + project + `"
		joinToken: ` + token + `
	}
	nodeGroups: {
		autoscaler: #Autoscaler
		"` + group + `": {kind: "gce", zones: ` + zones + `, machineType: "n2-standard-8", image: "projects/acme-hybrid-ai/global/images/family/k8s-node-1-35", min: 0, max: 2}
	}
}
`
	}
	// The shared base writes the project: make it a default.
	shared := strings.Replace(fleetFile(t, "shared.cue"), `project: "acme-hybrid-ai"`, `project: *"acme-hybrid-ai" | string`, 1)
	own := `secretManager: secret: "serve-gpu-join-token"`
	for _, c := range []struct {
		name  string
		third string
		want  []string // substrings, one per finding
	}{
		{"same names", third("acme-hybrid-ai", "t4", `["us-central1-c"]`, own), []string{
			`third.cue:9:3: clusters."serve-gpu".nodeGroups.t4: GCE names collide in project acme-hybrid-ai: this group and node group gpu-t4 of cluster serve both have VMs named serve-gpu-t4-xxxx`,
			`serve.cue:8:3: clusters.serve.nodeGroups."gpu-t4": GCE names collide in project acme-hybrid-ai: this group and node group t4 of cluster serve-gpu`,
		}},
		{"same names, other project", third("acme-other-proj", "t4", `["us-central1-a"]`, own), nil},
		{"prefix in a shared zone", third("acme-hybrid-ai", "t4x", `["us-central1-b", "us-central1-c"]`, own), []string{
			`third.cue:9:3: clusters."serve-gpu".nodeGroups.t4x: the VMs of this group (serve-gpu-t4x-xxxx) start with serve-gpu-t4, the base instance name of node group gpu-t4 of cluster serve in the same project (acme-hybrid-ai), in us-central1-b`,
		}},
		{"prefix without a shared zone", third("acme-hybrid-ai", "t4x", `["us-central1-c"]`, own), nil},
		{"shared secret", third("acme-hybrid-ai", "big", `["us-central1-c"]`, `secretManager: secret: "train-join-token"`), []string{
			`third.cue:5:37: clusters."serve-gpu".cluster.joinToken.secretManager.secret: the join token of this cluster and of cluster train would be the same Secret Manager secret train-join-token`,
			`train.cue:5:37: clusters.train.cluster.joinToken.secretManager.secret: the join token of this cluster and of cluster serve-gpu would be the same Secret Manager secret train-join-token`,
		}},
		{"shared secret, other project", third("acme-other-proj", "big", `["us-central1-c"]`, `secretManager: secret: "train-join-token"`), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testsrc.CopyFleet(t, map[string]string{"shared.cue": shared, "third.cue": c.third})
			_, err := pipeline.Load(dir)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("findings:\n%v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no findings")
			}
			got := err.Error()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("findings:\n%s\nwant one containing\n%s", got, w)
				}
			}
			if n := strings.Count(got, "\n") + 1; n != len(c.want) {
				t.Errorf("%d findings, want %d:\n%s", n, len(c.want), got)
			}
		})
	}
}

// The tests' fleet source is valid as a whole, and its findings-free
// members carry their positions.
func TestFleetValid(t *testing.T) {
	l, err := pipeline.Load(testsrc.FleetDir())
	if err != nil {
		t.Fatal(err)
	}
	if list := validate.Fleet(l); len(list) > 0 {
		t.Fatalf("fleet findings: %v", list)
	}
}
