package render_test

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// schedulable reports whether a pod with spec could land on node: its
// required node affinity and nodeSelector match and it tolerates every
// NoSchedule/NoExecute taint (component-helpers, as the scheduler does).
func schedulable(spec *corev1.PodSpec, node *corev1.Node) (bool, string) {
	pod := &corev1.Pod{Spec: *spec}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		return false, fmt.Sprintf("selector does not match (err %v)", err)
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	if untolerated {
		return false, "untolerated taint " + taint.ToString()
	}
	return true, ""
}

// exampleNodes joins one node of every cloud group of the example, per zone.
func exampleNodes(t *testing.T) (*model.Source, layout.Files, map[string][]*corev1.Node) {
	src, files := testsrc.Example(t)
	nodes := map[string][]*corev1.Node{}
	for _, g := range src.Groups() {
		if g.Cloud() {
			for _, z := range g.Zones {
				nodes[g.Name] = append(nodes[g.Name], scripttest.InServiceNode(t, src, files, g, z))
			}
		}
	}
	return src, files, nodes
}

func TestTaintRemoverLandsOnlyOnItsGPUNodes(t *testing.T) {
	src, files, nodes := exampleNodes(t)
	objs, err := k8sdecode.Objects(files[layout.TaintRemoverPath])
	if err != nil {
		t.Fatal(err)
	}
	daemonSets := map[string]*appsv1.DaemonSet{}
	var role *rbacv1.ClusterRole
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			daemonSets[o.Name] = o
		case *rbacv1.ClusterRole:
			role = o
		}
	}
	gpuGroups := src.GPUGroups()
	if len(gpuGroups) == 0 || len(daemonSets) != len(gpuGroups) {
		t.Fatalf("%d DaemonSets for %d GPU groups", len(daemonSets), len(gpuGroups))
	}
	for _, g := range gpuGroups {
		ds := daemonSets[g.TaintRemoverDaemonSet()]
		if ds == nil {
			t.Fatalf("no taint remover for %s", g.Name)
		}
		spec := &ds.Spec.Template.Spec
		for name, ns := range nodes {
			for _, node := range ns {
				ok, why := schedulable(spec, node)
				if name == g.Name && !ok {
					t.Errorf("%s cannot run on its group's node %s: %s", ds.Name, node.Name, why)
				}
				if name != g.Name && ok {
					t.Errorf("%s would run on %s, a node of group %s", ds.Name, node.Name, name)
				}
			}
		}
		env := map[string]string{}
		for _, e := range spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if env["STARTUP_TAINT_KEY"] != g.StartupTaint.Key || env["GPU_COUNT"] != fmt.Sprint(g.AdvertisedGPUs()) {
			t.Errorf("%s env = %v", ds.Name, env)
		}
		if !slices.ContainsFunc(nodes[g.Name][0].Spec.Taints, func(t corev1.Taint) bool { return t.Key == g.StartupTaint.Key }) {
			t.Errorf("the %s node does not join with the startup taint the remover removes", g.Name)
		}
	}
	if role == nil || len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{"nodes"}) ||
		!slices.Equal(role.Rules[0].Verbs, []string{"get", "patch"}) {
		t.Errorf("ClusterRole rules = %+v; want get and patch on nodes only", role)
	}
}

// chartValues are the cluster-autoscaler chart values nodegen sets.
type chartValues struct {
	CloudProvider     string `json:"cloudProvider"`
	AutoscalingGroups []struct {
		Name    string `json:"name"`
		MinSize int    `json:"minSize"`
		MaxSize int    `json:"maxSize"`
	} `json:"autoscalingGroups"`
	ExtraArgs map[string]string `json:"extraArgs"`
	// ExpanderPriorities is what the chart renders into the priority
	// expander's ConfigMap: priority → patterns.
	ExpanderPriorities map[string][]string  `json:"expanderPriorities"`
	Image              struct{ Tag string } `json:"image"`
	NodeSelector       map[string]string    `json:"nodeSelector"`
	Tolerations        []corev1.Toleration  `json:"tolerations"`
	FullnameOverride   string               `json:"fullnameOverride"`
	// The Service of the metrics port, which out/monitoring's
	// ServiceMonitor selects.
	Service struct {
		Labels   map[string]string `json:"labels"`
		PortName string            `json:"portName"`
	} `json:"service"`
	// The chart's ServiceAccount, which the autoscaler node's admission
	// policy admits there.
	RBAC struct {
		ServiceAccount struct {
			Name string `json:"name"`
		} `json:"serviceAccount"`
	} `json:"rbac"`
	// The replicas and their spread (autoscaler_ha.go).
	ReplicaCount              int                               `json:"replicaCount"`
	PodLabels                 map[string]string                 `json:"podLabels"`
	Affinity                  *corev1.Affinity                  `json:"affinity"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints"`
}

