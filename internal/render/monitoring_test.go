package render_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The production timings the rules are tested with: the ServiceMonitor's
// scrape interval and the rule groups' evaluation interval.
const (
	promScrape = 30 * time.Second
	promEval   = 30 * time.Second
)

// monitoringCluster is the tests' example with caps and a declared
// control-plane node, so that every kind of rule is rendered.
const monitoringCluster = `cluster: {
	name:                 "hybrid-ai"
	kubernetesVersion:    "1.35.2"
	controlPlaneEndpoint: "10.20.0.10:6443"
	controlPlaneNodes: "cp-1": {cpu: 16, memoryGiB: 64}
	caCertHashes: ["sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d"]
	joinToken: secretManager: secret: "kubeadm-join-token"
	gcp: {project: "acme-hybrid-ai", region: "us-central1"}
	autoscaler: {
		nodeGroup:            "autoscaler"
		expander:             "least-waste"
		maxNodeProvisionTime: "15m"
		caps: {
			maxNodesTotal: 40
			cores: max: 256
			memoryGiB: max: 1024
			gpus: "nvidia-tesla-t4": max: 16
		}
	}
}
`

// forkSource is a second source with its own names everywhere: cluster,
// project, groups, startup-taint key, renewal period, collector grace,
// and nodegen's patched autoscaler build.
func forkSource(t *testing.T) string {
	t.Helper()
	dir := testsrc.Copy(t, nil)
	rename := strings.NewReplacer(`"hybrid-ai"`, `"lab7"`, "acme-hybrid-ai", "forkco-lab7", `"gpu-t4"`, `"accel"`, `"spot-gpu-t4"`, `"spot-accel"`, `"cpu-burst"`, `"batch"`)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := rename.Replace(string(b))
		switch e.Name() {
		case "cluster.cue":
			s = strings.Replace(s, `maxNodeProvisionTime:             "15m"`, `maxNodeProvisionTime:             "25m"
		patchedImage: repository: "registry.example.org/infra/cluster-autoscaler"
		caps: {maxNodesTotal: 12, cores: max: 64}`, 1)
			s = strings.Replace(s, `joinToken: secretManager: secret: "kubeadm-join-token"`, `joinToken: {secretManager: secret: "lab7-join", ttl: "8h", renewEvery: "4h"}
	nodeLifecycle: notReadyGracePeriod: "7m"`, 1)
		case "spot-gpu-t4.cue":
			s = strings.Replace(s, `spot:           true`, `spot:           true
	startupTaint: {key: "startup-taint.cluster-autoscaler.kubernetes.io/lab7-spot", value: "pending", effect: "NoSchedule"}`, 1)
		case "gpu-t4.cue":
			s = strings.Replace(s, `gpu: {type: "nvidia-tesla-t4", count: 1}`, `gpu: {type: "nvidia-tesla-t4", count: 1}
	startupTaint: {key: "startup-taint.cluster-autoscaler.kubernetes.io/lab7-accel", value: "pending", effect: "NoSchedule"}`, 1)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; .ci/run installs Debian's prometheus package")
		}
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	return p
}

// ruleFile is out/monitoring/rules.yaml, strictly decoded.
type ruleFile struct {
	Groups []monitoringv1.RuleGroup `json:"groups"`
}

func readRules(t *testing.T, files layout.Files) ruleFile {
	t.Helper()
	var rf ruleFile
	if err := yaml.UnmarshalStrict(files[layout.MonitoringRulesPath], &rf); err != nil {
		t.Fatalf("%s: %v", layout.MonitoringRulesPath, err)
	}
	return rf
}

// promSeries is one input series of a promtool test: its selector and
// values in promtool's expanding notation.
type promSeries struct {
	Series string `json:"series"`
	Values string `json:"values"`
}

type promAlert struct {
	Labels      map[string]string `json:"exp_labels"`
	Annotations map[string]string `json:"exp_annotations"`
}

type promAlertTest struct {
	EvalTime  string      `json:"eval_time"`
	Alertname string      `json:"alertname"`
	ExpAlerts []promAlert `json:"exp_alerts"`
}

type promTest struct {
	Name     string          `json:"name"`
	Interval string          `json:"interval"`
	Input    []promSeries    `json:"input_series"`
	Alerts   []promAlertTest `json:"alert_rule_test"`
}

