package explain_test

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// renderedFlags are flags.txt's flags by name (comments skipped).
func renderedFlags(t *testing.T, files layout.Files) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(string(files[layout.AutoscalerFlagsPath]), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "--"), "="); ok && strings.HasPrefix(l, "--") {
			if _, seen := out[k]; !seen {
				out[k] = v
			}
		}
	}
	return out
}

// startupAlertThresholds are the NodegenStartupTaintStuck alerts' age
// thresholds, in seconds, by group.
func startupAlertThresholds(t *testing.T, files layout.Files) map[string]int {
	t.Helper()
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `json:"alert"`
				Expr   string            `json:"expr"`
				Labels map[string]string `json:"labels"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(files[layout.MonitoringRulesPath], &rf); err != nil {
		t.Fatal(err)
	}
	age := regexp.MustCompile(`^\(\(time\(\) - max by \(node\) \(kube_node_created\{.*?\}\)\) > ([0-9]+)\)`)
	out := map[string]int{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "NodegenStartupTaintStuck" {
				continue
			}
			m := age.FindStringSubmatch(r.Expr)
			if m == nil {
				t.Fatalf("NodegenStartupTaintStuck of %s: no age threshold in %q", r.Labels["nodegen_group"], r.Expr)
			}
			out[r.Labels["nodegen_group"]], _ = strconv.Atoi(m[1])
		}
	}
	return out
}

func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestInitBudgetMatchesRendered: explain states every autoscaled group's
// init budget, and it is the budget the rendered artifacts give the
// autoscaler and the alerts: the time to register is the group's kube-env
// autoscaling_options maxnodeprovisiontime, else flags.txt's
// --max-node-provision-time; the time to be ready is flags.txt's
// --max-node-startup-time, else the autoscaler's default of 15m
// (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// cluster-autoscaler/config/flags/flags.go: maxNodeStartupTime); the
// NodegenStartupTaintStuck alert of each GPU group fires past that same
// time. What a node needs of it follows its driver: built by the GPU
// Operator (the tests' example) or baked into the image. With the stock
// release each scale-up freezes every other for the whole budget; with
// nodegen's patched build it does not.
func TestInitBudgetMatchesRendered(t *testing.T) {
	opSrc, opFiles := testsrc.Example(t)
	bakedSrc, bakedFiles := testsrc.Render(t, testsrc.Copy(t, map[string]string{
		"images.cue": `cluster: imageFamilies: "k8s-node-gpu-1-35": gpuDriver: image: branch: "580"` + "\n",
	}))
	for _, c := range []struct {
		name  string
		src   *model.Source
		files layout.Files
		needs map[string]string
	}{
		{"operator", opSrc, opFiles, map[string]string{"cpu-burst": "2m", "gpu-t4": "15m", "spot-gpu-t4": "15m"}},
		{"baked", bakedSrc, bakedFiles, map[string]string{"cpu-burst": "2m", "gpu-t4": "5m", "spot-gpu-t4": "5m"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := explain.New(c.src, c.files, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := e.Explain(nil)
			var table bytes.Buffer
			if err := explain.WriteTable(&table, r); err != nil {
				t.Fatal(err)
			}
			flags := renderedFlags(t, c.files)
			startup := 15 * time.Minute
			if v, ok := flags["max-node-startup-time"]; ok {
				startup = duration(t, v)
			}
			alerts := startupAlertThresholds(t, c.files)
			var groups []string
			for _, b := range r.InitBudgets {
				groups = append(groups, b.Group)
				tmpl, err := kubeenv.ReadTemplate(c.files[layout.KubeEnvPath(b.Group)])
				if err != nil {
					t.Fatal(err)
				}
				provision := duration(t, flags["max-node-provision-time"])
				if v, ok := tmpl.AutoscalingOpts["maxnodeprovisiontime"]; ok {
					provision = duration(t, v)
				}
				if got := duration(t, b.Provision); got != provision {
					t.Errorf("%s: explain's time to register %s, the autoscaler's maxNodeProvisionTime %s", b.Group, got, provision)
				}
				if got := duration(t, b.Startup); got != startup {
					t.Errorf("%s: explain's time to be ready %s, the autoscaler's --max-node-startup-time %s", b.Group, got, startup)
				}
				if got := duration(t, b.Total); got != provision+startup {
					t.Errorf("%s: budget %s, want %s", b.Group, got, provision+startup)
				}
				if b.Needs != c.needs[b.Group] || duration(t, b.Needs) > startup {
					t.Errorf("%s: needs %s (%v), want %s, within %s", b.Group, b.Needs, b.Steps, c.needs[b.Group], startup)
				}
				if sec, ok := alerts[b.Group]; ok && time.Duration(sec)*time.Second != startup {
					t.Errorf("%s: NodegenStartupTaintStuck fires after %ds, the budget's time to be ready is %s", b.Group, sec, startup)
				}
				if !b.Freezes || !strings.Contains(b.Message, "with the Cluster Autoscaler v1.35.2, each scale-up of "+b.Group+" freezes every other scale-up, in every group, for up to "+b.Total) {
					t.Errorf("%s: the stock build's freeze not stated: %+v", b.Group, b)
				}
				if !strings.Contains(table.String(), "init budget: "+b.Message+"\n") {
					t.Errorf("explain's table lacks %s's budget:\n%s", b.Group, table.String())
				}
			}
			if want := []string{"cpu-burst", "gpu-t4", "spot-gpu-t4"}; !slices.Equal(groups, want) {
				t.Errorf("budgets of %v, want the autoscaled groups %v", groups, want)
			}
			if len(alerts) != 2 || alerts["gpu-t4"] == 0 || alerts["spot-gpu-t4"] == 0 {
				t.Errorf("startup-taint alerts %v, want one per GPU group", alerts)
			}
		})
	}
	t.Run("patched build", func(t *testing.T) {
		src := *opSrc
		src.Cluster.Autoscaler.PatchedImage = &model.PatchedImage{Repository: "registry.example.com/cluster-autoscaler"}
		e, err := explain.New(&src, opFiles, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range e.Explain(nil).InitBudgets {
			if b.Freezes || !strings.Contains(b.Message, "goes on scaling other groups meanwhile") {
				t.Errorf("%s: %+v", b.Group, b)
			}
		}
	})
}
