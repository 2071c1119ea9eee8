package model_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/model"
)

// Resolve derives, per group: the default startup taint of a cloud GPU
// group (none on-prem, none when the source sets one), the labels its
// nodes carry (the user's, the group label, the GPU label on cloud GPU
// groups, the Spot and device-plugin labels, an on-prem group's
// locality), and the Spot groups' shutdown grace periods.
func TestResolve(t *testing.T) {
	own := &model.Taint{Key: model.StartupTaintPrefix + "mine", Value: "x", Effect: "NoExecute"}
	gpu := &model.GPU{Type: "nvidia-l4", Count: 1}
	shared := &model.GPU{Type: "nvidia-l4", Count: 1, Sharing: &model.GPUSharing{TimeSlicing: &model.TimeSlicing{Replicas: 2}}}
	for _, c := range []struct {
		name        string
		g           model.NodeGroup
		wantStartup *model.Taint
		wantLabels  map[string]string
		wantGrace   [2]string // shutdownGracePeriod, ...CriticalPods
	}{
		{"cloud GPU group: default startup taint, GPU label",
			model.NodeGroup{Kind: model.KindGCE, GPU: gpu, Labels: map[string]string{"team": "ml"}, Kubelet: &model.Kubelet{}},
			&model.Taint{Key: model.DefaultGPUStartupTaintKey, Value: "true", Effect: "NoSchedule"},
			map[string]string{"team": "ml", model.GroupLabel: "g", model.GPULabel: "nvidia-l4"}, [2]string{}},
		{"cloud GPU group with its own startup taint",
			model.NodeGroup{Kind: model.KindGCEStatic, GPU: gpu, StartupTaint: own, Kubelet: &model.Kubelet{}},
			own, map[string]string{model.GroupLabel: "g", model.GPULabel: "nvidia-l4"}, [2]string{}},
		{"on-prem GPU group: no startup taint, no GPU label, its locality",
			model.NodeGroup{Kind: model.KindOnPrem, GPU: gpu, Locality: &model.Locality{Region: "dc", Zone: "dc-1"}, Kubelet: &model.Kubelet{}},
			nil, map[string]string{model.GroupLabel: "g", model.RegionLabel: "dc", model.ZoneLabel: "dc-1"}, [2]string{}},
		{"cloud group: no locality labels of its own",
			model.NodeGroup{Kind: model.KindGCE, Locality: &model.Locality{Region: "dc", Zone: "dc-1"}, Kubelet: &model.Kubelet{}},
			nil, map[string]string{model.GroupLabel: "g"}, [2]string{}},
		{"Spot group: Spot label and shutdown grace periods",
			model.NodeGroup{Kind: model.KindGCE, Spot: true, Kubelet: &model.Kubelet{}},
			nil, map[string]string{model.GroupLabel: "g", model.SpotLabel: "true"},
			[2]string{"30s", "10s"}},
		{"Spot group with its own grace period keeps it",
			model.NodeGroup{Kind: model.KindGCE, Spot: true, Kubelet: &model.Kubelet{ShutdownGracePeriod: model.DurationOf(45 * time.Second)}},
			nil, map[string]string{model.GroupLabel: "g", model.SpotLabel: "true"}, [2]string{"45s", ""}},
		{"on-prem Spot flag: no cloud capacity labels",
			model.NodeGroup{Kind: model.KindOnPrem, Spot: true, Kubelet: &model.Kubelet{}},
			nil, map[string]string{model.GroupLabel: "g"}, [2]string{}},
		{"shared GPUs: the device plugin's config label",
			model.NodeGroup{Kind: model.KindGCE, GPU: shared, Kubelet: &model.Kubelet{}},
			&model.Taint{Key: model.DefaultGPUStartupTaintKey, Value: "true", Effect: "NoSchedule"},
			map[string]string{model.GroupLabel: "g", model.GPULabel: "nvidia-l4", model.DevicePluginConfigLabel: "g"}, [2]string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := c.g
			g.Name = "g"
			src := &model.Source{NodeGroups: map[string]*model.NodeGroup{"g": &g}}
			src.Resolve()
			switch {
			case (g.StartupTaint == nil) != (c.wantStartup == nil):
				t.Errorf("startup taint %v, want %v", g.StartupTaint, c.wantStartup)
			case g.StartupTaint != nil && *g.StartupTaint != *c.wantStartup:
				t.Errorf("startup taint %v, want %v", *g.StartupTaint, *c.wantStartup)
			}
			if !maps.Equal(g.NodeLabels, c.wantLabels) {
				t.Errorf("node labels %v, want %v", g.NodeLabels, c.wantLabels)
			}
			if got := [2]string{g.Kubelet.ShutdownGracePeriod.String(), g.Kubelet.ShutdownGracePeriodCriticalPods.String()}; got != c.wantGrace {
				t.Errorf("shutdown grace periods %q, want %q", got, c.wantGrace)
			}
			if g.Labels == nil || g.Taints == nil {
				t.Errorf("labels %v, taints %v: want empty, not nil", g.Labels, g.Taints)
			}
		})
	}
}

