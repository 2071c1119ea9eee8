package validate_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/validate"
)

// TestInstanceNamePrefixChains: every pair of cloud groups where one's
// name (so its base instance name) starts with the other's and they share
// a zone is reported once, at the longer name, whatever else sorts
// between them (groups sharing no zone, onprem groups, names that only
// share a beginning).
func TestInstanceNamePrefixChains(t *testing.T) {
	src, _ := testsrc.Example(t)
	base := src.NodeGroups["cpu-burst"] // us-central1-a and -b
	add := func(name, kind string, zones ...string) {
		g := *base
		g.Name, g.Kind, g.Zones = name, kind, zones
		src.NodeGroups[name] = &g
	}
	// cpu-burst itself is the root of the chain.
	add("cpu-burst-a", model.KindGCE, "us-central1-a")
	add("cpu-burst-a-b", model.KindGCE, "us-central1-a", "us-central1-b")
	add("cpu-burst-a-c", model.KindGCE, "us-central1-c") // shares no zone with any of them
	add("cpu-burst-a-x", model.KindOnPrem)               // not a cloud group
	add("cpu-burst-b", model.KindGCE, "us-central1-b")
	add("cpu-burst2", model.KindGCE, "us-central1-b")
	add("cpu-bursu", model.KindGCE, "us-central1-a") // shares a beginning, not the name
	var got [][2]string
	re := regexp.MustCompile(`^the VMs of this group \(hybrid-ai-(\S+)-xxxx\) start with hybrid-ai-(\S+), the base instance name of node group (\S+), in `)
	for _, f := range validate.Source(src, noPos{}) {
		m := re.FindStringSubmatch(f.Msg)
		if m == nil {
			continue
		}
		if `nodeGroups."`+m[1]+`"` != f.Path || m[2] != m[3] {
			t.Errorf("finding at %s: %s", f.Path, f.Msg)
		}
		got = append(got, [2]string{m[3], m[1]})
	}
	slices.SortFunc(got, func(a, b [2]string) int { return slices.Compare(a[:], b[:]) })
	want := [][2]string{
		{"cpu-burst", "cpu-burst-a"},
		{"cpu-burst", "cpu-burst-a-b"},
		{"cpu-burst", "cpu-burst-b"},
		{"cpu-burst", "cpu-burst2"},
		{"cpu-burst-a", "cpu-burst-a-b"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("prefix findings (group, group whose name it begins)\n got %v\nwant %v", got, want)
	}
}
