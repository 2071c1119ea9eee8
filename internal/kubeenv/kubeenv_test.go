package kubeenv_test

import (
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/kubeenv"
)

// The autoscaler's reading rules: kubernetes/autoscaler tag
// cluster-autoscaler-1.36.1, cluster-autoscaler/cloudprovider/gce/templates.go
// (extractAutoscalerVarFromKubeEnv, parseKeyValueListToMap, buildTaints).
func TestReadTemplateFollowsTheAutoscaler(t *testing.T) {
	cases := []struct {
		name, env string
		check     func(*testing.T, *kubeenv.Template)
		wantErr   string
	}{
		{
			name: "labels, taints, defaults",
			env:  "AUTOSCALER_ENV_VARS: node_labels=a=b,c=d=e;node_taints=k=v:NoSchedule,e=:NoExecute\n",
			check: func(t *testing.T, tm *kubeenv.Template) {
				if tm.Labels["a"] != "b" || tm.Labels["c"] != "d=e" {
					t.Errorf("labels %v (a value may contain '=')", tm.Labels)
				}
				if len(tm.Taints) != 2 || tm.Taints[0] != (kubeenv.Taint{Key: "e", Value: "", Effect: "NoExecute"}) {
					t.Errorf("taints %v", tm.Taints)
				}
				if tm.OS != "linux" || tm.OSDistribution != "cos" || tm.Arch != "amd64" {
					t.Errorf("defaults %s %s %s", tm.OS, tm.OSDistribution, tm.Arch)
				}
			},
		},
		{
			name: "list items are not trimmed",
			env:  "AUTOSCALER_ENV_VARS: node_labels=a=b, c=d\n",
			check: func(t *testing.T, tm *kubeenv.Template) {
				if _, ok := tm.Labels[" c"]; !ok {
					t.Errorf("labels %q: want the key \" c\"", tm.Labels)
				}
			},
		},
		{
			name: "values trimmed of quotes",
			env:  "AUTOSCALER_ENV_VARS: node_taints='a=b:NoSchedule'\n",
			check: func(t *testing.T, tm *kubeenv.Template) {
				if len(tm.Taints) != 1 || tm.Taints[0].Effect != "NoSchedule" {
					t.Errorf("taints %v", tm.Taints)
				}
			},
		},
		{
			name: "duplicate taint keys: the last wins",
			env:  "AUTOSCALER_ENV_VARS: node_taints=k=v:NoSchedule,k=v2:NoExecute\n",
			check: func(t *testing.T, tm *kubeenv.Template) {
				if len(tm.Taints) != 1 || tm.Taints[0] != (kubeenv.Taint{Key: "k", Value: "v2", Effect: "NoExecute"}) {
					t.Errorf("taints %v", tm.Taints)
				}
			},
		},
		{
			name: "NODE_LABELS fallback",
			env:  "NODE_LABELS: x=y\nAUTOSCALER_ENV_VARS: os=linux\n",
			check: func(t *testing.T, tm *kubeenv.Template) {
				if tm.Labels["x"] != "y" {
					t.Errorf("labels %v", tm.Labels)
				}
			},
		},
		{name: "trailing semicolon", env: "AUTOSCALER_ENV_VARS: os=linux;node_labels=a=b;\n", wantErr: "malformed autoscaler var"},
		{name: "taint without value", env: "AUTOSCALER_ENV_VARS: node_taints=key:NoSchedule\n", wantErr: "error while parsing key-value list"},
		{name: "trailing comma", env: "AUTOSCALER_ENV_VARS: node_labels=a=b,\n", wantErr: "error while parsing key-value list"},
		{name: "unquoted colon-space breaks YAML", env: "AUTOSCALER_ENV_VARS: node_labels=a: b\n", wantErr: "error unmarshalling kubeEnv"},
		{name: "unknown os", env: "AUTOSCALER_ENV_VARS: os=plan9\n", wantErr: "unsupported value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm, err := kubeenv.ReadTemplate([]byte(c.env))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, tm)
		})
	}
}

func TestMarshalRefusesWhatTheAutoscalerCannotRead(t *testing.T) {
	for _, v := range []kubeenv.Var{
		{Name: "node_labels", Value: "a=b;c=d"},
		{Name: "node_labels", Value: ""},
		{Name: "node_labels", Value: " a=b"},
		{Name: "bad=name", Value: "x"},
	} {
		if _, err := kubeenv.Marshal("", []kubeenv.Var{v}); err == nil {
			t.Errorf("Marshal(%+v) succeeded", v)
		}
	}
	out, err := kubeenv.Marshal("# h\n", []kubeenv.Var{{Name: "os", Value: "linux"}, {Name: "node_labels", Value: "a=b"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "# h\nAUTOSCALER_ENV_VARS: os=linux;node_labels=a=b\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestIsStartupTaint(t *testing.T) {
	for key, want := range map[string]bool{
		"startup-taint.cluster-autoscaler.kubernetes.io/gpu-not-ready": true,
		"ignore-taint.cluster-autoscaler.kubernetes.io/x":              true,
		"startup-taint.cluster-autoscaler.k8s.io/gpu-not-ready":        false,
		"nvidia.com/gpu": false,
	} {
		if got := kubeenv.IsStartupTaint(key); got != want {
			t.Errorf("IsStartupTaint(%q) = %v", key, got)
		}
	}
	if !kubeenv.IsStartupTaint("example.com/not-ready", "example.com/not-ready") {
		t.Error("a --startup-taint key is a startup taint")
	}
}

// ephemeral_storage_local_ssd_count and BLOCK_EPH_STORAGE_BOOT_DISK as the
// GCE provider reads them (templates.go ephemeralStorageLocalSSDCount,
// isBootDiskEphemeralStorageWithInstanceTemplateDisabled): an integer, 0
// when it does not parse; the block only for exactly "true".
func TestReadTemplateLocalSSDs(t *testing.T) {
	cases := []struct {
		env   string
		count int64
		block bool
	}{
		{"AUTOSCALER_ENV_VARS: os=linux;ephemeral_storage_local_ssd_count=4;BLOCK_EPH_STORAGE_BOOT_DISK=true\n", 4, true},
		{"AUTOSCALER_ENV_VARS: os=linux;ephemeral_storage_local_ssd_count=four;BLOCK_EPH_STORAGE_BOOT_DISK=True\n", 0, false},
		{"AUTOSCALER_ENV_VARS: os=linux;ephemeral_storage_local_ssd_count='2'\n", 2, false},
		{"AUTOSCALER_ENV_VARS: os=linux\n", 0, false},
	}
	for _, c := range cases {
		tm, err := kubeenv.ReadTemplate([]byte(c.env))
		if err != nil {
			t.Fatalf("%q: %v", c.env, err)
		}
		if tm.LocalSSDCount != c.count || tm.BlockBootDiskEphemeral != c.block {
			t.Errorf("%q: count %d block %t, want %d %t", c.env, tm.LocalSSDCount, tm.BlockBootDiskEphemeral, c.count, c.block)
		}
	}
}