// The node labels are the group's own map: changing the user's labels
// afterwards does not change them.
func TestResolveCopiesLabels(t *testing.T) {
	g := &model.NodeGroup{Name: "g", Kind: model.KindGCE, Labels: map[string]string{"a": "1"}}
	(&model.Source{NodeGroups: map[string]*model.NodeGroup{"g": g}}).Resolve()
	g.Labels["a"] = "2"
	if g.NodeLabels["a"] != "1" {
		t.Errorf("node label a=%q after the user's label changed, want 1", g.NodeLabels["a"])
	}
}

// A group's GCE names all start with "<cluster>-<group>"; a MIG adds its
// zone, and its URL is the one --nodes takes.
func TestGCENames(t *testing.T) {
	c := &model.Cluster{Name: "prod", GCP: model.GCP{Project: "acme-1", Region: "us-central1"}}
	g := &model.NodeGroup{Name: "gpu-t4", MachineType: "n1-standard-8"}
	for _, n := range []struct{ what, got, want string }{
		{"base instance name", c.BaseInstanceName(g), "prod-gpu-t4"},
		{"template prefix", c.TemplatePrefix(g), "prod-gpu-t4-"},
		{"MIG", c.MIGName(g, "us-central1-a"), "prod-gpu-t4-us-central1-a"},
		{"MIG URL", c.MIGURL(g, "us-central1-a"), "https://www.googleapis.com/compute/v1/projects/acme-1/zones/us-central1-a/instanceGroups/prod-gpu-t4-us-central1-a"},
	} {
		if n.got != n.want {
			t.Errorf("%s: %q, want %q", n.what, n.got, n.want)
		}
	}
	boot := c.BootLabels(g, "us-central1-b")
	if want := map[string]string{model.ZoneLabel: "us-central1-b", model.RegionLabel: "us-central1", model.InstanceTypeLabel: "n1-standard-8"}; !maps.Equal(boot, want) {
		t.Errorf("boot labels %v, want %v", boot, want)
	}
	// The join labels are the node labels and the boot labels; the boot
	// labels win over a node label of the same key.
	g.NodeLabels = map[string]string{model.GroupLabel: "gpu-t4", model.ZoneLabel: "written-by-hand"}
	join := c.JoinLabels(g, "us-central1-b")
	if join[model.GroupLabel] != "gpu-t4" || join[model.ZoneLabel] != "us-central1-b" || len(join) != 4 {
		t.Errorf("join labels %v", join)
	}
}