// sel writes a series selector with its labels quoted.
func sel(metric string, labels map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+strconv.Quote(labels[k]))
	}
	return metric + "{" + strings.Join(parts, ",") + "}"
}

// samples is how many scrapes cover d.
func samples(d time.Duration) int { return int(d / promScrape) }

// flat is value v at every scrape for d.
func flat(v float64, d time.Duration) string {
	return fmt.Sprintf("%sx%d", strconv.FormatFloat(v, 'f', -1, 64), samples(d))
}

// clock is a series whose value is the scrape's time, as the autoscaler's
// last_activity is.
func clock(d time.Duration) string {
	return fmt.Sprintf("0+%dx%d", int(promScrape/time.Second), samples(d))
}

// lastSuccess is a CronJob's last_successful_time that succeeds every
// period from time 0, for d.
func lastSuccess(period, d time.Duration) string {
	var parts []string
	for start := time.Duration(0); start < d; start += period {
		n := samples(min(period, d-start)) - 1
		parts = append(parts, fmt.Sprintf("%dx%d", int64(start/time.Second), max(n, 0)))
	}
	return strings.Join(parts, " ")
}

func promDur(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) + "s" }

var labelTemplate = regexp.MustCompile(`\{\{ \$labels\.([a-z_]+) \}\}`)

// expect is an alert the rules must fire: its alertname and the labels
// of the series it fires for (besides the rule's own); expected below
// adds the rule's labels and expands its annotations.
type expect struct {
	labels map[string]string
}

// scenario is one promtool test: input series, then at each time the
// alerts of one name that fire (none: silent).
type scenario struct {
	name   string
	input  []promSeries
	checks []check
}

type check struct {
	at     time.Duration
	alert  string
	firing []expect
}

// promCase builds the scenarios of every alert of src and reports which
// alert names have a firing and a silent check.
type promCase struct {
	t      *testing.T
	src    *model.Source
	rules  ruleFile
	tests  []promTest
	fired  map[string]bool
	silent map[string]bool
}

func (p *promCase) rulesNamed(name string) []monitoringv1.Rule {
	var out []monitoringv1.Rule
	for _, g := range p.rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				out = append(out, r)
			}
		}
	}
	return out
}

// expected completes e for alert name: the one rule of that name whose
// own labels e's labels agree with gives its labels and its annotations,
// with $labels expanded.
func (p *promCase) expected(name string, e expect) promAlert {
	p.t.Helper()
	var match []monitoringv1.Rule
	for _, r := range p.rulesNamed(name) {
		ok := true
		for k, v := range r.Labels {
			if w, set := e.labels[k]; set && w != v {
				ok = false
			}
		}
		if ok {
			match = append(match, r)
		}
	}
	if len(match) != 1 {
		p.t.Fatalf("%s %v: %d rules match, want 1", name, e.labels, len(match))
	}
	labels := map[string]string{}
	maps.Copy(labels, e.labels)
	maps.Copy(labels, match[0].Labels)
	ann := map[string]string{}
	for k, v := range match[0].Annotations {
		ann[k] = labelTemplate.ReplaceAllStringFunc(v, func(m string) string {
			return labels[labelTemplate.FindStringSubmatch(m)[1]]
		})
	}
	return promAlert{Labels: labels, Annotations: ann}
}

func (p *promCase) add(s scenario) {
	p.t.Helper()
	pt := promTest{Name: s.name, Interval: promDur(promScrape), Input: s.input}
	for _, c := range s.checks {
		if len(p.rulesNamed(c.alert)) == 0 {
			p.t.Fatalf("scenario %s checks %s, which the source does not render", s.name, c.alert)
		}
		at := promAlertTest{EvalTime: promDur(c.at), Alertname: c.alert, ExpAlerts: []promAlert{}}
		for _, e := range c.firing {
			at.ExpAlerts = append(at.ExpAlerts, p.expected(c.alert, e))
		}
		if len(c.firing) > 0 {
			p.fired[c.alert] = true
		} else {
			p.silent[c.alert] = true
		}
		pt.Alerts = append(pt.Alerts, at)
	}
	p.tests = append(p.tests, pt)
}

