package model_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/model"
)

// GCERefFromProviderID follows GceRefFromProviderId (kubernetes/autoscaler
// cluster-autoscaler-1.35.0, cloudprovider/gce/gce_cloud_provider.go): the
// first 6 bytes are skipped unread, the rest must split into exactly 3
// parts at "/", empty parts included.
func TestGCERefFromProviderID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want model.GCERef
		err  string
	}{
		{"gce://p-1/us-central1-a/vm-1", model.GCERef{"p-1", "us-central1-a", "vm-1"}, ""},
		{model.UnmanagedProviderID("cp-1.dc1.example.com"), model.GCERef{"onprem.invalid", "onprem", "cp-1.dc1.example.com"}, ""},
		{"", model.GCERef{}, "wrong id: expected format gce://<project-id>/<zone>/<name>, got nil"},
		{"k3s:", model.GCERef{}, "shorter than 6 bytes"},
		{"kind://docker/kind/worker", model.GCERef{}, "wrong id: expected format gce://<project-id>/<zone>/<name>, got kind://docker/kind/worker"},
		// The prefix is not read: a foreign ID of the right shape parses.
		{"aws:///us-east-1a/i-0abc", model.GCERef{"", "us-east-1a", "i-0abc"}, ""},
		{"vsphere://4231-abcd", model.GCERef{"e:", "", "4231-abcd"}, ""},
	} {
		got, err := model.GCERefFromProviderID(c.id)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one containing %q", c.id, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.id, got, err, c.want)
		}
	}
	if _, err := model.GCERefFromProviderID(""); !errors.Is(err, model.ErrProviderIDEmpty) {
		t.Errorf("empty: %v, want ErrProviderIDEmpty", err)
	}
}

// ParseGCEProviderID, nodegen's own reading, takes only a gce:// prefix
// and three non-empty parts: where the autoscaler's reading takes a
// foreign or empty part, it says the node is not a GCE instance.
func TestParseGCEProviderID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want model.GCERef
		ok   bool
	}{
		{"gce://p-1/us-central1-a/vm-1", model.GCERef{"p-1", "us-central1-a", "vm-1"}, true},
		{model.UnmanagedProviderID("cp-1"), model.GCERef{"onprem.invalid", "onprem", "cp-1"}, true},
		{"aws:///us-east-1a/i-0abc", model.GCERef{}, false}, // the autoscaler's reading takes it
		{"vsphere://4231-abcd", model.GCERef{}, false},
		{"gce://p-1//vm-1", model.GCERef{}, false},
		{"gce://p-1/us-central1-a/", model.GCERef{}, false},
		{"gce:///us-central1-a/vm-1", model.GCERef{}, false},
		{"gce://p-1/us-central1-a/vm-1/x", model.GCERef{}, false},
		{"gce://p-1/us-central1-a", model.GCERef{}, false},
		{"", model.GCERef{}, false},
	} {
		got, ok := model.ParseGCEProviderID(c.id)
		if ok != c.ok || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}

func TestUnmanagedProviderID(t *testing.T) {
	for id, want := range map[string]bool{
		"gce://onprem.invalid/onprem/cp-1": true,
		"gce://onprem.invalid/onprem/":     false,
		"gce://onprem.invalid/onprem/a/b":  false,
		"gce://onprem.invalid/dc1/cp-1":    false,
		"gce://acme/us-central1-a/cp-1":    false,
	} {
		if got := model.IsUnmanagedProviderID(id); got != want {
			t.Errorf("%q: %v, want %v", id, got, want)
		}
	}
}

// The table of releases: every line up to 1.36 has the bug; a tag past a
// line's last patch, or of a line not in the table, is unknown; the
// default tag is the newest patch of the cluster's minor.
func TestAutoscalerReleases(t *testing.T) {
	for tag, want := range map[string]struct{ known, fails, upcoming bool }{
		"v1.30.0": {true, true, false},
		"v1.34.5": {true, true, false},
		"v1.35.0": {true, true, true},
		"v1.35.2": {true, true, true},
		"v1.36.1": {true, true, true},
		"v1.35.3": {false, false, false},
		"v1.37.0": {false, false, false},
	} {
		r, err := model.LookupAutoscalerRelease(tag)
		if err != nil || r.Known != want.known || r.FailsWithoutProviderID != want.fails || r.UpcomingNodeBlocks != want.upcoming {
			t.Errorf("%s: %+v, %v; want %+v", tag, r, err, want)
		}
	}
	for _, bad := range []string{"1.35.2", "v2.0.0", "v1.35", "v1.x.0"} {
		if _, err := model.LookupAutoscalerRelease(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	for minor, want := range map[int]string{35: "v1.35.2", 36: "v1.36.1", 34: "v1.34.5", 38: "v1.38.0"} {
		if got := model.DefaultAutoscalerTag(minor); got != want {
			t.Errorf("minor %d: %s, want %s", minor, got, want)
		}
	}
}