func TestAutoscalerPinnedToItsNode(t *testing.T) {
	src, files, nodes := exampleNodes(t)
	var v chartValues
	if err := yaml.UnmarshalStrict(files[layout.AutoscalerValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.PodSpec{NodeSelector: v.NodeSelector, Tolerations: v.Tolerations}
	home := src.Cluster.Autoscaler.NodeGroup
	for name, ns := range nodes {
		for _, node := range ns {
			ok, why := schedulable(pod, node)
			if name == home && !ok {
				t.Errorf("the autoscaler cannot run on its node %s: %s", node.Name, why)
			}
			if name != home && ok {
				t.Errorf("the autoscaler could run on %s (group %s)", node.Name, name)
			}
		}
	}
	// Nothing without the toleration lands on the autoscaler's node.
	if ok, _ := schedulable(&corev1.PodSpec{}, nodes[home][0]); ok {
		t.Errorf("a plain pod could land on the autoscaler's node")
	}
	if v.RBAC.ServiceAccount.Name != model.AutoscalerServiceAccount {
		t.Errorf("rbac.serviceAccount.name %q, want %q", v.RBAC.ServiceAccount.Name, model.AutoscalerServiceAccount)
	}
	if v.CloudProvider != "gce" || v.Image.Tag != "v1.35.2" {
		t.Errorf("cloudProvider %q, image tag %q", v.CloudProvider, v.Image.Tag)
	}
}

// TestFlagsMatchChartValues renders the chart's arguments from values.yaml
// the way the chart does (autoscalingGroups → --nodes=min:max:name,
// extraArgs → --key=value with the part after '_' dropped) and compares
// them with flags.txt.
func TestFlagsMatchChartValues(t *testing.T) {
	src, files := testsrc.Example(t)
	var v chartValues
	if err := yaml.UnmarshalStrict(files[layout.AutoscalerValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	chart := []string{"--cloud-provider=" + v.CloudProvider}
	for _, g := range v.AutoscalingGroups {
		chart = append(chart, fmt.Sprintf("--nodes=%d:%d:%s", g.MinSize, g.MaxSize, g.Name))
	}
	for k, val := range v.ExtraArgs {
		k, _, _ = strings.Cut(k, "_")
		chart = append(chart, "--"+k+"="+val)
	}
	var flags []string
	sc := bufio.NewScanner(bytes.NewReader(files[layout.AutoscalerFlagsPath]))
	for sc.Scan() {
		if line := sc.Text(); !strings.HasPrefix(line, "#") {
			flags = append(flags, line)
		}
	}
	slices.Sort(chart)
	sorted := slices.Sorted(slices.Values(flags))
	if !slices.Equal(chart, sorted) {
		t.Errorf("chart args:\n%s\nflags.txt:\n%s", strings.Join(chart, "\n"), strings.Join(sorted, "\n"))
	}
	// Every autoscaled group and zone, and nothing else.
	want := 0
	for _, g := range src.Groups() {
		if g.Autoscaled() {
			want += len(g.Zones)
		}
		for _, f := range flags {
			if strings.Contains(f, "/instanceGroups/"+src.Cluster.MIGName(g, "")) && !g.Autoscaled() {
				t.Errorf("%s group %s in the flags: %s", g.Kind, g.Name, f)
			}
		}
	}
	if len(v.AutoscalingGroups) != want {
		t.Errorf("%d MIGs in the values, want %d", len(v.AutoscalingGroups), want)
	}
}

func TestGPUOperatorToleratesGPUNodes(t *testing.T) {
	src, files, nodes := exampleNodes(t)
	var v struct {
		Daemonsets struct {
			Tolerations []corev1.Toleration `json:"tolerations"`
		} `json:"daemonsets"`
		NFD struct {
			Worker struct {
				Tolerations []corev1.Toleration `json:"tolerations"`
			} `json:"worker"`
		} `json:"node-feature-discovery"`
		DevicePlugin any `json:"devicePlugin"`
		Driver       any `json:"driver"`
		Toolkit      any `json:"toolkit"`
		Validator    any `json:"validator"`
		MIG          struct {
			Strategy string `json:"strategy"`
		} `json:"mig"`
	}
	if err := yaml.UnmarshalStrict(files[layout.GPUOperatorValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	// Every GPU node advertises nvidia.com/gpu, as the autoscaler's
	// template does: "mixed" would leave it an unready GPU node.
	if v.MIG.Strategy != "single" {
		t.Errorf("mig.strategy %q, want single", v.MIG.Strategy)
	}
	if !slices.ContainsFunc(v.Daemonsets.Tolerations, func(t corev1.Toleration) bool {
		return t.Key == model.GPUResource && t.Operator == corev1.TolerationOpExists
	}) {
		t.Errorf("the operator's default nvidia.com/gpu toleration is gone: %+v", v.Daemonsets.Tolerations)
	}
	for _, g := range src.GPUGroups() {
		for _, node := range nodes[g.Name] {
			for name, tols := range map[string][]corev1.Toleration{"daemonsets": v.Daemonsets.Tolerations, "NFD worker": v.NFD.Worker.Tolerations} {
				if ok, why := schedulable(&corev1.PodSpec{Tolerations: tols}, node); !ok {
					t.Errorf("GPU Operator %s cannot run on %s: %s", name, node.Name, why)
				}
			}
		}
	}
}