func forOf(t *testing.T, rules []monitoringv1.Rule) time.Duration {
	t.Helper()
	if rules[0].For == nil {
		return 0
	}
	d, err := time.ParseDuration(string(*rules[0].For))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMonitoringRulesPromtool: promtool accepts every rendered rule file,
// and its unit tests, generated from each source, show every alert
// firing in its scenario and silent in the healthy one, at the
// production scrape and evaluation intervals and with each rule's `for`;
// for the example (with caps) and for a fork's source with its own names.
func TestMonitoringRulesPromtool(t *testing.T) {
	bin := promtool(t)
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"example", func(t *testing.T) string {
			return testsrc.Copy(t, map[string]string{"cluster.cue": monitoringCluster})
		}},
		{"fork", forkSource},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, files := testsrc.Render(t, c.dir(t))
			if c.name == "fork" && (src.Cluster.Name != "lab7" || src.Cluster.Autoscaler.PatchedImage == nil || src.NodeGroups["accel"] == nil ||
				src.NodeGroups["accel"].StartupTaint.Key != "startup-taint.cluster-autoscaler.kubernetes.io/lab7-accel" || src.Renewal().Period != 4*time.Hour) {
				t.Fatal("the fork's source did not get its own names")
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), files[layout.MonitoringRulesPath], 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "check", "rules", filepath.Join(dir, "rules.yaml")).CombinedOutput(); err != nil {
				t.Fatalf("promtool check rules: %v\n%s", err, out)
			}
			p := &promCase{t: t, src: src, rules: readRules(t, files), fired: map[string]bool{}, silent: map[string]bool{}}
			monitoringScenarios(p)
			var names []string
			for _, g := range p.rules.Groups {
				for _, r := range g.Rules {
					names = append(names, r.Alert)
				}
			}
			slices.Sort(names)
			for _, n := range slices.Compact(names) {
				if !p.fired[n] || !p.silent[n] {
					t.Errorf("alert %s: fired in a scenario %v, silent in one %v; every alert needs both", n, p.fired[n], p.silent[n])
				}
			}
			doc, err := yaml.Marshal(map[string]any{
				"rule_files":          []string{"rules.yaml"},
				"evaluation_interval": promDur(promEval),
				"tests":               p.tests,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), doc, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "test", "rules", "rules_test.yaml")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("promtool test rules: %v\n%s", err, out)
			}
		})
	}
}

