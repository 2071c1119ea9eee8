package gcefake_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/testing/gcefake"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// renderOut renders the tests' source with edits into a new out/ and
// returns it, with the cluster's project, region and zones.
func renderOut(t *testing.T, edits map[string]string) (out, project, region string, zones []string) {
	t.Helper()
	res, err := pipeline.Run(testsrc.Copy(t, edits), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(t.TempDir(), "out")
	if _, err := outdir.WriteWith(out, res.Files, outdir.Options{}); err != nil {
		t.Fatal(err)
	}
	src := res.Source.Fleet.Clusters[0]
	for _, g := range src.CloudGroups() {
		for _, z := range g.Zones {
			if !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	return out, src.Cluster.GCP.Project, src.Cluster.GCP.Region, zones
}

// editTF rewrites every Terraform file of out with edit.
func editTF(t *testing.T, out string, edit func(string) string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, "terraform", "*.tf"))
	changed := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if e := edit(string(b)); e != string(b) {
			changed = true
			if err := os.WriteFile(f, []byte(e), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !changed {
		t.Fatal("the edit changed no Terraform file")
	}
}

const autoscalerMIG = "hybrid-ai-autoscaler-us-central1-a"

// world is a fake serving an out/, its clock under the test's control.
type world struct {
	s   *gcefake.Server
	now time.Time
}

func newWorld(t *testing.T, out, project, region string, zones []string) *world {
	t.Helper()
	w := &world{s: gcefake.New(project, region, zones), now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	w.s.SetClock(func() time.Time { return w.now })
	if err := gcefake.FromOut(w.s, out); err != nil {
		t.Fatal(err)
	}
	return w
}

// mig is the autoscaler's MIG in the first zone.
func (w *world) mig(t *testing.T) gcefake.MIG {
	t.Helper()
	for _, m := range w.s.MIGs() {
		if m.Name == autoscalerMIG {
			if m.Autohealing == nil {
				t.Fatalf("MIG %s read without autohealing", m.Name)
			}
			return m
		}
	}
	t.Fatalf("no MIG %s", autoscalerMIG)
	return gcefake.MIG{}
}

// oldVM replaces the MIG's VM by one made from a template of before the
// health check: no health-check tag, the kubelet's health endpoint on
// 127.0.0.1. The MIG's template stays the current one.
func (w *world) oldVM(t *testing.T) (old, cur string) {
	t.Helper()
	m := w.mig(t)
	tc := w.s.Template(m.Template)
	o := *tc
	o.Name, o.HealthzOpen = tc.Name+"-before-autohealing", false
	o.Tags = slices.DeleteFunc(slices.Clone(tc.Tags), func(tag string) bool { return slices.Contains(m.Autohealing.Tags, tag) })
	if len(o.Tags) == len(tc.Tags) || !tc.HealthzOpen {
		t.Fatalf("the current template has tags %v (health check's %v), healthz open %v", tc.Tags, m.Autohealing.Tags, tc.HealthzOpen)
	}
	w.s.AddTemplate(&o)
	w.s.SetTemplate(m.Zone, m.Name, o.Name)
	w.s.Resize(m.Zone, m.Name, 0)
	w.s.Resize(m.Zone, m.Name, 1)
	w.s.SetTemplate(m.Zone, m.Name, tc.Name)
	return o.Name, tc.Name
}

// run checks health every interval for d, and returns the MIG's repairs.
func (w *world) run(t *testing.T, d time.Duration) []string {
	t.Helper()
	m := w.mig(t)
	var repaired []string
	for end := w.now.Add(d); w.now.Before(end); {
		w.now = w.now.Add(m.Autohealing.CheckInterval)
		for _, r := range w.s.CheckHealth() {
			if strings.HasPrefix(r, m.BaseInstanceName+"-") && slices.ContainsFunc(w.s.Instances(m.Name), func(i gcefake.Instance) bool { return i.Name == r }) {
				repaired = append(repaired, r)
			}
		}
	}
	return repaired
}

func (w *world) vm(t *testing.T) gcefake.Instance {
	t.Helper()
	vms := w.s.Instances(autoscalerMIG)
	if len(vms) != 1 {
		t.Fatalf("MIG %s holds %d VMs", autoscalerMIG, len(vms))
	}
	return vms[0]
}

// lifecycle matches a MIG's instance_lifecycle_policy block and its
// comment.
var lifecycle = regexp.MustCompile(`(?s)\n(  #[^\n]*\n)*  instance_lifecycle_policy \{\n.*?\n  \}\n`)

// TestAutohealingRepairsOldVMIntoCurrentTemplate runs the autoscaler
// group's autohealing as out/terraform declares it against a VM made
// before the group had a health check (no health-check tag, the health
// endpoint on 127.0.0.1): it fails every check; the MIG repairs it once,
// into a VM of the current template, which passes. Without the rendered
// instance_lifecycle_policy (GCE's default: a repair keeps the VM's
// template) it is repaired again and again. With autohealing.repair false
// the health check only reports it.
func TestAutohealingRepairsOldVMIntoCurrentTemplate(t *testing.T) {
	out, project, region, zones := renderOut(t, nil)
	w := newWorld(t, out, project, region, zones)
	if h := w.mig(t).Autohealing; !h.Repair || !h.ForceUpdateOnRepair {
		t.Fatalf("autohealing read as %+v, want repairs from the current template", h)
	}
	_, cur := w.oldVM(t)
	repaired := w.run(t, 2*time.Hour)
	t.Logf("rendered: repaired %v", repaired)
	if vm := w.vm(t); len(repaired) != 1 || vm.Repairs != 1 || vm.Template != cur {
		t.Errorf("in 2 h: repairs %v, the VM at %d repairs on template %s; want one repair into the current template %s", repaired, vm.Repairs, vm.Template, cur)
	}

	// The MIGs as rendered before: no instance_lifecycle_policy.
	out, project, region, zones = renderOut(t, nil)
	editTF(t, out, func(s string) string { return lifecycle.ReplaceAllString(s, "\n") })
	w = newWorld(t, out, project, region, zones)
	old, _ := w.oldVM(t)
	repaired = w.run(t, 2*time.Hour)
	t.Logf("without instance_lifecycle_policy: repaired %d times", len(repaired))
	if vm := w.vm(t); len(repaired) < 3 || vm.Template != old {
		t.Errorf("without the lifecycle policy: %d repairs, the VM on %s; want a loop of repairs on the old template %s", len(repaired), vm.Template, old)
	}

	// The first step of turning autohealing on: nothing is repaired.
	b, err := os.ReadFile(filepath.Join(testsrc.Dir(), "autoscaler.cue"))
	if err != nil {
		t.Fatal(err)
	}
	out, project, region, zones = renderOut(t, map[string]string{"autoscaler.cue": strings.Replace(string(b), "\tmin:", "\tautohealing: repair: false\n\tmin:", 1)})
	w = newWorld(t, out, project, region, zones)
	w.oldVM(t)
	if repaired := w.run(t, 2*time.Hour); len(repaired) != 0 {
		t.Errorf("with autohealing.repair false: repaired %v", repaired)
	}
}

// TestAutohealingWaitsOutReboot: the rendered health check lets a VM of
// the current template reboot for up to the group's reboot time (5m for
// the autoscaler's group) without a repair, long after its initial delay;
// a kubelet down for longer than the checks' span is repaired, once. With
// the health check's former timing (10 s × 6) the same reboot was
// repaired.
func TestAutohealingWaitsOutReboot(t *testing.T) {
	reboot := func(w *world, down time.Duration) []string {
		w.run(t, 2*time.Hour) // past the initial delay, healthy
		vm := w.vm(t)
		w.s.SetKubelet(vm.Name, false)
		repaired := w.run(t, down)
		w.s.SetKubelet(vm.Name, true)
		return append(repaired, w.run(t, time.Hour)...)
	}
	out, project, region, zones := renderOut(t, nil)
	w := newWorld(t, out, project, region, zones)
	if repaired := reboot(w, 5*time.Minute); len(repaired) != 0 {
		t.Errorf("a 5 min reboot was repaired: %v", repaired)
	}
	w = newWorld(t, out, project, region, zones)
	if repaired := reboot(w, 8*time.Minute); len(repaired) != 1 {
		t.Errorf("a kubelet down for 8 min: repaired %v, want once", repaired)
	}

	editTF(t, out, func(s string) string {
		s = regexp.MustCompile(`check_interval_sec  = \d+`).ReplaceAllString(s, "check_interval_sec  = 10")
		return regexp.MustCompile(`unhealthy_threshold = \d+`).ReplaceAllString(s, "unhealthy_threshold = 6")
	})
	w = newWorld(t, out, project, region, zones)
	if repaired := reboot(w, 5*time.Minute); len(repaired) != 1 {
		t.Errorf("with checks 10 s × 6, a 5 min reboot: repaired %v, want once", repaired)
	}
}
