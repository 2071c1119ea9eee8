package systest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/gcefake"
	"github.com/nodegen/nodegen/internal/testing/testca"
)

// exporter is a running metrics endpoint (host:port) that Prometheus
// scrapes as job.
type exporter struct {
	job, addr string
}

// ksm serialises the kube-state-metrics builds of one test binary.
var ksm struct {
	sync.Mutex
	bin, err string
}

// ksmBinary returns kube-state-metrics, built by hack/testksm/build.sh from
// the Go module proxy into a cache outside the repository (minutes the
// first time on a machine). Without the module proxy the test is skipped,
// or failed where the system tests are required (NODEGEN_REQUIRE_CA).
func ksmBinary(t *testing.T) string {
	t.Helper()
	ksm.Lock()
	defer ksm.Unlock()
	if ksm.bin == "" && ksm.err == "" {
		cmd := exec.Command("bash", filepath.Join("..", "..", "..", "hack", "testksm", "build.sh"))
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			ksm.err = fmt.Sprintf("hack/testksm/build.sh: %v\n%s", err, stderr.String())
		} else {
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			ksm.bin = lines[len(lines)-1]
			t.Logf("%s", strings.TrimSpace(stderr.String()))
		}
	}
	if ksm.err != "" {
		if os.Getenv(testca.EnvRequire) != "" {
			t.Fatal(ksm.err)
		}
		t.Skip(ksm.err)
	}
	return ksm.bin
}

// startKSM runs kube-state-metrics against the cluster's API server with
// the collectors the rules read (Nodes, CertificateSigningRequests,
// CronJobs; each on by default in a deployment of it), as the admin.
func startKSM(t *testing.T, c *Cluster) *exporter {
	t.Helper()
	bin := ksmBinary(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	self, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "kube-state-metrics.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Flags of kube-state-metrics v2 (pkg/options/options.go).
	cmd := exec.Command(bin, "--kubeconfig="+c.CP.Kubeconfig, "--host=127.0.0.1", "--port="+port,
		"--telemetry-host=127.0.0.1", "--telemetry-port="+self, "--resources=certificatesigningrequests,cronjobs,nodes")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("kube-state-metrics's log, its last lines:\n%s", tail(string(b), 30))
		}
	})
	e := &exporter{job: "kube-state-metrics", addr: "127.0.0.1:" + port}
	if !eventually(30*time.Second, func() bool {
		r, err := http.Get("http://" + e.addr + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		return r.StatusCode == http.StatusOK && strings.Contains(string(b), "kube_node_info{")
	}) {
		t.Fatal("kube-state-metrics served no kube_node_info in 30s")
	}
	return e
}

// metrics is what the exporter serves now.
func (e *exporter) metrics() (string, error) {
	r, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err == nil && r.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s", r.Status)
	}
	return string(b), err
}

// prometheus is a real Prometheus server (Debian's prometheus package)
// scraping the autoscaler, and kube-state-metrics where given, with the
// rendered alerting rules.
type prometheus struct {
	url string
	// scrape is the scrape interval, the ServiceMonitor's.
	scrape time.Duration
}

// startPrometheus runs Prometheus with out/monitoring/rules.yaml of c,
// scraping the autoscaler's metrics as the job the rules name
// (cluster-autoscaler, the chart's Service, which the rendered
// ServiceMonitor selects) and the other exporters, all at the
// ServiceMonitor's interval, which is also the rule groups'.
func startPrometheus(t *testing.T, c *Cluster, ca *Autoscaler, more ...*exporter) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("NODEGEN_REQUIRE_CA") != "" {
			t.Fatal("prometheus is not installed; .ci/run installs Debian's prometheus package")
		}
		t.Skip("prometheus not installed (apt-get install prometheus)")
	}
	sm, err := os.ReadFile(filepath.Join(c.Out, "monitoring", "servicemonitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*- interval: (\S+)$`).FindSubmatch(sm)
	if m == nil {
		t.Fatalf("no endpoint interval in the rendered ServiceMonitor:\n%s", sm)
	}
	interval := string(m[1])
	scrape, err := time.ParseDuration(interval)
	if err != nil {
		t.Fatalf("the rendered ServiceMonitor's interval %q: %v", interval, err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
rule_files:
- %[2]s
scrape_configs:
`, interval, filepath.Join(c.Out, "monitoring", "rules.yaml"))
	for _, e := range append([]*exporter{{job: "cluster-autoscaler", addr: ca.Addr}}, more...) {
		cfg += fmt.Sprintf("- job_name: %s\n  static_configs:\n  - targets: [%q]\n", e.job, e.addr)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+port)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("prometheus's log, its last lines:\n%s", tail(string(b), 40))
		}
	})
	p := &prometheus{url: "http://127.0.0.1:" + port, scrape: scrape}
	if !eventually(30*time.Second, func() bool {
		r, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}) {
		t.Fatal("prometheus not ready in 30s")
	}
	return p
}

// alert is one entry of Prometheus's /api/v1/alerts.
type alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alerts returns the alerts Prometheus holds now (pending and firing).
func (p *prometheus) alerts(t *testing.T) []alert {
	t.Helper()
	r, err := http.Get(p.url + "/api/v1/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("prometheus /api/v1/alerts: %v (status %q)", err, body.Status)
	}
	return body.Data.Alerts
}

// renderedRule is an alerting rule of the rendered rules: its
// expression, its for and its group's evaluation interval.
type renderedRule struct {
	expr             string
	forDur, interval time.Duration
}

// findRule reads the alerting rule name from the rendered rules, the one
// whose labels include labels where several rules have the name (one per
// group).
func findRule(t *testing.T, c *Cluster, name string, labels map[string]string) renderedRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Out, "monitoring", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Interval string `json:"interval"`
			Rules    []struct {
				Alert  string            `json:"alert"`
				Expr   string            `json:"expr"`
				For    string            `json:"for"`
				Labels map[string]string `json:"labels"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != name || !hasLabels(r.Labels, labels) {
				continue
			}
			fd, err1 := time.ParseDuration(r.For)
			iv, err2 := time.ParseDuration(g.Interval)
			if err1 != nil || err2 != nil {
				t.Fatalf("rule %s: for %q, interval %q", name, r.For, g.Interval)
			}
			return renderedRule{expr: r.Expr, forDur: fd, interval: iv}
		}
	}
	t.Fatalf("no alerting rule %s with labels %v in the rendered rules", name, labels)
	return renderedRule{}
}

// ruleTiming reads an alerting rule's for and its group's interval from
// the rendered rules.
func ruleTiming(t *testing.T, c *Cluster, name string) (forDur, interval time.Duration) {
	t.Helper()
	r := findRule(t, c, name, nil)
	return r.forDur, r.interval
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// promTime formats t for Prometheus's API (Unix seconds, milliseconds).
func promTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// matrix is the result of a range query, or of an instant query of a
// range selector: each series's labels and samples (time, value).
type matrix []struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// sampleTime is a sample's timestamp.
func sampleTime(v [2]any) time.Time {
	f, _ := v[0].(float64)
	return time.UnixMilli(int64(math.Round(f * 1000)))
}

func (p *prometheus) matrix(t *testing.T, path string) matrix {
	t.Helper()
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     matrix `json:"result"`
		} `json:"data"`
	}
	p.get(t, path, &res)
	if res.Status != "success" || res.Data.ResultType != "matrix" {
		t.Fatalf("prometheus %s: %s %s (%s)", path, res.Status, res.Error, res.Data.ResultType)
	}
	return res.Data.Result
}

