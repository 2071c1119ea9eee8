package model_test

import (
	"testing"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestGroupOfInstance: an instance belongs to the cloud group of the
// cluster's project, one of the group's zones and the group's base
// instance name followed by '-' and the four characters a MIG appends.
func TestGroupOfInstance(t *testing.T) {
	src, _ := testsrc.Example(t)
	for _, c := range []struct{ id, want string }{
		{"gce://acme-hybrid-ai/us-central1-a/hybrid-ai-gpu-t4-ab12", "gpu-t4"},
		{"gce://acme-hybrid-ai/us-central1-b/hybrid-ai-cpu-burst-zz9z", "cpu-burst"},
		{"gce://acme-hybrid-ai/us-central1-a/hybrid-ai-autoscaler-0a0a", "autoscaler"},
		{"gce://acme-hybrid-ai/us-central1-c/hybrid-ai-autoscaler-0a0a", ""}, // not one of its zones
		{"gce://other-project/us-central1-a/hybrid-ai-gpu-t4-ab12", ""},
		{"gce://acme-hybrid-ai/us-central1-a/hybrid-ai-gpu-t4-ab123", ""},
		{"gce://acme-hybrid-ai/us-central1-a/hybrid-ai-gpu-ab12", ""},
		{"gce://acme-hybrid-ai/us-central1-a", ""},
	} {
		ref, ok := model.ParseGCEProviderID(c.id)
		got := ""
		if ok {
			if g := src.GroupOfInstance(ref); g != nil {
				got = g.Name
			}
		}
		if got != c.want {
			t.Errorf("%s: group %q, want %q", c.id, got, c.want)
		}
	}
}
