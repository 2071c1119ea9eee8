package explain

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestSpotFallbacks: with the priority expander preferring the Spot group
// to the on-demand one, explain prints the Spot group's worst case (its
// zones × its maxNodeProvisionTime) and the bound; without a lower group to
// fall back to, nothing.
func TestSpotFallbacks(t *testing.T) {
	src, _ := testsrc.Example(t)
	if got := spotFallbacks(src); len(got) != 0 {
		t.Fatalf("without the priority expander: %v", got)
	}
	src.Cluster.Autoscaler.Expander = "priority,least-waste"
	hi, lo := 15, 10
	src.NodeGroups["spot-gpu-t4"].Priority = &hi
	src.NodeGroups["gpu-t4"].Priority = &lo
	src.NodeGroups["cpu-burst"].Priority = &hi
	src.Cluster.Autoscaler.MaxSpotFallbackDelay = model.DurationOf(45 * time.Minute)
	got := spotFallbacks(src)
	if len(got) != 1 || got[0].Group != "spot-gpu-t4" || got[0].Zones != 3 || got[0].MaxNodeProvisionTime != "20m0s" || got[0].Worst != "1h0m0s" || got[0].Bound != "45m" {
		t.Fatalf("spot fallbacks %+v", got)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, &Report{SpotFallbacks: got}); err != nil {
		t.Fatal(err)
	}
	want := "spot-gpu-t4: if Spot VMs never arrive (and GCE reports no error), a scale-up waits up to 1h0m0s before the autoscaler falls back to a lower priority group (3 zones × maxNodeProvisionTime 20m0s); bound 45m\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("explain prints:\n%s\nwant a line:\n%s", b.String(), want)
	}
	// The Spot group at the lowest priority has nothing to fall back to.
	src.NodeGroups["gpu-t4"].Priority = &hi
	if got := spotFallbacks(src); len(got) != 0 {
		t.Errorf("no lower priority group, yet %v", got)
	}
}
