package drift_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodecheck"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

func readFixtureTemplate(t *testing.T, name string) []*drift.LiveTemplate {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := drift.ReadTemplates("testdata/"+name, data)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func setMetadata(tm *drift.LiveTemplate, key string, value []byte) {
	for i, it := range tm.Properties.Metadata {
		if it.Key == key {
			tm.Properties.Metadata[i].Value = string(value)
		}
	}
}

// The recorded template whose kube-env lost the GPU taint: that is a
// kube-env finding, and so are the kubelet's beta os and arch labels and
// the verified group label, which kube-env declares since it was recorded.
func TestTemplateLostTaint(t *testing.T) {
	src, files := testsrc.Example(t)
	ts := readFixtureTemplate(t, "template-gpu-t4-lost-taint.json")
	if len(ts) != 1 || ts[0].Name != "hybrid-ai-gpu-t4-20260601093512551200000001" || ts[0].File != "testdata/template-gpu-t4-lost-taint.json" {
		t.Fatalf("read %+v", ts)
	}
	r := drift.CheckTemplates(src, files, ts)[0]
	if r.Group != "gpu-t4" {
		t.Errorf("group %q", r.Group)
	}
	var kubeEnv []nodecheck.Finding
	for _, f := range r.Findings {
		if f.Kind == drift.KubeEnv {
			kubeEnv = append(kubeEnv, f)
		}
	}
	if len(kubeEnv) != 4 || kubeEnv[0].Message != "kube-env: label beta.kubernetes.io/arch missing (want amd64)" ||
		kubeEnv[1].Message != "kube-env: label beta.kubernetes.io/os missing (want linux)" ||
		kubeEnv[2].Message != "kube-env: label "+model.VerifiedGroupLabel+" missing (want gpu-t4)" ||
		kubeEnv[3].Message != "kube-env: taint nvidia.com/gpu=present:NoSchedule missing" || kubeEnv[3].Want != "nvidia.com/gpu=present:NoSchedule" {
		t.Errorf("kube-env findings %+v", kubeEnv)
	}
}

// The same template with today's rendering matches; each difference made
// on a copy is reported as its own finding.
func TestTemplateDifferences(t *testing.T) {
	src, files := testsrc.Example(t)
	fresh := func() *drift.LiveTemplate {
		tm := readFixtureTemplate(t, "template-gpu-t4-lost-taint.json")[0]
		setMetadata(tm, "kube-env", files[layout.KubeEnvPath("gpu-t4")])
		setMetadata(tm, "startup-script", files[layout.StartupScriptPath("gpu-t4")])
		return tm
	}
	cases := []struct {
		name   string
		mutate func(tm *drift.LiveTemplate)
		want   []string // finding kinds
		msg    string   // the first finding's message
	}{
		{"matching", func(*drift.LiveTemplate) {}, []string{}, ""},
		{"kube-env: a label changed and one added", func(tm *drift.LiveTemplate) {
			env := strings.Replace(string(files[layout.KubeEnvPath("gpu-t4")]), "example.com/pool=gpu-burst", "example.com/pool=gpu,team=ml", 1)
			setMetadata(tm, "kube-env", []byte(env))
		}, []string{"kube-env", "kube-env"}, "kube-env: label example.com/pool is gpu, the source says gpu-burst"},
		{"kube-env: reservations", func(tm *drift.LiveTemplate) {
			env := strings.Replace(string(files[layout.KubeEnvPath("gpu-t4")]), "kube_reserved=cpu=200m,memory=1536Mi", "kube_reserved=cpu=100m,memory=1Gi", 1)
			setMetadata(tm, "kube-env", []byte(env))
		}, []string{"kube-env"}, `kube-env: kube_reserved is "cpu=100m,memory=1Gi", the source says "cpu=200m,memory=1536Mi"`},
		{"kube-env: the header comment only", func(tm *drift.LiveTemplate) {
			env := strings.Replace(string(files[layout.KubeEnvPath("gpu-t4")]), "# Code generated", "# Edited. Code generated", 1)
			setMetadata(tm, "kube-env", []byte(env))
		}, []string{"kube-env"}, "kube-env differs from what gen renders (gce/gpu-t4/kube-env) in comments or layout only: the autoscaler reads the same"},
		{"kube-env the autoscaler cannot read", func(tm *drift.LiveTemplate) {
			setMetadata(tm, "kube-env", []byte("AUTOSCALER_ENV_VARS: os=linux;node_labels=a=b;\n"))
		}, []string{"kube-env"}, "kube-env unreadable by the autoscaler (no scale-from-zero): malformed autoscaler var: "},
		{"no kube-env", func(tm *drift.LiveTemplate) {
			tm.Properties.Metadata = tm.Properties.Metadata[1:]
		}, []string{"kube-env"}, ""},
		{"startup script changed", func(tm *drift.LiveTemplate) {
			setMetadata(tm, "startup-script", append(files[layout.StartupScriptPath("gpu-t4")], "echo extra\n"...))
		}, []string{"startup-script"}, "startup-script differs from what gen renders (gce/gpu-t4/startup-script.sh)"},
		{"no GPU attached", func(tm *drift.LiveTemplate) { tm.Properties.GuestAccelerators = nil }, []string{"guest-accelerators"}, "guestAccelerators none, the source says 1 × nvidia-tesla-t4"},
		{"two GPUs", func(tm *drift.LiveTemplate) { tm.Properties.GuestAccelerators[0].AcceleratorCount = 2 }, []string{"guest-accelerators"}, "guestAccelerators 2 × nvidia-tesla-t4, the source says 1 × nvidia-tesla-t4"},
		{"machine type", func(tm *drift.LiveTemplate) { tm.Properties.MachineType = "n1-standard-4" }, []string{"machine-type"}, "machine type n1-standard-4, the source says n1-standard-8"},
		{"boot disk", func(tm *drift.LiveTemplate) { tm.Properties.Disks[0].InitializeParams.DiskSizeGb = 100 }, []string{"boot-disk"}, "boot disk 100 GB, the source says 200 GB"},
		{"not ours", func(tm *drift.LiveTemplate) { tm.Name = "hybrid-ai-gpu-a100-20260601" }, []string{"unknown-template"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm := fresh()
			c.mutate(tm)
			r := drift.CheckTemplates(src, files, []*drift.LiveTemplate{tm})[0]
			var kinds []string
			for _, f := range r.Findings {
				kinds = append(kinds, f.Kind)
			}
			if !slices.Equal(kinds, c.want) && !(len(kinds) == 0 && len(c.want) == 0) {
				t.Errorf("findings %v, want %v\n%+v", kinds, c.want, r.Findings)
			}
			if c.msg != "" && (len(r.Findings) == 0 || !strings.HasPrefix(r.Findings[0].Message, c.msg)) {
				t.Errorf("message %+v, want prefix %q", r.Findings, c.msg)
			}
			if c.name == "startup script changed" && !strings.Contains(r.Findings[0].Diff, "-echo extra") {
				t.Errorf("diff %q", r.Findings[0].Diff)
			}
		})
	}
}

// Accelerator-optimized machine types come with their GPUs: an empty
// guestAccelerators is fine, the built-in type and count too.
func TestTemplateBuiltInGPU(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	g.MachineType, g.GPU.Type = "g2-standard-8", "nvidia-l4"
	tm := readFixtureTemplate(t, "template-gpu-t4-lost-taint.json")[0]
	tm.Properties.MachineType = "g2-standard-8"
	for _, c := range []struct {
		accs []model.AcceleratorConfig
		want int
	}{
		{nil, 0},
		{[]model.AcceleratorConfig{{AcceleratorType: "nvidia-l4", AcceleratorCount: 1}}, 0},
		{[]model.AcceleratorConfig{{AcceleratorType: "nvidia-l4", AcceleratorCount: 2}}, 1},
	} {
		tm.Properties.GuestAccelerators = c.accs
		var n int
		for _, f := range drift.CheckTemplates(src, files, []*drift.LiveTemplate{tm})[0].Findings {
			if f.Kind == drift.GuestGPU {
				n++
			}
		}
		if n != c.want {
			t.Errorf("%v: %d accelerator findings, want %d", c.accs, n, c.want)
		}
	}
}

func TestReadTemplates(t *testing.T) {
	ts := readFixtureTemplate(t, "templates-list.json")
	if len(ts) != 1 || ts[0].Name != "legacy-workers-20250114" || ts[0].Properties.Disks[0].InitializeParams.DiskSizeGb != 50 {
		t.Errorf("list: %+v", ts)
	}
	for _, c := range []struct{ in, want string }{
		{"{\n  \"name\": \"x\",\n  \"properties\": {\"machineType\": 7}\n}", "t.json:3:34: json: cannot unmarshal number"},
		{"[\n  {\"name\": \"x\",}\n]", "t.json:2:17: invalid character '}'"},
		{`{"kind": "compute#instance", "name": "vm", "properties": {}}`, "t.json: vm is a compute#instance, not an instance template"},
		{`{"name": "x"}`, "t.json: item 0: not an instance template"},
	} {
		if _, err := drift.ReadTemplates("t.json", []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestGroupOfTemplate(t *testing.T) {
	src, _ := testsrc.Example(t)
	for name, want := range map[string]string{
		"hybrid-ai-gpu-t4-20260601093512551200000001": "gpu-t4",
		"hybrid-ai-cpu-burst-1":                       "cpu-burst",
		"hybrid-ai-autoscaler-x":                      "autoscaler",
		"hybrid-ai-onprem-gpu-x":                      "", // onprem groups have no templates
		"hybrid-ai-gpu-t4-":                           "",
		"other-gpu-t4-1":                              "",
	} {
		got := ""
		if g := drift.GroupOfTemplate(src, name); g != nil {
			got = g.Name
		}
		if got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
