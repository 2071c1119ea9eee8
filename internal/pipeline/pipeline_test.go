package pipeline_test

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/revision"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// A one-cluster source is one cluster whose tree is the whole output
// directory: its files are render's, unscoped.
func TestRunOneCluster(t *testing.T) {
	r, err := pipeline.Run(testsrc.Dir(), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Clusters) != 1 || r.Clusters[0].Dir != "" || r.Selected || r.Scope != nil {
		t.Fatalf("%d clusters (dir %q), selected %v, scope set %v; want one at the root, unscoped", len(r.Clusters), r.Clusters[0].Dir, r.Selected, r.Scope != nil)
	}
	want, err := render.All(r.Source.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(r.Files, want, bytes.Equal) || !maps.EqualFunc(r.Clusters[0].Files, want, bytes.Equal) {
		t.Errorf("Run's files (%d) differ from render.All's (%d)", len(r.Files), len(want))
	}
	if _, ok := r.Files[layout.KubeEnvPath("cpu-burst")]; !ok {
		t.Errorf("no kube-env of cpu-burst among %d files", len(r.Files))
	}
	if r.Source.Digest == "" {
		t.Error("the loaded source has no digest")
	}
	// The revisions drift, rollout and explain take are the ones each
	// cloud group's kube-env declares, read the autoscaler's way.
	src := r.Source.Fleet.Clusters[0]
	if len(r.Clusters[0].Revisions) != len(src.CloudGroups()) {
		t.Errorf("revisions of %d groups, want the %d cloud groups'", len(r.Clusters[0].Revisions), len(src.CloudGroups()))
	}
	for _, g := range src.CloudGroups() {
		declared, ok, err := revision.FromKubeEnv(r.Files[layout.KubeEnvPath(g.Name)])
		if err != nil || !ok || r.Clusters[0].Revisions[g.Name] != declared {
			t.Errorf("node group %s: revision %q, its kube-env declares %q (%v)", g.Name, r.Clusters[0].Revisions[g.Name], declared, err)
		}
	}
}

// A fleet renders every cluster into its own tree plus the fleet-wide
// files; a selection renders only the clusters named, scoped to their
// trees.
func TestRunFleet(t *testing.T) {
	all, err := pipeline.Run(testsrc.FleetDir(), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, c := range all.Clusters {
		dirs = append(dirs, c.Dir)
	}
	if strings.Join(dirs, ",") != "serve/,train/" || all.Scope != nil {
		t.Fatalf("cluster trees %v (scoped %v), want serve/ and train/ unscoped", dirs, all.Scope != nil)
	}
	if _, ok := all.Files[layout.FleetDocsPath]; !ok {
		t.Errorf("no %s in the whole fleet's files", layout.FleetDocsPath)
	}

	one, err := pipeline.Run(testsrc.FleetDir(), pipeline.Options{Clusters: []string{"train"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Clusters) != 1 || one.Clusters[0].Member.Source.Cluster.Name != "train" || !one.Selected || one.Scope == nil {
		t.Fatalf("selection of train: %d clusters, selected %v, scoped %v", len(one.Clusters), one.Selected, one.Scope != nil)
	}
	for p, b := range one.Files {
		if !strings.HasPrefix(p, "train/") {
			t.Errorf("selected train, got %s", p)
		}
		if !bytes.Equal(all.Files[p], b) {
			t.Errorf("%s differs between the whole fleet and the selection", p)
		}
	}
	for p, want := range map[string]bool{"train/" + layout.DocsPath: true, "serve/" + layout.DocsPath: false, layout.FleetDocsPath: false} {
		if got := one.Scope(p); got != want {
			t.Errorf("scope of train: %s in it is %v, want %v", p, got, want)
		}
	}
}

// A selection that names no cluster is a ClusterError that says what
// would have been meant, never a finding about the source.
func TestRunUnknownCluster(t *testing.T) {
	for _, c := range []struct {
		dir, name, want string
	}{
		{testsrc.FleetDir(), "trian", "did you mean train?"},
		{testsrc.FleetDir(), "", "needs a cluster name"},
		{testsrc.Dir(), "other", "is one cluster, named"},
	} {
		_, err := pipeline.Run(c.dir, pipeline.Options{Clusters: []string{c.name}})
		var ce *pipeline.ClusterError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cluster %q of %s: %v, want a ClusterError saying %q", c.name, filepath.Base(c.dir), err, c.want)
		}
	}
}

// Findings about the source come back as a diag.List, positioned in the
// source's files; nothing is rendered.
func TestRunFindings(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testsrc.Dir(), "cpu-burst.cue"))
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "max:         10", "max:         -1", 1)
	if broken == string(b) {
		t.Fatal("the tests' cpu-burst.cue has no max: 10 to break")
	}
	r, err := pipeline.Run(testsrc.Copy(t, map[string]string{"cpu-burst.cue": broken}), pipeline.Options{})
	var list diag.List
	if r != nil || !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("Run: %v, %v; want findings", r, err)
	}
	for _, f := range list {
		if !f.Pos.IsValid() || filepath.Base(f.Pos.Filename()) != "cpu-burst.cue" {
			t.Errorf("finding %v not positioned in cpu-burst.cue", f)
		}
	}
}
