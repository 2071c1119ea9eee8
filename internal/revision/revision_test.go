package revision_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/revision"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// revisions renders the tests' example with an edit of cpu-burst.cue
// (old → new; none when old is "") and returns every cloud group's revision.
func revisions(t *testing.T, old, new string) map[string]string {
	t.Helper()
	edits := map[string]string{}
	if old != "" {
		b, err := os.ReadFile(filepath.Join(testsrc.Dir(), "cpu-burst.cue"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("cpu-burst.cue has no %q", old)
		}
		edits["cpu-burst.cue"] = strings.Replace(string(b), old, new, 1)
	}
	l, err := source.Load(testsrc.Copy(t, edits))
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range l.Fleet.Clusters[0].CloudGroups() {
		env, script := files[layout.KubeEnvPath(g.Name)], files[layout.StartupScriptPath(g.Name)]
		rev, ok, err := revision.FromKubeEnv(env)
		if err != nil || !ok {
			t.Fatalf("%s: kube-env declares no revision (%v)", g.Name, err)
		}
		if !validRevision(rev) {
			t.Fatalf("%s: revision %q is not %d hex digits", g.Name, rev, revision.Len)
		}
		if err := check(l.Fleet.Clusters[0], g, env, script); err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		out[g.Name] = rev
	}
	return out
}

// What a node is made from changes its group's revision, and only its
// group's; how the autoscaler treats the group does not.
func TestRevisionFollowsTheNode(t *testing.T) {
	base := revisions(t, "", "")
	if len(base) < 3 {
		t.Fatalf("want several cloud groups, got %v", base)
	}
	seen := map[string]string{}
	for g, rev := range base {
		if other, dup := seen[rev]; dup {
			t.Errorf("groups %s and %s share revision %s", g, other, rev)
		}
		seen[rev] = g
	}
	for _, c := range []struct {
		name, old, new string
		changes        bool
	}{
		{"label", `"example.com/pool":     "cpu-burst"`, `"example.com/pool":     "cpu-burst-2"`, true},
		{"taint", `labels: {`, `taints: [{key: "example.com/dedicated", value: "batch", effect: "NoSchedule"}]` + "\n\tlabels: {", true},
		{"machine type", `machineType: "n2-standard-8"`, `machineType: "n2-standard-16"`, true},
		{"image", `image:`, `image: "projects/acme-hybrid-ai/global/images/family/k8s-node-1-36"` + "\n\t_oldImage:", true},
		{"max", `max:`, `max: 7` + "\n\t_oldMax:", false},
		{"scale-down option", `scaleDownUtilizationThreshold: 0.6`, `scaleDownUtilizationThreshold: 0.7`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := revisions(t, c.old, c.new)
			for g, rev := range got {
				changed := rev != base[g]
				want := c.changes && g == "cpu-burst"
				if changed != want {
					t.Errorf("group %s: revision %s → %s, changed %v, want %v", g, base[g], rev, changed, want)
				}
			}
		})
	}
}

// The digest does not depend on itself, on the header, or on the file the
// group is defined in; CheckRead catches artifacts edited after the digest.
func TestRevisionCheck(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["cpu-burst"]
	env, script := files[layout.KubeEnvPath(g.Name)], files[layout.StartupScriptPath(g.Name)]
	rev, _, _ := revision.FromKubeEnv(env)
	for _, other := range []string{"", "0123456789ab"} {
		if got, err := revision.Of(src, g, revision.Set(env, other), revision.Set(script, other)); err != nil || got != rev {
			t.Errorf("with the label set to %q: revision %s (%v), want %s", other, got, err, rev)
		}
	}
	moved := bytes.Replace(script, []byte(layout.HeaderLine(src.Origins[g.Name])), []byte(layout.HeaderLine("nodegroups/other.cue")), 1)
	if bytes.Equal(moved, script) {
		t.Fatal("the script has no header to change")
	}
	if got, _ := revision.Of(src, g, env, moved); got != rev {
		t.Errorf("another header: revision %s, want %s", got, rev)
	}
	for name, c := range map[string]struct{ env, script []byte }{
		"script edited":    {env, bytes.Replace(script, []byte("set -"), []byte("set -x; set -"), 1)},
		"old kube-env":     {revision.Set(env, "0123456789ab"), script},
		"old script label": {env, revision.Set(script, "0123456789ab")},
		"no label":         {bytes.Replace(env, []byte(","+model.RevisionLabel+"="+rev), nil, 1), script},
	} {
		if bytes.Equal(c.env, env) && bytes.Equal(c.script, script) {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		if err := check(src, g, c.env, c.script); err == nil {
			t.Errorf("%s: CheckRead accepted it", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// check is revision.CheckRead of kube-env read as the autoscaler reads it.
func check(src *model.Source, g *model.NodeGroup, env, script []byte) error {
	t, err := kubeenv.ReadTemplate(env)
	if err != nil {
		return fmt.Errorf("kube-env: %w", err)
	}
	return revision.CheckRead(src, g, env, script, t)
}

// validRevision reports whether s has the form of a revision: Len
// lower-case hex digits.
func validRevision(s string) bool {
	if len(s) != revision.Len {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// Stamp writes the revision over the placeholders in place, the revision
// Of reads back from the stamped artifacts; it refuses artifacts whose
// label is not the placeholder.
func TestStamp(t *testing.T) {
	if len(revision.Placeholder) != revision.Len || !validRevision(revision.Placeholder) {
		t.Fatalf("placeholder %q is not a revision's width of hex digits", revision.Placeholder)
	}
	src, files := testsrc.Example(t)
	g := src.NodeGroups["cpu-burst"]
	env0, script0 := files[layout.KubeEnvPath(g.Name)], files[layout.StartupScriptPath(g.Name)]
	want, _, _ := revision.FromKubeEnv(env0)
	env := revision.Set(env0, revision.Placeholder)
	script := revision.Set(script0, revision.Placeholder)
	vars, err := kubeenv.Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	envAt, scriptAt := &env[0], &script[0]
	rev, err := revision.Stamp(src, g, vars[kubeenv.AutoscalerEnvVars], env, script)
	if err != nil {
		t.Fatal(err)
	}
	if rev != want {
		t.Errorf("Stamp gave %s, the rendered kube-env declares %s", rev, want)
	}
	if !bytes.Equal(env, env0) || !bytes.Equal(script, script0) {
		t.Errorf("the stamped artifacts are not the rendered ones")
	}
	if &env[0] != envAt || &script[0] != scriptAt {
		t.Errorf("Stamp did not write in place")
	}
	for name, c := range map[string]struct{ env, script []byte }{
		"kube-env label not the placeholder": {revision.Set(env0, "0123456789ab"), revision.Set(script0, revision.Placeholder)},
		"script label not the placeholder":   {revision.Set(env0, revision.Placeholder), revision.Set(script0, "")},
		"no script label":                    {revision.Set(env0, revision.Placeholder), bytes.ReplaceAll(script0, []byte(model.RevisionLabel), []byte("example.com/x"))},
	} {
		if _, err := revision.Stamp(src, g, vars[kubeenv.AutoscalerEnvVars], c.env, c.script); err == nil {
			t.Errorf("%s: Stamp accepted it", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