// Which kinds are cloud groups, which the autoscaler sizes, and the
// facts the source's groups give by kind, in name order.
func TestGroupsByKind(t *testing.T) {
	taint := &model.Taint{Key: model.StartupTaintPrefix + "gpu", Value: "true", Effect: "NoSchedule"}
	custom := &model.Taint{Key: "example.com/not-ready", Value: "true", Effect: "NoSchedule"}
	src := &model.Source{
		Cluster: model.Cluster{Name: "c", GCP: model.GCP{Project: "p"}},
		NodeGroups: map[string]*model.NodeGroup{
			"z-auto":   {Name: "z-auto", Kind: model.KindGCE, Zones: []string{"b", "a"}, Min: 1, Max: 3, StartupTaint: custom},
			"a-static": {Name: "a-static", Kind: model.KindGCEStatic, Zones: []string{"a"}, Min: 2, Max: 2, GPU: &model.GPU{Count: 1}, StartupTaint: taint},
			"m-onprem": {Name: "m-onprem", Kind: model.KindOnPrem, GPU: &model.GPU{Count: 1}, StartupTaint: custom},
			"b-gpu":    {Name: "b-gpu", Kind: model.KindGCE, Zones: []string{"a"}, GPU: &model.GPU{Count: 1}, StartupTaint: custom},
			"c-nogpu":  {Name: "c-nogpu", Kind: model.KindGCE, Zones: []string{"a"}, GPU: &model.GPU{Count: 1}},
		},
	}
	for _, k := range []struct {
		kind              string
		cloud, autoscaled bool
	}{{model.KindGCE, true, true}, {model.KindGCEStatic, true, false}, {model.KindOnPrem, false, false}} {
		g := &model.NodeGroup{Kind: k.kind}
		if g.Cloud() != k.cloud || g.Autoscaled() != k.autoscaled {
			t.Errorf("%s: cloud %v, autoscaled %v; want %v, %v", k.kind, g.Cloud(), g.Autoscaled(), k.cloud, k.autoscaled)
		}
	}
	if got, want := src.CloudGroupNames(), []string{"a-static", "b-gpu", "c-nogpu", "z-auto"}; !slices.Equal(got, want) {
		t.Errorf("cloud groups %v, want %v", got, want)
	}
	var gpu []string
	for _, g := range src.GPUGroups() {
		gpu = append(gpu, g.Name)
	}
	// A GPU group without a startup taint is no GPU group here (nothing
	// waits for its driver); an on-prem one is no cloud group.
	if want := []string{"a-static", "b-gpu"}; !slices.Equal(gpu, want) {
		t.Errorf("GPU groups %v, want %v", gpu, want)
	}
	var migs []string
	for _, m := range src.AutoscaledMIGs() {
		migs = append(migs, m.Group.Name+"/"+m.Zone)
		if m.URL != src.Cluster.MIGURL(m.Group, m.Zone) || m.Min != m.Group.Min || m.Max != m.Group.Max {
			t.Errorf("MIG %+v", m)
		}
	}
	// By group, then in the group's zone order; gce-static groups are not
	// the autoscaler's.
	if want := []string{"b-gpu/a", "c-nogpu/a", "z-auto/b", "z-auto/a"}; !slices.Equal(migs, want) {
		t.Errorf("autoscaled MIGs %v, want %v", migs, want)
	}
	// The custom startup taint needs --startup-taint once, whatever the
	// number of groups that have it; the prefixed one the autoscaler knows.
	if got := src.ExtraStartupTaints(); !slices.Equal(got, []string{custom.Key}) {
		t.Errorf("extra startup taints %v, want [%s]", got, custom.Key)
	}
	if multi := src.MultiZone(); len(multi) != 1 || multi[0].Name != "z-auto" || !src.BalanceSimilarNodeGroups() {
		t.Errorf("multi-zone groups %v, balance %v", multi, src.BalanceSimilarNodeGroups())
	}
	off := false
	src.Cluster.Autoscaler.BalanceSimilarNodeGroups = &off
	if src.BalanceSimilarNodeGroups() {
		t.Error("the source's balanceSimilarNodeGroups: false is not kept")
	}
	if z := src.NodeGroups["z-auto"]; z.MinNodes() != 2 || z.MaxNodes() != 6 {
		t.Errorf("z-auto: %d to %d nodes, want 2 to 6 (min and max per zone)", z.MinNodes(), z.MaxNodes())
	}
}

// A node joins with the group's taints, then its startup taint.
func TestJoinTaints(t *testing.T) {
	a := model.Taint{Key: "a", Value: "1", Effect: "NoSchedule"}
	s := model.Taint{Key: model.StartupTaintPrefix + "s", Value: "true", Effect: "NoSchedule"}
	g := &model.NodeGroup{Taints: []model.Taint{a}, StartupTaint: &s}
	if got := g.JoinTaints(); !slices.Equal(got, []model.Taint{a, s}) {
		t.Errorf("join taints %v", got)
	}
	if got := g.JoinTaints(); &got[0] == &g.Taints[0] {
		t.Error("JoinTaints shares the group's slice")
	}
	if got := (&model.NodeGroup{Taints: []model.Taint{a}}).JoinTaints(); !slices.Equal(got, []model.Taint{a}) {
		t.Errorf("without a startup taint: %v", got)
	}
}

