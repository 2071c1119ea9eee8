package model_test

import (
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/model"
)

// A service account's ID is "<cluster>-<role>" while that fits GCE's 30
// characters; a longer cluster name is cut and a hash of the whole name
// keeps two clusters that share the cut apart.
func TestServiceAccountID(t *testing.T) {
	if got := model.ServiceAccountID("prod", model.RoleNodes); got != "prod-nodes" {
		t.Errorf("short cluster: %q, want prod-nodes", got)
	}
	a := model.ServiceAccountID("a-very-long-cluster-name-one", model.RoleAutoscaler)
	b := model.ServiceAccountID("a-very-long-cluster-name-two", model.RoleAutoscaler)
	for _, id := range []string{a, b} {
		if len(id) > 30 || !strings.HasSuffix(id, "-"+model.RoleAutoscaler) || !strings.HasPrefix(id, "a-very-long") {
			t.Errorf("long cluster: %q, want at most 30 characters, the cluster's start and the role", id)
		}
	}
	if a == b {
		t.Errorf("two long clusters share the service account ID %q", a)
	}
	if model.ServiceAccountID("a-very-long-cluster-name-one", model.RoleNodes) == a {
		t.Error("the two roles of a cluster share an ID")
	}
}

// The autoscaler's group runs as the autoscaler; every other cloud group
// as the nodes.
func TestRoleOf(t *testing.T) {
	src := &model.Source{Cluster: model.Cluster{Autoscaler: model.Autoscaler{NodeGroup: "ca"}}}
	if r := model.RoleOf(src, &model.NodeGroup{Name: "ca"}); r != model.RoleAutoscaler {
		t.Errorf("the autoscaler's group: %s", r)
	}
	if r := model.RoleOf(src, &model.NodeGroup{Name: "gpu"}); r != model.RoleNodes {
		t.Errorf("another group: %s", r)
	}
}

// The device plugin advertises count × replicas GPUs when a group shares
// them, count otherwise, none without GPUs.
func TestAdvertisedGPUs(t *testing.T) {
	for _, c := range []struct {
		gpu  *model.GPU
		want int
	}{
		{nil, 0},
		{&model.GPU{Type: "nvidia-l4", Count: 2}, 2},
		{&model.GPU{Type: "nvidia-l4", Count: 2, Sharing: &model.GPUSharing{}}, 2},
		{&model.GPU{Type: "nvidia-l4", Count: 2, Sharing: &model.GPUSharing{TimeSlicing: &model.TimeSlicing{Replicas: 4}}}, 8},
	} {
		g := &model.NodeGroup{GPU: c.gpu}
		if got := g.AdvertisedGPUs(); got != c.want {
			t.Errorf("GPU %+v: %d advertised, want %d", c.gpu, got, c.want)
		}
	}
}
