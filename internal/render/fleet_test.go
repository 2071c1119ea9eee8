package render_test

import (
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// A one-cluster source has no fleet-wide files; a fleet has its drawing:
// a box per cluster with a node per group, inside a box per mesh network,
// the gateways on their groups and joined across networks.
func TestFleetWide(t *testing.T) {
	l, err := source.Load(testsrc.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if files, err := render.FleetWide(l.Fleet); err != nil || len(files) != 0 {
		t.Fatalf("one-cluster source: %v, %v", files.Paths(), err)
	}

	l, err = source.Load(testsrc.FleetDir())
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.FleetWide(l.Fleet)
	if err != nil {
		t.Fatal(err)
	}
	if p := files.Paths(); len(p) != 1 || p[0] != layout.FleetDocsPath {
		t.Fatalf("paths = %v", p)
	}
	doc := string(files[layout.FleetDocsPath])
	if !layout.IsGenerated(files[layout.FleetDocsPath]) {
		t.Error("no generated header")
	}
	for _, want := range []string{
		"| serve | 1.35.2 | `10.20.0.10:6443` | `acme-hybrid-ai` | `us-central1` | `autoscaler` (gce-static)<br>`gateway` (gce-static)<br>`gpu-t4` (gce) | `out/serve/` |",
		"| train | remote of serve | `net-onprem` | `onprem-gpu` |",
		"  subgraph mesh[\"mesh acme-mesh\"]\n    subgraph n0[\"network net-cloud\"]\n      subgraph c0[\"cluster serve, primary\"]\n",
		"        c0g1[\"gateway, gce-static, e2-standard-4, 2 in 1 zone(s) (fixed)\"]\n",
		"        c1g1[\"gpu-t4, gce, n1-standard-8, 1 × nvidia-tesla-t4, 0–16 in 2 zone(s)\"]\n",
		"        c0gw -->|runs on| c0g1\n",
		"        c1gw -->|runs on| c1g2\n",
		"  c0gw <-->|cross-network 15443| c1gw\n",
		"  c1 -.->|istiod 15012, 15017| c0gw\n",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("fleet.md lacks %q:\n%s", want, doc)
		}
	}

	// Without a mesh: the clusters side by side, no gateway.
	l.Fleet.Mesh = nil
	files, err = render.FleetWide(l.Fleet)
	if err != nil {
		t.Fatal(err)
	}
	doc = string(files[layout.FleetDocsPath])
	if strings.Contains(doc, "gw") || strings.Contains(doc, "## Mesh") || !strings.Contains(doc, "  subgraph c1[\"cluster train\"]\n") {
		t.Errorf("fleet.md without a mesh:\n%s", doc)
	}
}