// monitoringScenarios adds, for every alert the source renders, a
// scenario where it fires and one where it stays silent.
func monitoringScenarios(p *promCase) {
	t, src := p.t, p.src
	c := src.Cluster
	job := map[string]string{"job": model.AutoscalerFullname}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	ca := func(metric string, kv ...string) string { return sel("cluster_autoscaler_"+metric, with(job, kv...)) }
	forOfAlert := func(name string) time.Duration { return forOf(t, p.rulesNamed(name)) }

	// The autoscaler scraped or not, leading or not.
	down := forOfAlert("NodegenAutoscalerDown")
	p.add(scenario{name: "autoscaler down", input: []promSeries{{sel("up", job), flat(0, time.Hour)}},
		checks: []check{
			{at: down - promEval, alert: "NodegenAutoscalerDown"},
			{at: down + promEval, alert: "NodegenAutoscalerDown", firing: []expect{{}}},
		}})
	p.add(scenario{name: "autoscaler up and leading", input: []promSeries{
		{sel("up", with(job, "instance", "a")), flat(1, time.Hour)},
		{sel("up", with(job, "instance", "b")), flat(1, time.Hour)},
		{ca("last_activity", "instance", "a", "activity", "main"), clock(time.Hour)},
	}, checks: []check{
		{at: 30 * time.Minute, alert: "NodegenAutoscalerDown"},
		{at: 30 * time.Minute, alert: "NodegenAutoscalerNotLeading"},
	}})
	notLeading := forOfAlert("NodegenAutoscalerNotLeading")
	p.add(scenario{name: "autoscaler up, no leader", input: []promSeries{
		{sel("up", with(job, "instance", "a")), flat(1, time.Hour)},
		{sel("up", with(job, "instance", "b")), flat(1, time.Hour)},
	}, checks: []check{
		{at: notLeading - promEval, alert: "NodegenAutoscalerNotLeading"},
		{at: notLeading + promEval, alert: "NodegenAutoscalerNotLeading", firing: []expect{{}}},
		{at: notLeading + promEval, alert: "NodegenAutoscalerDown"},
	}})
	// The leader's loop stops at 10m (its last sample then; the series goes
	// on with the same value as a hung loop's would).
	p.add(scenario{name: "autoscaler leader hangs", input: []promSeries{
		{sel("up", with(job, "instance", "a")), flat(1, time.Hour)},
		{ca("last_activity", "instance", "a", "activity", "main"), clock(10*time.Minute) + " 600x100"},
	}, checks: []check{
		{at: 10*time.Minute + 3*time.Minute + notLeading - promEval, alert: "NodegenAutoscalerNotLeading"},
		{at: 10*time.Minute + 3*time.Minute + notLeading + 2*promEval, alert: "NodegenAutoscalerNotLeading", firing: []expect{{}}},
	}})

	// Scale-ups failed or not.
	p.add(scenario{name: "scale-up failed", input: []promSeries{
		{ca("failed_scale_ups_total", "reason", "cloudProviderError"), "0x10 1x100"},
	}, checks: []check{
		{at: 4 * time.Minute, alert: "NodegenScaleUpFailed"},
		{at: 7 * time.Minute, alert: "NodegenScaleUpFailed", firing: []expect{{labels: map[string]string{"reason": "cloudProviderError"}}}},
		{at: 20 * time.Minute, alert: "NodegenScaleUpFailed"},
	}})

	// Pending pods: the silent failure, a cap, a group at its max, and a
	// healthy scale-up. A scale-up at 30s, then, while pods pend, the
	// autoscaler tries one in every loop (each scrape sees a new
	// last_activity{activity="scaleUp"}) and adds nothing, or waits for
	// the upcoming node (it tries none).
	migs := src.AutoscaledMIGs()
	const tried = 2 * time.Minute // the rule's window, scaleUpTried
	pendFor := forOfAlert("NodegenPendingWithoutScaleUp")
	span := tried + pendFor + 40*time.Minute
	base := func() []promSeries {
		out := []promSeries{
			{ca("unschedulable_pods_count", "type", "unschedulable"), flat(2, span)},
			{ca("unschedulable_pods_count", "type", "scheduler_unprocessed"), flat(0, span)},
			{ca("nodes_count", "state", "ready"), flat(3, span)},
			{ca("nodes_count", "state", "notStarted"), flat(1, span)},
			{ca("last_activity", "activity", "scaleUp"), clock(span)},
		}
		for _, m := range migs {
			out = append(out, promSeries{ca("node_group_target_count", "node_group", m.URL), flat(0, span)})
		}
		return out
	}
	frozen := append(base(),
		promSeries{ca("scaled_up_nodes_total"), "0 " + flat(1, span)},
		promSeries{ca("skipped_scale_events_count", "direction", "up", "reason", "CpuResourceLimit"), flat(0, span)},
	)
	// The scale-up at 30s leaves the window at 2m30s (the range's first
	// sample is then the 1 of 30s).
	p.add(scenario{name: "pending, no scale-up (freeze)", input: frozen, checks: []check{
		{at: tried + pendFor - promEval, alert: "NodegenPendingWithoutScaleUp"},
		{at: tried + pendFor + 2*promEval, alert: "NodegenPendingWithoutScaleUp", firing: []expect{{}}},
		{at: tried + pendFor + 2*promEval, alert: "NodegenPendingCapped"},
		{at: tried + pendFor + 2*promEval, alert: "NodegenPendingGroupAtMax"},
	}})
	// The same pods wait for their upcoming node: no try after the
	// scale-up at 30s, for as long as the node takes.
	waiting := base()[:4]
	waiting = append(waiting, promSeries{ca("last_activity", "activity", "scaleUp"), "0 30x" + strconv.Itoa(samples(span))},
		promSeries{ca("scaled_up_nodes_total"), "0 " + flat(1, span)})
	for _, m := range migs {
		waiting = append(waiting, promSeries{ca("node_group_target_count", "node_group", m.URL), flat(0, span)})
	}
	p.add(scenario{name: "pending, waiting for the upcoming node", input: waiting, checks: []check{
		{at: tried + pendFor + 2*promEval, alert: "NodegenPendingWithoutScaleUp"},
		{at: span - promEval, alert: "NodegenPendingWithoutScaleUp"},
	}})
	// A node added every scrape while pods keep coming and the autoscaler
	// tries every loop.
	p.add(scenario{name: "pending, scaling up", input: append(base(),
		promSeries{ca("scaled_up_nodes_total"), fmt.Sprintf("0+1x%d", samples(span))},
	), checks: []check{
		{at: tried + pendFor + 2*promEval, alert: "NodegenPendingWithoutScaleUp"},
		{at: span - promEval, alert: "NodegenPendingWithoutScaleUp"},
	}})
	p.add(scenario{name: "pending, CPU cap", input: append(base(),
		promSeries{ca("scaled_up_nodes_total"), flat(0, span)},
		promSeries{ca("skipped_scale_events_count", "direction", "up", "reason", "CpuResourceLimit"), fmt.Sprintf("0+1x%d", samples(span))},
	), checks: []check{
		{at: tried + pendFor + 2*promEval, alert: "NodegenPendingCapped", firing: []expect{{}}},
		{at: tried + pendFor + 2*promEval, alert: "NodegenPendingWithoutScaleUp"},
	}})
	for _, g := range src.Groups() {
		if !g.Autoscaled() {
			continue
		}
		var url string
		for _, m := range migs {
			if m.Group == g {
				url = m.URL
				break
			}
		}
		in := []promSeries{{ca("scaled_up_nodes_total"), flat(0, span)}}
		for _, s := range base() {
			if strings.Contains(s.Series, strconv.Quote(url)) {
				s.Values = flat(float64(g.Max), span)
			}
			in = append(in, s)
		}
		gl := map[string]string{"nodegen_group": g.Name}
		p.add(scenario{name: "pending, " + g.Name + " at max", input: in, checks: []check{
			{at: tried + pendFor + 2*promEval, alert: "NodegenPendingGroupAtMax", firing: []expect{{labels: with(with(job, "node_group", url), "nodegen_group", g.Name)}}},
			{at: tried + pendFor + 2*promEval, alert: "NodegenPendingWithoutScaleUp"},
		}})
		backoff := forOfAlert("NodegenMIGBackedOff")
		unhealthy := forOfAlert("NodegenMIGUnhealthy")
		p.add(scenario{name: g.Name + " backed off and unhealthy", input: []promSeries{
			{ca("node_group_backoff_status", "node_group", url, "reason", "cloudProviderError"), flat(1, time.Hour)},
			{ca("node_group_healthiness", "node_group", url), flat(0, time.Hour)},
		}, checks: []check{
			{at: backoff + 2*promEval, alert: "NodegenMIGBackedOff", firing: []expect{{labels: with(gl, "node_group", url, "reason", "cloudProviderError")}}},
			{at: unhealthy - promEval, alert: "NodegenMIGUnhealthy"},
			{at: unhealthy + 2*promEval, alert: "NodegenMIGUnhealthy", firing: []expect{{labels: with(gl, "node_group", url)}}},
		}})
		p.add(scenario{name: g.Name + " healthy", input: []promSeries{
			{ca("node_group_backoff_status", "node_group", url), flat(0, time.Hour)},
			{ca("node_group_healthiness", "node_group", url), flat(1, time.Hour)},
		}, checks: []check{
			{at: 30 * time.Minute, alert: "NodegenMIGBackedOff"},
			{at: 30 * time.Minute, alert: "NodegenMIGUnhealthy"},
		}})
	}
	p.add(scenario{name: "no pending pods", input: append(base()[1:],
		promSeries{ca("unschedulable_pods_count", "type", "unschedulable"), flat(0, span)},
		promSeries{ca("scaled_up_nodes_total"), flat(0, span)}), checks: []check{
		{at: tried + pendFor + 2*promEval, alert: "NodegenPendingWithoutScaleUp"},
		{at: tried + pendFor + 2*promEval, alert: "NodegenPendingCapped"},
	}})

	// The caps, in flags.txt's numbers.
	if caps, ok := src.Caps(); ok {
		capFor := forOfAlert("NodegenCapNearlyReached")
		at := capFor + 2*promEval
		series := func(frac float64) []promSeries {
			var out []promSeries
			if caps.MaxNodes > 0 {
				out = append(out, promSeries{ca("nodes_count", "state", "ready"), flat(float64(caps.MaxNodes)*frac, time.Hour)})
			}
			if caps.Cores {
				out = append(out, promSeries{ca("cluster_cpu_current_cores"), flat(float64(caps.CoresMax)*frac, time.Hour)})
			}
			if caps.Memory {
				out = append(out, promSeries{ca("cluster_memory_current_bytes"), flat(float64(caps.MemoryGiBMax<<30)*frac, time.Hour)})
			}
			for _, typ := range model.SortedKeys(caps.GPUsMax) {
				for _, g := range src.CloudGroups() {
					if g.GPU != nil && g.GPU.Type == typ {
						node := c.BaseInstanceName(g) + "-x7k2"
						out = append(out, promSeries{sel("kube_node_status_allocatable", map[string]string{"node": node, "resource": "nvidia_com_gpu", "unit": "integer"}), flat(float64(caps.GPUsMax[typ])*frac, time.Hour)})
						// A node of no group of that type counts nothing.
						out = append(out, promSeries{sel("kube_node_status_allocatable", map[string]string{"node": c.BaseInstanceName(g) + "-x7k2z", "resource": "nvidia_com_gpu", "unit": "integer"}), flat(float64(caps.GPUsMax[typ]), time.Hour)})
						break
					}
				}
			}
			return out
		}
		var all []expect
		for _, r := range p.rulesNamed("NodegenCapNearlyReached") {
			all = append(all, expect{labels: map[string]string{"cap": r.Labels["cap"]}})
		}
		p.add(scenario{name: "caps reached", input: series(0.95), checks: []check{
			{at: capFor - promEval, alert: "NodegenCapNearlyReached"},
			{at: at, alert: "NodegenCapNearlyReached", firing: all},
		}})
		p.add(scenario{name: "caps at 85%", input: series(0.85), checks: []check{
			{at: at, alert: "NodegenCapNearlyReached"},
		}})
	}

	// Startup taints: a node of the group that keeps its taint, one that
	// loses it after 5 minutes, and a node of no cloud group with the same
	// taint.
	taintFor := forOfAlert("NodegenStartupTaintStuck")
	for _, g := range src.CloudGroups() {
		if g.StartupTaint == nil {
			continue
		}
		tk := g.StartupTaint
		node := c.BaseInstanceName(g) + "-q1w2"
		taint := func(node string) string {
			return sel("kube_node_spec_taint", map[string]string{"node": node, "key": tk.Key, "value": tk.Value, "effect": tk.Effect})
		}
		budget := src.InitBudget(g).Startup
		p.add(scenario{name: g.Name + " startup taint stays", input: []promSeries{
			{sel("kube_node_created", map[string]string{"node": node}), flat(0, time.Hour)},
			{taint(node), flat(1, time.Hour)},
		}, checks: []check{
			{at: budget + taintFor - promEval, alert: "NodegenStartupTaintStuck"},
			{at: budget + taintFor + 2*promEval, alert: "NodegenStartupTaintStuck", firing: []expect{{labels: map[string]string{"node": node, "nodegen_group": g.Name}}}},
		}})
		p.add(scenario{name: g.Name + " startup taint removed", input: []promSeries{
			{sel("kube_node_created", map[string]string{"node": node}), flat(0, time.Hour)},
			{taint(node), flat(1, 5*time.Minute)},
			{sel("kube_node_created", map[string]string{"node": "gpu-server-1"}), flat(0, time.Hour)},
			{taint("gpu-server-1"), flat(1, time.Hour)},
		}, checks: []check{
			{at: budget + taintFor + 2*promEval, alert: "NodegenStartupTaintStuck"},
		}})
	}

	// Kubelet CSRs: pending, and approved within a minute.
	csrFor := forOfAlert("NodegenKubeletCSRPending")
	var budget time.Duration
	for _, g := range src.CloudGroups() {
		d, err := c.JoinDeadline(g)
		if err != nil {
			t.Fatal(err)
		}
		budget = max(budget, d)
	}
	csr := func(name, signer, approved string) []promSeries {
		l := map[string]string{"certificatesigningrequest": name, "signer_name": signer}
		return []promSeries{
			{sel("kube_certificatesigningrequest_created", l), flat(0, time.Hour)},
			{sel("kube_certificatesigningrequest_condition", with(l, "condition", "approved")), approved},
			{sel("kube_certificatesigningrequest_condition", with(l, "condition", "denied")), flat(0, time.Hour)},
		}
	}
	p.add(scenario{name: "kubelet CSR pending", input: csr("csr-7rq2x", model.KubeletClientSigner, flat(0, time.Hour)), checks: []check{
		{at: budget + csrFor - promEval, alert: "NodegenKubeletCSRPending"},
		{at: budget + csrFor + 2*promEval, alert: "NodegenKubeletCSRPending", firing: []expect{{labels: map[string]string{"certificatesigningrequest": "csr-7rq2x"}}}},
	}})
	p.add(scenario{name: "kubelet CSR approved, other signer pending", input: append(csr("csr-7rq2x", model.KubeletClientSigner, "0 0 "+flat(1, time.Hour)),
		csr("csr-serving", "kubernetes.io/kubelet-serving", flat(0, time.Hour))...), checks: []check{
		{at: budget + csrFor + 2*promEval, alert: "NodegenKubeletCSRPending"},
	}})

	// The CronJobs: never succeeding, succeeding once long ago, on time.
	cron := func(alert string, w model.Workload, period, after time.Duration) {
		l := map[string]string{"namespace": w.Namespace(), "cronjob": w.Name()}
		f := forOfAlert(alert)
		span := after + f + 30*time.Minute
		p.add(scenario{name: w.Name() + " never succeeds", input: []promSeries{
			{sel("kube_cronjob_created", l), flat(0, span)},
		}, checks: []check{
			{at: after + f - promEval, alert: alert},
			{at: after + f + 2*promEval, alert: alert, firing: []expect{{labels: l}}},
		}})
		p.add(scenario{name: w.Name() + " stopped succeeding", input: []promSeries{
			{sel("kube_cronjob_created", l), flat(0, span)},
			{sel("kube_cronjob_status_last_successful_time", l), flat(0, span)},
		}, checks: []check{
			{at: after + f - promEval, alert: alert},
			{at: after + f + 2*promEval, alert: alert, firing: []expect{{labels: map[string]string{}}}},
		}})
		p.add(scenario{name: w.Name() + " on time", input: []promSeries{
			{sel("kube_cronjob_created", l), flat(0, span)},
			{sel("kube_cronjob_status_last_successful_time", l), lastSuccess(period, span)},
		}, checks: []check{
			{at: after + f + 2*promEval, alert: alert},
			{at: span - promEval, alert: alert},
		}})
	}
	if c.HasJoinTokenRenewer() {
		r := src.Renewal()
		cron("NodegenJoinTokenRenewerStale", model.JoinTokenRenewer, r.Period, r.Period+model.JoinTokenMargin)
	}
	grace := c.NodeLifecycle.NotReadyGracePeriod.Duration()
	cron("NodegenNodeCollectorStale", model.NodeCollector, time.Minute, grace)

	// Nodes without providerID: only rendered for the stock build.
	if c.Autoscaler.PatchedImage == nil {
		f := forOfAlert("NodegenNodeWithoutProviderID")
		p.add(scenario{name: "node without providerID", input: []promSeries{
			{sel("kube_node_info", map[string]string{"node": "cp-1", "kubelet_version": "v1.35.2"}), flat(1, time.Hour)},
		}, checks: []check{
			{at: f - promEval, alert: "NodegenNodeWithoutProviderID"},
			{at: f + 2*promEval, alert: "NodegenNodeWithoutProviderID", firing: []expect{{labels: map[string]string{"node": "cp-1"}}}},
		}})
		p.add(scenario{name: "every node with providerID", input: []promSeries{
			{sel("kube_node_info", map[string]string{"node": "cp-1", "provider_id": model.UnmanagedProviderID("cp-1")}), flat(1, time.Hour)},
		}, checks: []check{
			{at: f + 2*promEval, alert: "NodegenNodeWithoutProviderID"},
		}})
	} else if len(p.rulesNamed("NodegenNodeWithoutProviderID")) > 0 {
		t.Error("NodegenNodeWithoutProviderID is rendered for nodegen's patched build, which needs no providerID")
	}
}