// alertSeries returns, by the value of label, the times at which the
// rules' evaluations wrote alert name in state (ALERTS{alertstate}) in
// the last back: the evaluations' own timestamps.
func (p *prometheus) alertSeries(t *testing.T, name, state, label string, back time.Duration) map[string][]time.Time {
	t.Helper()
	sel := fmt.Sprintf(`ALERTS{alertname=%q,alertstate=%q}[%ds]`, name, state, int(back.Seconds())+1)
	out := map[string][]time.Time{}
	for _, s := range p.matrix(t, "/api/v1/query?query="+url.QueryEscape(sel)) {
		for _, v := range s.Values {
			out[s.Metric[label]] = append(out[s.Metric[label]], sampleTime(v))
		}
	}
	return out
}

// firstFiring is the evaluation at which alert name first fired for the
// series carrying labels, from ALERTS{alertstate="firing"}.
func (p *prometheus) firstFiring(t *testing.T, name string, labels map[string]string, back time.Duration) (time.Time, bool) {
	t.Helper()
	sel := fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing"}[%ds]`, name, int(back.Seconds())+1)
	var first time.Time
	for _, s := range p.matrix(t, "/api/v1/query?query="+url.QueryEscape(sel)) {
		if !hasLabels(s.Metric, labels) || len(s.Values) == 0 {
			continue
		}
		if at := sampleTime(s.Values[0]); first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// onset evaluates expr (a rule's expression) on Prometheus's data every
// second from from to until, as the rule would have at each of those
// moments, and returns the first moment at which it held for a series
// carrying labels, and the start of the stretch over which it held
// without a break up to until (ok false when it did not hold at until).
func (p *prometheus) onset(t *testing.T, expr string, labels map[string]string, from, until time.Time) (first, held time.Time, ok bool) {
	t.Helper()
	q := url.Values{"query": {expr}, "start": {promTime(from)}, "end": {promTime(until)}, "step": {"1s"}}
	holds := map[int64]bool{}
	for _, s := range p.matrix(t, "/api/v1/query_range?"+q.Encode()) {
		if !hasLabels(s.Metric, labels) {
			continue
		}
		for _, v := range s.Values {
			at := sampleTime(v)
			holds[at.UnixMilli()] = true
			if first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	start := time.UnixMilli(from.UnixMilli())
	last := start.Add(until.Sub(start).Truncate(time.Second))
	if !holds[last.UnixMilli()] {
		return first, time.Time{}, false
	}
	held = last
	for held.After(start) && holds[held.Add(-time.Second).UnixMilli()] {
		held = held.Add(-time.Second)
	}
	return first, held, true
}

// firedInTime checks that alert name fired for the series carrying
// labels no later than its rule's for plus one evaluation interval after
// the rule's expression (the rule among those of the name whose labels
// include rule) began to hold in the scraped data, checked every second
// from from: the next evaluation sees it, and the one for later fires.
// It returns when it fired (the evaluation's timestamp) and when the
// expression began to hold.
func firedInTime(t *testing.T, c *Cluster, prom *prometheus, name string, rule, labels map[string]string, from time.Time) (fired, began time.Time, ok bool) {
	t.Helper()
	r := findRule(t, c, name, rule)
	fired, ok = prom.firstFiring(t, name, labels, time.Since(from)+time.Minute)
	if !ok {
		t.Errorf("%s %v: no firing evaluation in Prometheus's ALERTS series", name, labels)
		return fired, began, false
	}
	first, began, ok := prom.onset(t, r.expr, labels, from, fired)
	switch {
	case !ok:
		t.Errorf("%s %v fired at %s, when its expression did not hold", name, labels, fired.Format("15:04:05.000"))
	case fired.Sub(began) > r.forDur+r.interval:
		t.Errorf("%s %v fired %s after its expression began to hold in the scraped data, later than its for %s plus one evaluation (%s)",
			name, labels, fired.Sub(began).Round(time.Millisecond), r.forDur, r.interval)
	default:
		t.Logf("%s %v fired %s after its expression began to hold in the scraped data (for %s plus one evaluation %s)",
			name, labels, fired.Sub(began).Round(time.Millisecond), r.forDur, r.interval)
	}
	if ok && first.Before(began) {
		t.Logf("%s %v: its expression held from %s, broke off, and held again from %s", name, labels, first.Format("15:04:05"), began.Format("15:04:05"))
	}
	return fired, began, ok
}

// alertKey names an alert by its rule and the object it is about: the node
// or the CSR, where its labels name one.
func alertKey(a alert) string {
	for _, l := range []string{"node", "certificatesigningrequest"} {
		if v := a.Labels[l]; v != "" {
			return a.Labels["alertname"] + " " + v
		}
	}
	return a.Labels["alertname"]
}

// watch reads Prometheus's alerts every 5 seconds until done holds for
// the alerts seen firing so far or deadline passes; it returns when each
// was first seen firing (by alertKey) and every alert and state seen.
func (p *prometheus) watch(t *testing.T, deadline time.Time, done func(firing map[string]time.Time) bool) (map[string]time.Time, []string) {
	t.Helper()
	firing := map[string]time.Time{}
	var seen []string
	for {
		for _, a := range p.alerts(t) {
			k := alertKey(a)
			if s := k + " " + a.State; !slices.Contains(seen, s) {
				seen = append(seen, s)
			}
			if _, ok := firing[k]; !ok && a.State == "firing" {
				firing[k] = time.Now()
			}
		}
		if done(firing) || time.Now().After(deadline) {
			t.Logf("alerts seen: %s", strings.Join(seen, ", "))
			return firing, seen
		}
		time.Sleep(5 * time.Second)
	}
}

// scrapeTimeout is Prometheus's default scrape_timeout, which the tests'
// configuration keeps: a scraped sample, stamped with its scrape's start,
// may hold what its target learnt up to this much later.
const scrapeTimeout = 10 * time.Second

// within is the longest a rule may take to fire once its expression holds
// from t on: the next scrape, the next evaluation, its for, the evaluation
// that ends it, and the 5 seconds between two reads of the alerts.
func within(forDur, interval time.Duration) time.Duration {
	return forDur + 3*interval + 10*time.Second
}

// TestPendingWithoutScaleUpAlert: with the stock build and the nodes
// outside the MIGs without providerID, a scale-up fails in the orchestrator
// (the quotas tracker), which moves no metric of failed scale-ups and emits
// no event; a real Prometheus scraping the real autoscaler and
// kube-state-metrics with the rendered rules fires
// NodegenPendingWithoutScaleUp, and NodegenNodeWithoutProviderID for each
// of those nodes and no other, each no later than its for plus one
// evaluation after its expression began to hold in the scraped data
// (within for plus three evaluations and 10 s of the pod's creation, or
// of the first scrape);
// NodegenScaleUpFailed, which counts failed scale-ups, stays silent: the
// silent failure has an alert.
func TestPendingWithoutScaleUpAlert(t *testing.T) {
	t.Parallel()
	bin := testca.Binary(t, nil)
	c := hybrid(t, Options{Register: 2 * time.Second, GPUInit: 5 * time.Second, GPUValidated: time.Second})
	ca := c.StartAutoscaler(bin)
	prom := startPrometheus(t, c, ca, startKSM(t, c))
	scraped := time.Now()
	const name, noID = "NodegenPendingWithoutScaleUp", "NodegenNodeWithoutProviderID"
	forDur, interval := ruleTiming(t, c, name)
	idFor, idInterval := ruleTiming(t, c, noID)
	c.Create(gpuPod("train"))
	created := time.Now()
	if !eventually(90*time.Second, func() bool { return ca.Count(trackerError) >= 1 }) {
		t.Fatalf("the autoscaler did not log %q in 90s", trackerError)
	}
	// The autoscaler counts the pod unschedulable from its first loop
	// (--scan-interval 5s here); Prometheus sees it at its next scrape,
	// the rule at its next evaluation, and fires after for. The nodes
	// without providerID were there before Prometheus's first scrape.
	bound := within(forDur, interval)
	idBound := within(idFor, idInterval)
	declared := c.Source.DeclaredNodeNames()
	firing, seen := prom.watch(t, latest(created.Add(bound), scraped.Add(idBound)), func(f map[string]time.Time) bool {
		for _, n := range declared {
			if _, ok := f[noID+" "+n]; !ok {
				return false
			}
		}
		_, ok := f[name]
		return ok
	})
	for _, s := range seen {
		if strings.HasPrefix(s, "NodegenScaleUpFailed ") {
			t.Errorf("%s: the failure this test makes moves no failed-scale-up metric, or the test does not make it", s)
		}
	}
	at, ok := firing[name]
	if !ok {
		t.Fatalf("%s did not fire within %s (for %s, evaluated every %s) of the pod's creation", name, bound, forDur, interval)
	}
	t.Logf("%s fired %s after the pod was created (for %s, evaluated every %s)", name, at.Sub(created).Round(time.Second), forDur, interval)
	firedInTime(t, c, prom, name, nil, nil, scraped)
	for k := range firing {
		node, ok := strings.CutPrefix(k, noID+" ")
		if ok && !slices.Contains(declared, node) {
			t.Errorf("%s fired for %s, which has a providerID", noID, node)
		}
	}
	for _, n := range declared {
		if at, ok := firing[noID+" "+n]; !ok {
			t.Errorf("%s did not fire for %s within %s of the first scrape (for %s)", noID, n, idBound, idFor)
		} else {
			t.Logf("%s fired for %s %s after the first scrape", noID, n, at.Sub(scraped).Round(time.Second))
			firedInTime(t, c, prom, noID, nil, map[string]string{"node": n}, scraped)
		}
	}
	if m := c.Compute.Mutations(); len(m) > 0 {
		t.Errorf("the autoscaler changed MIGs although a node has no providerID:\n%s", mutated(c))
	}
}

// TestUpcomingNodeFreezeAlert: the stock build in the upcoming-node freeze
// that follows its own scale-up. With set-provider-id.sh run (every node
// outside the MIGs has its providerID), a GPU pod makes the autoscaler
// scale spot-gpu-t4 up; the node registers and its GPUs are never
// reported, so it stays upcoming for --max-node-startup-time (15m) after
// it registered (clusterstate/clusterstate.go, updateReadinessStats and
// GetUpcomingNodes, at cluster-autoscaler-1.35.2) and every other
// scale-up fails on its stand-in, which has no providerID. A CPU pod
// created two minutes into the freeze gets no node, and a real Prometheus
// scraping the autoscaler with the rendered rules fires
// NodegenPendingWithoutScaleUp no later than the rule's for plus one
// evaluation after its expression began to hold in the scraped data (the
// expression evaluated on Prometheus's data every second; the firing
// evaluation read from ALERTS), not before its for after the CPU pod's
// creation (less the scrape timeout) and within for plus three evaluations and 10 s of it, while the
// GPU node is still upcoming and although the autoscaler added a node
// minutes before; NodegenScaleUpFailed stays silent.
func TestUpcomingNodeFreezeAlert(t *testing.T) {
	t.Parallel()
	bin := testca.Binary(t, nil)
	c := hybrid(t, Options{Register: 2 * time.Second, GPUInit: time.Hour})
	setProviderID(t, c)
	ca := c.StartAutoscaler(bin)
	prom := startPrometheus(t, c, ca)
	const name = "NodegenPendingWithoutScaleUp"
	forDur, interval := ruleTiming(t, c, name)
	spot, burst := group(t, c, "spot-gpu-t4"), group(t, c, "cpu-burst")
	c.Create(gpuPod("train"))
	var gpuVM gcefake.Instance
	if !eventually(2*time.Minute, func() bool {
		v := created(c, spot)
		if len(v) == 0 || c.Node(v[0].Name) == nil {
			return false
		}
		gpuVM = v[0]
		return true
	}) {
		t.Fatalf("no spot-gpu-t4 node registered in 2m; calls:\n%s", mutated(c))
	}
	// The CPU pod comes once the GPU scale-up is out of the rule's
	// window: from then on the freeze alone keeps it pending.
	time.Sleep(time.Until(gpuVM.Created.Add(pendingWindow)))
	// The pod exists from some moment between sent and podCreated (a
	// create can take seconds on a loaded machine).
	sent := time.Now()
	c.Create(cpuPod("batch"))
	podCreated := time.Now()
	bound := within(forDur, interval)
	firing, seen := prom.watch(t, podCreated.Add(bound), func(f map[string]time.Time) bool {
		_, ok := f[name]
		return ok
	})
	for _, s := range seen {
		if strings.HasPrefix(s, "NodegenScaleUpFailed ") {
			t.Errorf("%s: the freeze moves no failed-scale-up metric, or the test does not make it", s)
		}
	}
	// The freeze held throughout: no cpu-burst VM, the GPU node still
	// initialising, the quotas tracker failing on an upcoming node.
	if v := created(c, burst); len(v) > 0 {
		t.Fatalf("the stock autoscaler scaled cpu-burst up while the GPU node initialised: no freeze; calls:\n%s", mutated(c))
	}
	if n := c.Node(gpuVM.Name); n == nil || !n.Status.Allocatable.Name(corev1.ResourceName(model.GPUResource), resource.DecimalSI).IsZero() {
		t.Fatalf("the GPU node %s finished initialising during the test: it must last longer", gpuVM.Name)
	}
	if n := ca.Count(trackerError); n == 0 || !strings.Contains(ca.Output(), "upcoming") {
		t.Errorf("the autoscaler did not log %q for the upcoming node (%d lines)", trackerError, n)
	}
	var added struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	prom.get(t, "/api/v1/query?query="+url.QueryEscape(`sum(cluster_autoscaler_scaled_up_nodes_total{job="cluster-autoscaler"})`), &added)
	if len(added.Data.Result) != 1 || added.Data.Result[0].Value[1] != "1" {
		t.Errorf("scaled_up_nodes_total is %v, want 1: the GPU node must be the autoscaler's own scale-up", added.Data.Result)
	}
	if _, ok := firing[name]; !ok {
		t.Fatalf("%s did not fire within %s (for %s, evaluated every %s) of the CPU pod's creation, %s after the GPU scale-up",
			name, bound, forDur, interval, podCreated.Sub(gpuVM.Created).Round(time.Second))
	}
	// The line the alert is held to: fired within its for plus one
	// evaluation of its condition holding in the scraped data.
	at, began, ok := firedInTime(t, c, prom, name, nil, nil, gpuVM.Created)
	if !ok {
		return
	}
	// A sample is stamped with its scrape's start, and the target answers
	// with what it knows when it answers, up to the scrape timeout later:
	// the earliest the alert may fire is its for after the create was
	// sent, less that timeout.
	if at.Before(sent.Add(forDur - scrapeTimeout)) {
		t.Errorf("%s fired %s after the CPU pod's create was sent, before its for (%s) less the scrape timeout (%s)",
			name, at.Sub(sent).Round(time.Second), forDur, scrapeTimeout)
	}
	if began.Before(podCreated) {
		t.Logf("%s's expression held from %s, before the CPU pod was created (%s)", name, began.Format("15:04:05"), podCreated.Format("15:04:05"))
	}
	t.Logf("%s fired %s after the CPU pod was created (for %s, evaluated every %s), %s after its expression began to hold, %s after the GPU scale-up",
		name, at.Sub(podCreated).Round(time.Second), forDur, interval, at.Sub(began).Round(time.Second), at.Sub(gpuVM.Created).Round(time.Second))
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// kubeletCSR creates a kubelet client CSR for node, as a kubelet's TLS
// bootstrap makes it (CN system:node:<node>, O system:nodes, the kubelet
// client signer; an ECDSA key), and approves it when approve is set, as the
// node CSR approver does once it has verified the VM.
func kubeletCSR(t *testing.T, c *Cluster, name, node string, approve bool) *certv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csrs := c.Client.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(context.Background(), &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: model.KubeletClientSigner,
			Usages:     []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CSR %s: %v", name, err)
	}
	if approve {
		csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
			Type: certv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: "the VM runs its group's template"})
		if csr, err = csrs.UpdateApproval(context.Background(), name, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("approving CSR %s: %v", name, err)
		}
	}
	return csr
}

// Timings of TestAlertsBesideHealthyScaleUp's fixture: a short join
// budget in the source, so that the CSR alert fires in minutes, and a
// cpu-burst VM that takes longer to register than
// NodegenPendingWithoutScaleUp's window and for, within its
// maxNodeProvisionTime.
const (
	heldProvisionTime = "10m" // every group's maxNodeProvisionTime: a join budget of 6m
	slowRegister      = 9*time.Minute + 30*time.Second
	// pendingWindow is NodegenPendingWithoutScaleUp's window as the
	// alert is designed: the autoscaler has tried a scale-up and added no
	// node within it (scaleUpTried of internal/render/monitoring). The
	// tests take it as a requirement, not from the rendered rules.
	pendingWindow = 2 * time.Minute
)

// TestAlertsBesideHealthyScaleUp: a real Prometheus scrapes the real
// autoscaler (nodegen's patched build, which scales up while another node
// is upcoming) and kube-state-metrics with the rendered rules, in a
// cluster whose source sets every group's maxNodeProvisionTime to 10m, so
// a join budget of 6m. At once:
//   - a healthy scale-up: a CPU pod waits longer than
//     NodegenPendingWithoutScaleUp's window and for (plus a scrape and two
//     evaluations) for its cpu-burst VM, which the autoscaler requested at
//     once and which registers within its provision time; the autoscaler
//     tries no other scale-up meanwhile and the alert never fires, where
//     pods pending that long while it keeps trying fire it
//     (TestPendingWithoutScaleUpAlert, TestUpcomingNodeFreezeAlert);
//   - spot-gpu-t4 nodes, one VM in each of the group's MIGs: one that
//     registered now and keeps its startup taint (its GPUs are never
//     validated), and two whose Nodes registered longer ago than the
//     group's init budget (Cluster.Backdate: stored in etcd as the API
//     server stores them, with that creationTimestamp, which
//     kube-state-metrics exports as kube_node_created), one still holding
//     its startup taint, one validated long since, both there before the
//     monitoring starts. NodegenStartupTaintStuck fires for the held old
//     node, with its group's label, no later than its for plus one
//     evaluation and one scrape after Prometheus started (kube-state-metrics
//     serving the node), and its for plus one evaluation after its
//     expression began to hold in the scraped data, and stays silent for
//     the new node with the same taint and for the old one without it;
//   - the node CSR approver is not running (the system tests run none):
//     a kubelet client CSR stays pending and NodegenKubeletCSRPending fires
//     for it, not before the join budget and for, and no later than for
//     plus one evaluation after its expression began to hold in the
//     scraped data, while one that was approved stays silent.
func TestAlertsBesideHealthyScaleUp(t *testing.T) {
	t.Parallel()
	c := hybrid(t, Options{Register: 2 * time.Second, RegisterGroup: map[string]time.Duration{"cpu-burst": slowRegister}, GPUInit: time.Hour},
		patchedSource,
		edit{"cluster.cue", `maxNodeProvisionTime:             "15m"`, `maxNodeProvisionTime:             "` + heldProvisionTime + `"`},
		edit{"gpu-t4.cue", `maxNodeProvisionTime:  "20m"`, `maxNodeProvisionTime:  "` + heldProvisionTime + `"`},
		edit{"spot-gpu-t4.cue", `maxNodeProvisionTime:  "20m"`, `maxNodeProvisionTime:  "` + heldProvisionTime + `"`})
	bin := patchedBinary(t, c)
	const pendingName, taintName, csrName = "NodegenPendingWithoutScaleUp", "NodegenStartupTaintStuck", "NodegenKubeletCSRPending"
	pendFor, interval := ruleTiming(t, c, pendingName)
	csrFor, _ := ruleTiming(t, c, csrName)
	burst, spot := group(t, c, "cpu-burst"), group(t, c, "spot-gpu-t4")
	taintRule := findRule(t, c, taintName, map[string]string{"nodegen_group": spot.Name})
	tried := pendingWindow
	if mnpt := c.Source.Cluster.MaxNodeProvisionTime(burst); slowRegister < tried+within(pendFor, interval)+15*time.Second || slowRegister+30*time.Second > mnpt {
		t.Fatalf("a cpu-burst VM registers after %s: it must take longer than %s's window %s, for and 3 intervals and 10s (%s) and the scale-up's 15s, and register 30s within its maxNodeProvisionTime %s", slowRegister, pendingName, tried, tried+within(pendFor, interval), mnpt)
	}
	startup := c.Source.InitBudget(spot).Startup
	if len(spot.Zones) < 3 || spot.StartupTaint == nil {
		t.Fatalf("the fixture's spot-gpu-t4 must have 3 zones and a startup taint: %v, %v", spot.Zones, spot.StartupTaint)
	}
	var joinBudget time.Duration
	for _, g := range c.Source.CloudGroups() {
		d, err := c.Source.Cluster.JoinDeadline(g)
		if err != nil {
			t.Fatal(err)
		}
		joinBudget = max(joinBudget, d)
	}

	// The held node: a spot-gpu-t4 VM (the MIG resized by hand), whose
	// Node registers with the startup taint and never reports its GPUs.
	c.Compute.Resize(spot.Zones[0], c.Source.Cluster.MIGName(spot, spot.Zones[0]), 1)
	var held *corev1.Node
	if !eventually(30*time.Second, func() bool {
		v := created(c, spot)
		if len(v) == 1 {
			held = c.Node(v[0].Name)
		}
		return held != nil
	}) {
		t.Fatal("the spot-gpu-t4 VM registered no node in 30s")
	}
	hasStartup := func(n *corev1.Node) bool {
		return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == spot.StartupTaint.Key })
	}
	if !hasStartup(held) {
		t.Fatalf("node %s registered without the startup taint: %v", held.Name, held.Spec.Taints)
	}
	pending := kubeletCSR(t, c, "node-csr-held", "hybrid-ai-cpu-burst-held", false)
	approved := kubeletCSR(t, c, "node-csr-approved", "hybrid-ai-cpu-burst-fine", true)

	// The old nodes: a VM in each other MIG of spot-gpu-t4, whose Node
	// registered a minute longer ago than the group's init budget, the
	// stuck one still holding its startup taint, the fine one validated.
	// Both are there before the autoscaler starts, as VMs that old are in
	// its MIG instance cache (it marks a VM it cannot find in a MIG it
	// listed within --gce-mig-instances-min-refresh-wait-time as in no
	// MIG until its next full refresh: cluster-autoscaler-1.35.2,
	// cloudprovider/gce/mig_info_provider.go, GetMigForInstance and
	// fillMigInstances).
	stuckMIG, fineMIG := c.Source.Cluster.MIGName(spot, spot.Zones[1]), c.Source.Cluster.MIGName(spot, spot.Zones[2])
	ago := startup + time.Minute
	c.Backdate(stuckMIG, ago, false)
	c.Backdate(fineMIG, ago, true)
	c.Compute.Resize(spot.Zones[1], stuckMIG, 1)
	c.Compute.Resize(spot.Zones[2], fineMIG, 1)
	nodeOf := func(mig string) *corev1.Node {
		for _, i := range c.Compute.Instances(mig) {
			if n := c.Node(i.Name); n != nil {
				return n
			}
		}
		return nil
	}
	var stuck, fine *corev1.Node
	if !eventually(30*time.Second, func() bool {
		stuck, fine = nodeOf(stuckMIG), nodeOf(fineMIG)
		return stuck != nil && fine != nil
	}) {
		t.Fatalf("the old spot-gpu-t4 VMs registered no nodes in 30s:\n%s", c.Events())
	}
	for _, n := range []*corev1.Node{stuck, fine} {
		if age := time.Since(n.CreationTimestamp.Time); age < startup || age > ago+time.Minute {
			t.Fatalf("the API server serves node %s as created %s ago, want %s", n.Name, age.Round(time.Second), ago)
		}
	}
	if !hasStartup(stuck) || hasStartup(fine) || fine.Status.Allocatable.Name(corev1.ResourceName(model.GPUResource), resource.DecimalSI).IsZero() {
		t.Fatalf("the old nodes: %s with taints %v (want the startup taint), %s with taints %v and %v (want none and its GPUs)",
			stuck.Name, stuck.Spec.Taints, fine.Name, fine.Spec.Taints, fine.Status.Allocatable)
	}
	// The fine node is empty and ready: kept from the autoscaler's
	// scale-down (its annotation for that, cluster-autoscaler-1.35.2
	// FAQ.md) so that it stays through the test, past the unneeded time.
	if err := c.patchNode(fine.Name, func(n *corev1.Node) bool {
		n.Annotations["cluster-autoscaler.kubernetes.io/scale-down-disabled"] = "true"
		return true
	}, false); err != nil {
		t.Fatal(err)
	}
	// Stored as the API server stores the node it created itself.
	for _, n := range []string{held.Name, stuck.Name} {
		raw, err := etcdGet(context.Background(), c.CP.EtcdURL, nodeKey(n))
		if err != nil || !bytes.HasPrefix(raw, []byte("k8s\x00")) {
			t.Fatalf("etcd holds node %s at %s as %.20q (%v), not as the API server's protobuf", n, nodeKey(n), raw, err)
		}
	}

	ca := c.StartAutoscaler(bin)
	ksm := startKSM(t, c)
	if !eventually(30*time.Second, func() bool {
		b, err := ksm.metrics()
		return err == nil && strings.Contains(b, `kube_node_created{node="`+stuck.Name+`"}`) && strings.Contains(b, `kube_node_created{node="`+fine.Name+`"}`)
	}) {
		t.Fatal("kube-state-metrics did not serve the old nodes in 30s")
	}
	prom := startPrometheus(t, c, ca, ksm)
	// The old nodes are visible to the monitoring from Prometheus's start:
	// kube-state-metrics serves them, and Prometheus scrapes it within an
	// interval.
	visible := time.Now()

	c.Create(cpuPod("batch"))
	podCreated := time.Now()
	var bound time.Time
	taintAt, csrAt := held.CreationTimestamp.Time, pending.CreationTimestamp.Time
	deadline := latest(podCreated.Add(slowRegister+time.Minute), csrAt.Add(joinBudget+within(csrFor, interval)))
	if !deadline.Before(taintAt.Add(startup)) {
		t.Fatalf("the test lasts until %s after the held node registered, past its startup budget %s", deadline.Sub(taintAt).Round(time.Second), startup)
	}
	firing, seen := prom.watch(t, deadline, func(f map[string]time.Time) bool {
		if bound.IsZero() && c.NodeOf("default", "batch") != "" {
			bound = time.Now()
		}
		_, b := f[csrName+" "+pending.Name]
		_, s := f[taintName+" "+stuck.Name]
		return !bound.IsZero() && b && s
	})

	// The healthy scale-up.
	if bound.IsZero() {
		t.Fatalf("the CPU pod was not bound within %s; calls:\n%s", deadline.Sub(podCreated).Round(time.Second), mutated(c))
	}
	waited := bound.Sub(podCreated)
	t.Logf("the CPU pod waited %s for its cpu-burst node (%s's for %s)", waited.Round(time.Second), pendingName, pendFor)
	if waited < tried+within(pendFor, interval) {
		t.Fatalf("the CPU pod waited %s, not longer than %s's window, for and 3 intervals: the scale-up does not tell the alert's conditions apart", waited.Round(time.Second), pendingName)
	}
	if v := created(c, burst); len(v) != 1 || v[0].Created.Sub(podCreated) > time.Minute {
		t.Errorf("cpu-burst VMs %v: want one, requested within a minute of the pod; calls:\n%s", v, mutated(c))
	}
	if at, ok := firing[pendingName]; ok {
		t.Errorf("%s fired %s after the pod was created, during a healthy scale-up", pendingName, at.Sub(podCreated).Round(time.Second))
	}
	for _, s := range seen {
		if strings.HasPrefix(s, "NodegenScaleUpFailed ") {
			t.Errorf("%s in a healthy scale-up", s)
		}
	}

	// The pending CSR.
	if at, ok := firing[csrName+" "+pending.Name]; !ok {
		t.Errorf("%s did not fire for %s within %s", csrName, pending.Name, joinBudget+within(csrFor, interval))
	} else if fired, _, ok := firedInTime(t, c, prom, csrName, nil, map[string]string{"certificatesigningrequest": pending.Name}, csrAt); ok {
		if fired.Sub(csrAt) < joinBudget+csrFor {
			t.Errorf("%s fired for %s %s after it was created, before its budget and for (%s)", csrName, pending.Name, fired.Sub(csrAt).Round(time.Second), joinBudget+csrFor)
		}
		t.Logf("%s fired for %s %s after it was created (budget and for %s; seen through the alerts API %s after)",
			csrName, pending.Name, fired.Sub(csrAt).Round(time.Second), joinBudget+csrFor, at.Sub(csrAt).Round(time.Second))
	}

	// The startup taints: the old held node fires, with its group's label,
	// in time; the new held node and the old fine one stay silent.
	if _, ok := firing[taintName+" "+stuck.Name]; !ok {
		t.Errorf("%s did not fire for %s, registered %s before its group's init budget %s ended", taintName, stuck.Name, ago, startup)
	} else if fired, _, ok := firedInTime(t, c, prom, taintName, map[string]string{"nodegen_group": spot.Name}, map[string]string{"node": stuck.Name}, visible.Add(-time.Minute)); ok {
		most := taintRule.forDur + taintRule.interval + prom.scrape
		if fired.Sub(visible) < taintRule.forDur-2*time.Second {
			t.Errorf("%s fired for %s %s after Prometheus started, before its for %s", taintName, stuck.Name, fired.Sub(visible).Round(time.Millisecond), taintRule.forDur)
		}
		if fired.Sub(visible) > most {
			t.Errorf("%s fired for %s %s after Prometheus started with the node served, later than its for %s, one evaluation %s and one scrape %s",
				taintName, stuck.Name, fired.Sub(visible).Round(time.Millisecond), taintRule.forDur, taintRule.interval, prom.scrape)
		}
		t.Logf("%s fired for %s %s after Prometheus started with the node served (for %s, evaluation %s, scrape %s)",
			taintName, stuck.Name, fired.Sub(visible).Round(time.Second), taintRule.forDur, taintRule.interval, prom.scrape)
	}
	found := false
	for _, a := range prom.alerts(t) {
		if a.Labels["alertname"] == taintName && a.Labels["node"] == stuck.Name && a.State == "firing" {
			found = true
			if a.Labels["nodegen_group"] != spot.Name {
				t.Errorf("%s for %s carries nodegen_group %q, want %s", taintName, stuck.Name, a.Labels["nodegen_group"], spot.Name)
			}
		}
	}
	if !found {
		t.Errorf("the alerts API does not hold %s firing for %s at the end", taintName, stuck.Name)
	}
	for _, s := range seen {
		if k, ok := strings.CutPrefix(s, taintName+" "); ok && !strings.HasPrefix(k, stuck.Name+" ") {
			t.Errorf("%s %s: only %s is past its budget with the startup taint", taintName, k, stuck.Name)
		}
	}
	for _, state := range []string{"pending", "firing"} {
		for n := range prom.alertSeries(t, taintName, state, "node", time.Since(taintAt)+time.Minute) {
			if n != stuck.Name {
				t.Errorf("ALERTS holds %s %s for %s: only %s is past its budget with the startup taint", taintName, state, n, stuck.Name)
			}
		}
	}
	// The silent nodes were scraped: the old one's creation, the new one's taint.
	for _, q := range []string{`kube_node_created{node="` + fine.Name + `"} < ` + strconv.FormatInt(time.Now().Add(-startup).Unix(), 10),
		`kube_node_spec_taint{node="` + held.Name + `",key="` + spot.StartupTaint.Key + `"}`} {
		var res struct {
			Data struct {
				Result []any `json:"result"`
			} `json:"data"`
		}
		prom.get(t, "/api/v1/query?query="+url.QueryEscape(q), &res)
		if len(res.Data.Result) != 1 {
			t.Errorf("Prometheus has %d series for %s, want 1: the node's silence proves nothing", len(res.Data.Result), q)
		}
	}

	for k := range firing {
		if strings.HasPrefix(k, csrName+" ") && k != csrName+" "+pending.Name {
			t.Errorf("%s fired: only %s is pending (%s was approved)", k, pending.Name, approved.Name)
		}
	}
	if n := ca.Count(trackerError); n > 0 {
		t.Errorf("the patched autoscaler logged %q %d times", trackerError, n)
	}
	dashboardSeen(t, c, prom)
}

