package drift_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodecheck"
	"github.com/nodegen/nodegen/internal/revision"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// A node's revision is Compute's answer where drift is given it: with
// --managed-instances (gcloud's list-instances output) and the templates
// they name, a node that labels itself with its group's current revision
// while Compute made its instance from an older revision's template is
// stale, and one whose label is behind while Compute made it from the
// current template is not. Without --managed-instances the labels decide,
// the other way round.
func TestDriftRevisionFromCompute(t *testing.T) {
	src, files := testsrc.Example(t)
	revs := map[string]string{}
	for _, g := range src.CloudGroups() {
		rev, ok, err := revision.FromKubeEnv(files[layout.KubeEnvPath(g.Name)])
		if err != nil || !ok {
			t.Fatalf("node group %s: its kube-env declares no revision (%v)", g.Name, err)
		}
		revs[g.Name] = rev
	}
	const old = "0123456789ab"
	liar, behind := "hybrid-ai-cpu-burst-x7k2", "hybrid-ai-gpu-t4-m2pq"
	dir := t.TempDir()

	// The recorded nodes, each cloud node labelled with its group's
	// revision but the one behind.
	nodes := readFixtureNodes(t)
	for i := range nodes {
		n := &nodes[i]
		if rev, ok := revs[n.Labels[model.GroupLabel]]; ok {
			n.Labels[model.RevisionLabel] = rev
		}
		if n.Name == behind {
			n.Labels[model.RevisionLabel] = old
		}
	}
	writeJSON(t, filepath.Join(dir, "nodes.json"), map[string]any{"apiVersion": "v1", "kind": "List", "items": nodes})

	// cpu-burst's previous template, whose kube-env declares the old
	// revision, and gpu-t4's current one, as gcloud describes them.
	template := func(name, kubeEnv string) map[string]any {
		return map[string]any{"kind": "compute#instanceTemplate", "name": name, "properties": map[string]any{
			"machineType": "n2-standard-8",
			"metadata":    map[string]any{"kind": "compute#metadata", "items": []map[string]string{{"key": model.MetadataKubeEnv, "value": kubeEnv}}}}}
	}
	burstEnv := string(files[layout.KubeEnvPath("cpu-burst")])
	oldEnv := strings.Replace(burstEnv, model.RevisionLabel+"="+revs["cpu-burst"], model.RevisionLabel+"="+old, 1)
	if oldEnv == burstEnv {
		t.Fatalf("cpu-burst's kube-env does not declare %s=%s", model.RevisionLabel, revs["cpu-burst"])
	}
	writeJSON(t, filepath.Join(dir, "templates.json"), []map[string]any{
		template("hybrid-ai-cpu-burst-20260101000000000000000001", oldEnv),
		template("hybrid-ai-gpu-t4-20260601000000000000000002", string(files[layout.KubeEnvPath("gpu-t4")])),
	})
	base := "https://www.googleapis.com/compute/v1/projects/" + src.Cluster.GCP.Project
	instance := func(zone, name, tmpl string) map[string]any {
		return map[string]any{"instance": base + "/zones/" + zone + "/instances/" + name, "instanceStatus": "RUNNING", "currentAction": "NONE",
			"id": "4105349117032215001", "version": map[string]string{"instanceTemplate": base + "/global/instanceTemplates/" + tmpl}}
	}
	writeJSON(t, filepath.Join(dir, "burst.json"), []map[string]any{instance("us-central1-a", liar, "hybrid-ai-cpu-burst-20260101000000000000000001")})
	writeJSON(t, filepath.Join(dir, "gpu.json"), instance("us-central1-b", behind, "hybrid-ai-gpu-t4-20260601000000000000000002"))

	// stale runs drift and returns the message of each node's stale
	// finding ("" for none).
	stale := func(args ...string) map[string]string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := cli.Main(append([]string{"drift", "--source", testsrc.Dir(), "--nodes", filepath.Join(dir, "nodes.json"),
			"--instance-template", filepath.Join(dir, "templates.json"), "--now", fixtureNow.Format("2006-01-02T15:04:05Z"), "-o", "json"}, args...),
			strings.NewReader(""), &stdout, &stderr)
		if code != cli.ExitFindings {
			t.Fatalf("exit %d, want %d; stderr: %s", code, cli.ExitFindings, stderr.String())
		}
		var r drift.Report
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, n := range r.Nodes {
			out[n.Name] = ""
			for _, f := range n.Findings {
				if f.Kind == nodecheck.Stale {
					out[n.Name] = f.Message
				}
			}
		}
		for _, n := range []string{liar, behind} {
			if _, ok := out[n]; !ok {
				t.Fatalf("no result for node %s: %s", n, stdout.String())
			}
		}
		return out
	}

	// The labels alone: the liar looks current, the one behind stale.
	got := stale()
	if got[liar] != "" {
		t.Errorf("without Compute's answer, %s: %s", liar, got[liar])
	}
	if want := "stale: revision " + old + ", the group's is " + revs["gpu-t4"] + "; nodegen rollout replaces it"; got[behind] != want {
		t.Errorf("without Compute's answer, %s: %q, want %q", behind, got[behind], want)
	}

	// Compute's answer decides.
	got = stale("--managed-instances", filepath.Join(dir, "burst.json"), "--managed-instances", filepath.Join(dir, "gpu.json"))
	if want := "stale: Compute made its instance from a template of revision " + old + " (its label says " + revs["cpu-burst"] + "), the group's is " + revs["cpu-burst"] + "; nodegen rollout replaces it"; got[liar] != want {
		t.Errorf("with Compute's answer, %s: %q, want %q", liar, got[liar], want)
	}
	if got[behind] != "" {
		t.Errorf("with Compute's answer, %s, which Compute made from the current template: %s", behind, got[behind])
	}
}

// ReadManagedInstances reads a list or one entry, and refuses what is
// not one, with the position of a JSON error.
func TestReadManagedInstances(t *testing.T) {
	mis, err := drift.ReadManagedInstances("one.json", []byte(`{"instance": "https://www.googleapis.com/compute/v1/projects/p/zones/z/instances/n-ab12", "version": {"instanceTemplate": "t"}}`))
	if err != nil || len(mis) != 1 || mis[0].Version.InstanceTemplate != "t" {
		t.Errorf("one entry: %+v %v", mis, err)
	}
	if _, err := drift.ReadManagedInstances("bad.json", []byte("[\n{\"instance\": 1}]")); err == nil || !strings.HasPrefix(err.Error(), "bad.json:2:") {
		t.Errorf("a number for the instance: %v", err)
	}
	if _, err := drift.ReadManagedInstances("empty.json", []byte(`[{"version": {}}]`)); err == nil || !strings.Contains(err.Error(), "item 0: not a managed instance") {
		t.Errorf("no instance: %v", err)
	}
	b, _ := json.Marshal([]any{})
	if mis, err := drift.ReadManagedInstances("none.json", b); err != nil || len(mis) != 0 {
		t.Errorf("an empty list: %+v %v", mis, err)
	}
}