// The reservations the autoscaler reads from kube_reserved are
// kubeReserved and systemReserved added per resource.
func TestTotalReserved(t *testing.T) {
	g := &model.NodeGroup{Kubelet: &model.Kubelet{
		KubeReserved:   map[string]string{"cpu": "100m", "memory": "1Gi"},
		SystemReserved: map[string]string{"cpu": "150m", "ephemeral-storage": "1Gi"},
	}}
	got, err := g.TotalReserved()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"cpu": "250m", "memory": "1Gi", "ephemeral-storage": "1Gi"}; !maps.Equal(got, want) {
		t.Errorf("total reserved %v, want %v", got, want)
	}
	g.Kubelet.SystemReserved["cpu"] = "lots"
	if _, err := g.TotalReserved(); err == nil {
		t.Error("an unparsable reservation was added up")
	}
}

// The autoscaler's image: the source's version, else the newest known
// patch of the control plane's minor; nothing for a version nodegen
// cannot read.
func TestAutoscalerImageTag(t *testing.T) {
	for _, c := range []struct {
		cluster model.Cluster
		want    string
	}{
		{model.Cluster{KubernetesVersion: "1.35.2", Autoscaler: model.Autoscaler{Version: "v1.34.9"}}, "v1.34.9"},
		{model.Cluster{KubernetesVersion: "1.35.2"}, model.DefaultAutoscalerTag(35)},
		{model.Cluster{KubernetesVersion: "1.35.2", ControlPlaneVersion: "1.34.1"}, model.DefaultAutoscalerTag(34)},
		{model.Cluster{KubernetesVersion: "2.1.0"}, ""},
		{model.Cluster{KubernetesVersion: "1.x.0"}, ""},
		{model.Cluster{KubernetesVersion: "1"}, ""},
	} {
		if got := c.cluster.AutoscalerImageTag(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.cluster, got, c.want)
		}
	}
	if model.DefaultAutoscalerTag(35) == model.DefaultAutoscalerTag(34) {
		t.Error("two minors share a default tag")
	}
}

// Versions: the control plane's is controlPlaneVersion or the cluster's;
// a group's nodes join with the group's or the cluster's.
func TestVersionsOfParts(t *testing.T) {
	c := &model.Cluster{KubernetesVersion: "1.35.2"}
	g := &model.NodeGroup{}
	if c.ControlPlane() != "1.35.2" || c.NodeVersion(g) != "1.35.2" {
		t.Errorf("defaults: control plane %s, nodes %s", c.ControlPlane(), c.NodeVersion(g))
	}
	c.ControlPlaneVersion, g.KubernetesVersion = "1.36.0", "1.34.5"
	if c.ControlPlane() != "1.36.0" || c.NodeVersion(g) != "1.34.5" || c.NodeVersion(&model.NodeGroup{}) != "1.35.2" {
		t.Errorf("set: control plane %s, nodes %s", c.ControlPlane(), c.NodeVersion(g))
	}
}

// maxNodeProvisionTime: a group's own applies to autoscaled groups only
// (the autoscaler reads it from kube-env); the join deadline leaves the
// boot and registration margins, and is refused below its minimum.
func TestJoinDeadline(t *testing.T) {
	c := &model.Cluster{Autoscaler: model.Autoscaler{MaxNodeProvisionTime: model.DurationOf(15 * time.Minute)}}
	auto := &model.NodeGroup{Kind: model.KindGCE, Autoscaling: model.AutoscalingOptions{MaxNodeProvisionTime: model.DurationOf(20 * time.Minute)}}
	static := &model.NodeGroup{Kind: model.KindGCEStatic, Autoscaling: model.AutoscalingOptions{MaxNodeProvisionTime: model.DurationOf(20 * time.Minute)}}
	for _, x := range []struct {
		g    *model.NodeGroup
		want time.Duration
	}{{auto, 20 * time.Minute}, {static, 15 * time.Minute}} {
		if got := c.MaxNodeProvisionTime(x.g); got != x.want {
			t.Errorf("%s: maxNodeProvisionTime %v, want %v", x.g.Kind, got, x.want)
		}
		d, err := c.JoinDeadline(x.g)
		if want := x.want - model.JoinBootMargin - model.JoinRegistrationMargin; err != nil || d != want {
			t.Errorf("%s: join deadline %v (%v), want %v", x.g.Kind, d, err, want)
		}
	}
	short := model.MinJoinDeadline + model.JoinBootMargin + model.JoinRegistrationMargin - time.Second
	c.Autoscaler.MaxNodeProvisionTime = model.DurationOf(short)
	if _, err := c.JoinDeadline(static); err == nil {
		t.Errorf("maxNodeProvisionTime %s: a join deadline below %s was accepted", short, model.MinJoinDeadline)
	}
}