// dashboardSeen: every query of the rendered dashboard runs on the real
// Prometheus, and every metric it names is one Prometheus scraped from the
// real autoscaler or kube-state-metrics.
func dashboardSeen(t *testing.T, c *Cluster, prom *prometheus) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Out, "monitoring", "dashboard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(string(b), "\n---\n", 3)
	var cm corev1.ConfigMap
	if len(parts) != 2 {
		t.Fatalf("dashboard.yaml: want one object after the header")
	}
	if err := yaml.Unmarshal([]byte(parts[1]), &cm); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, j := range cm.Data {
		var d struct {
			Panels []struct {
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal([]byte(j), &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Panels {
			for _, q := range p.Targets {
				exprs = append(exprs, q.Expr)
			}
		}
	}
	var names struct {
		Status string   `json:"status"`
		Data   []string `json:"data"`
	}
	prom.get(t, "/api/v1/label/__name__/values", &names)
	pql := parser.NewParser(parser.Options{})
	for _, e := range exprs {
		var res struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		prom.get(t, "/api/v1/query?query="+url.QueryEscape(e), &res)
		if res.Status != "success" {
			t.Errorf("the dashboard's query %q: Prometheus says %s: %s", e, res.Status, res.Error)
		}
		expr, err := pql.ParseExpr(e)
		if err != nil {
			t.Errorf("the dashboard's query %q: %v", e, err)
			continue
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok && !slices.Contains(names.Data, vs.Name) {
				t.Errorf("the dashboard's query %q reads %s, which neither the autoscaler nor kube-state-metrics served", e, vs.Name)
			}
			return nil
		})
	}
	t.Logf("the dashboard's %d queries ran on Prometheus; every metric they name was scraped", len(exprs))
}

// get decodes the JSON answer of a GET of Prometheus's API.
func (p *prometheus) get(t *testing.T, path string, v any) {
	t.Helper()
	r, err := http.Get(p.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
}
