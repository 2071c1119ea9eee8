package source_test

import (
	"testing"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// Release keeps the positions of the node groups' names, in a one-cluster
// source and in each member of a fleet, and drops the evaluation.
func TestRelease(t *testing.T) {
	for _, dir := range []string{testsrc.Dir(), testsrc.FleetDir()} {
		l, err := source.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := map[*source.Member]map[string]string{}
		for _, m := range l.Members {
			want[m] = map[string]string{}
			for name := range m.Source.NodeGroups {
				p := m.KeyPos(cue.Str("nodeGroups"), cue.Str(name))
				if !p.IsValid() {
					t.Fatalf("%s: group %s has no position before Release", dir, name)
				}
				want[m][name] = p.String()
			}
		}
		some := l.Members[0]
		if !some.Pos(cue.Str("cluster"), cue.Str("name")).IsValid() {
			t.Fatal("no position of cluster.name before Release")
		}
		l.Release()
		if l.Value.Exists() || l.Syntax != nil {
			t.Errorf("%s: the evaluation is still held after Release", dir)
		}
		if p := l.Pos(cue.Str("cluster")); p.IsValid() {
			t.Errorf("%s: the root still knows positions after Release (%s)", dir, p)
		}
		for m, groups := range want {
			for name, p := range groups {
				if got := m.KeyPos(cue.Str("nodeGroups"), cue.Str(name)); got.String() != p {
					t.Errorf("%s: group %s at %s after Release, want %s", dir, name, got, p)
				}
			}
			if m.Source == nil || len(m.Source.NodeGroups) == 0 {
				t.Errorf("%s: the model was dropped", dir)
			}
		}
		if p := some.Pos(cue.Str("cluster"), cue.Str("name")); p.IsValid() {
			t.Errorf("%s: cluster.name at %s after Release, want no position", dir, p)
		}
	}
}