// Only the autoscaler's group may reach the metadata server from pods.
func TestPodsMayReachMetadataServer(t *testing.T) {
	c := &model.Cluster{Autoscaler: model.Autoscaler{NodeGroup: "ca"}}
	if !c.PodsMayReachMetadataServer(&model.NodeGroup{Name: "ca"}) || c.PodsMayReachMetadataServer(&model.NodeGroup{Name: "gpu"}) {
		t.Error("metadata server access is not the autoscaler's group's alone")
	}
}

// The hard eviction set: the kubelet's defaults with the source's
// signals over them; the autoscaler reads only its signals.
func TestEvictionHard(t *testing.T) {
	g := &model.NodeGroup{Kubelet: &model.Kubelet{EvictionHard: map[string]string{"memory.available": "500Mi"}}}
	all := g.EvictionHard()
	for k, v := range model.DefaultEvictionHard {
		if want := map[bool]string{true: "500Mi", false: v}[k == "memory.available"]; all[k] != want {
			t.Errorf("%s=%q, want %q", k, all[k], want)
		}
	}
	if model.DefaultEvictionHard["memory.available"] == "500Mi" {
		t.Fatal("the test's value is the default: it proves nothing")
	}
	auto := g.AutoscalerEvictionHard()
	if len(auto) != len(model.AutoscalerEvictionSignals) || auto["memory.available"] != "500Mi" {
		t.Errorf("the autoscaler's eviction signals %v", auto)
	}
	if (&model.NodeGroup{}).EvictionHard()["memory.available"] != model.DefaultEvictionHard["memory.available"] {
		t.Error("a group without kubelet settings does not get the kubelet's defaults")
	}
}

// Resolve decides each group's shape once: the machine type's from
// nodegen's table, a declared capacity over it, and for a machine type the
// table does not know no machine and an error that says how to declare one.
func TestResolveShape(t *testing.T) {
	src := &model.Source{NodeGroups: map[string]*model.NodeGroup{
		"known":    {Name: "known", Kind: model.KindGCE, MachineType: "n1-standard-8"},
		"declared": {Name: "declared", Kind: model.KindGCE, MachineType: "n1-standard-8", Capacity: &model.Capacity{CPU: 4, Memory: "15Gi"}},
		"future":   {Name: "future", Kind: model.KindGCE, MachineType: "z9-future-8"},
		"sized":    {Name: "sized", Kind: model.KindGCE, MachineType: "z9-future-8", Capacity: &model.Capacity{CPU: 2, Memory: "1536Mi"}},
	}}
	src.Resolve()
	for name, want := range map[string]struct {
		machine  bool
		cpu, mem int64
		err      string
	}{
		"known":    {true, 8, 30 << 30, ""},
		"declared": {true, 4, 15 << 30, ""},
		"future":   {false, 0, 0, "machine type z9-future-8 is not in nodegen's table; declare its shape in the group: capacity: {cpu: N, memory: \"NGi\"}"},
		"sized":    {false, 2, 1536 << 20, ""},
	} {
		s := src.NodeGroups[name].Shape
		cpu, mem, err := s.Resources()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (s.Machine != nil) != want.machine || cpu != want.cpu || mem != want.mem || got != want.err {
			t.Errorf("%s: machine %v, %d vCPUs, %d bytes, error %q; want machine %v, %d, %d, %q", name, s.Machine != nil, cpu, mem, got, want.machine, want.cpu, want.mem, want.err)
		}
	}
}