// TestMonitoringObjects: out/monitoring's PrometheusRule and
// ServiceMonitor decode strictly into prometheus-operator's types; the
// PrometheusRule holds exactly the rule file's groups; the ServiceMonitor
// selects the Service the chart's values label, on the port they name, in
// the autoscaler's namespace; flags.txt turns on the per-MIG metrics the
// rules read, and every MIG of flags.txt is in the rules. A fork's source
// renders its own names and none of the example's.
func TestMonitoringObjects(t *testing.T) {
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"example", func(t *testing.T) string { return testsrc.Copy(t, nil) }},
		{"fork", forkSource},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, files := testsrc.Render(t, c.dir(t))
			docs := func(p string) []byte {
				parts := strings.SplitN(string(files[p]), "\n---\n", 3)
				if len(parts) != 2 {
					t.Fatalf("%s: want one object after the header, got %d parts", p, len(parts))
				}
				return []byte(parts[1])
			}
			var pr monitoringv1.PrometheusRule
			if err := yaml.UnmarshalStrict(docs(layout.MonitoringPrometheusRulePath), &pr); err != nil {
				t.Fatalf("%s: %v", layout.MonitoringPrometheusRulePath, err)
			}
			var sm monitoringv1.ServiceMonitor
			if err := yaml.UnmarshalStrict(docs(layout.MonitoringServiceMonitorPath), &sm); err != nil {
				t.Fatalf("%s: %v", layout.MonitoringServiceMonitorPath, err)
			}
			rules := readRules(t, files)
			a, _ := yaml.Marshal(pr.Spec.Groups)
			b, _ := yaml.Marshal(rules.Groups)
			if string(a) != string(b) || len(rules.Groups) == 0 {
				t.Errorf("the PrometheusRule's groups differ from %s:\n%s\n---\n%s", layout.MonitoringRulesPath, a, b)
			}
			ns := src.Cluster.Autoscaler.Namespace
			if pr.Namespace != ns || sm.Namespace != ns || !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{ns}) {
				t.Errorf("namespaces %q, %q, %v; want the autoscaler's %q", pr.Namespace, sm.Namespace, sm.Spec.NamespaceSelector.MatchNames, ns)
			}
			var v chartValues // the fields this test reads (TestValuesKeysExistInChart holds the others)
			if err := yaml.Unmarshal(files[layout.AutoscalerValuesPath], &v); err != nil {
				t.Fatal(err)
			}
			if len(v.Service.Labels) == 0 || !maps.Equal(sm.Spec.Selector.MatchLabels, v.Service.Labels) || len(sm.Spec.Selector.MatchExpressions) > 0 {
				t.Errorf("ServiceMonitor selects %v; the chart's Service is labelled %v", sm.Spec.Selector, v.Service.Labels)
			}
			if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != v.Service.PortName || sm.Spec.Endpoints[0].Path != "/metrics" {
				t.Errorf("endpoints %+v; want the Service's port %q, /metrics", sm.Spec.Endpoints, v.Service.PortName)
			}
			// The job label the rules select is the Service's name, the
			// chart's fullnameOverride.
			if !strings.Contains(string(files[layout.MonitoringRulesPath]), `job="`+v.FullnameOverride+`"`) {
				t.Errorf("the rules do not select job=%q", v.FullnameOverride)
			}
			flags := string(files[layout.AutoscalerFlagsPath])
			if !strings.Contains(flags, "\n--emit-per-nodegroup-metrics=true\n") || v.ExtraArgs["emit-per-nodegroup-metrics"] != "true" {
				t.Error("flags.txt and the chart's extraArgs must set --emit-per-nodegroup-metrics=true")
			}
			ruleText := string(files[layout.MonitoringRulesPath])
			for _, line := range strings.Split(flags, "\n") {
				if rest, ok := strings.CutPrefix(line, "--nodes="); ok {
					url := strings.SplitN(rest, ":", 3)[2]
					if !strings.Contains(ruleText, strings.ReplaceAll(regexp.QuoteMeta(url), `\`, `\\`)) {
						t.Errorf("MIG %s of flags.txt is in no rule", url)
					}
				}
			}
			if c.name == "fork" {
				for _, p := range []string{layout.MonitoringRulesPath, layout.MonitoringPrometheusRulePath, layout.MonitoringServiceMonitorPath} {
					for _, other := range []string{"hybrid-ai", "gpu-t4", "gpu-not-ready"} {
						if strings.Contains(string(files[p]), other) {
							t.Errorf("the fork's %s names the example's %q", p, other)
						}
					}
				}
				for _, own := range []string{"lab7-accel-", "forkco-lab7", "lab7-accel", `nodegen_cluster: lab7`, "startup-taint.cluster-autoscaler.kubernetes.io/lab7-accel"} {
					if !strings.Contains(ruleText, own) {
						t.Errorf("the fork's rules do not name %q", own)
					}
				}
			}
		})
	}
}
