package systest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/testing/testca"
)

// prometheus is a real Prometheus server (Debian's prometheus package)
// scraping the autoscaler with the rendered alerting rules.
type prometheus struct {
	url string
}

// startPrometheus runs Prometheus with out/monitoring/rules.yaml of c,
// scraping the autoscaler's metrics as the job the rules name
// (cluster-autoscaler, the chart's Service, which the rendered
// ServiceMonitor selects) at the ServiceMonitor's interval.
func startPrometheus(t *testing.T, c *Cluster, ca *Autoscaler) *prometheus {
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
- job_name: cluster-autoscaler
  static_configs:
  - targets: ["%[3]s"]
`, interval, filepath.Join(c.Out, "monitoring", "rules.yaml"), ca.Addr)
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
	p := &prometheus{url: "http://127.0.0.1:" + port}
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

// ruleTiming reads an alerting rule's for and its group's interval from
// the rendered rules.
func ruleTiming(t *testing.T, c *Cluster, name string) (forDur, interval time.Duration) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Out, "monitoring", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Interval string `json:"interval"`
			Rules    []struct {
				Alert string `json:"alert"`
				For   string `json:"for"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != name {
				continue
			}
			fd, err1 := time.ParseDuration(r.For)
			iv, err2 := time.ParseDuration(g.Interval)
			if err1 != nil || err2 != nil {
				t.Fatalf("rule %s: for %q, interval %q", name, r.For, g.Interval)
			}
			return fd, iv
		}
	}
	t.Fatalf("no alerting rule %s in the rendered rules", name)
	return 0, 0
}

// TestPendingWithoutScaleUpAlert: with the stock build and a node without
// providerID, a scale-up fails in the orchestrator (the quotas tracker),
// which moves no metric of failed scale-ups and emits no event; a real
// Prometheus scraping the real autoscaler with the rendered rules fires
// NodegenPendingWithoutScaleUp within the rule's for plus two evaluations
// and a scrape after the pod became unschedulable, and
// NodegenScaleUpFailed, which counts failed scale-ups, stays silent: the
// silent failure has an alert.
func TestPendingWithoutScaleUpAlert(t *testing.T) {
	t.Parallel()
	bin := testca.Binary(t, nil)
	c := hybrid(t, Options{Register: 2 * time.Second, GPUInit: 5 * time.Second, GPUValidated: time.Second})
	ca := c.StartAutoscaler(bin)
	prom := startPrometheus(t, c, ca)
	const name = "NodegenPendingWithoutScaleUp"
	forDur, interval := ruleTiming(t, c, name)
	c.Create(gpuPod("train"))
	created := time.Now()
	if !eventually(90*time.Second, func() bool { return ca.Count(trackerError) >= 1 }) {
		t.Fatalf("the autoscaler did not log %q in 90s", trackerError)
	}
	// The autoscaler counts the pod unschedulable from its first loop
	// (--scan-interval 5s here); Prometheus sees it at its next scrape,
	// the rule at its next evaluation, and fires after for.
	bound := forDur + 3*interval + 10*time.Second
	var firing time.Duration
	var seen []string
	deadline := created.Add(bound)
	for time.Now().Before(deadline) && firing == 0 {
		for _, a := range prom.alerts(t) {
			if s := a.Labels["alertname"] + " " + a.State; !slices.Contains(seen, s) {
				seen = append(seen, s)
			}
			if a.Labels["alertname"] == "NodegenScaleUpFailed" {
				t.Errorf("NodegenScaleUpFailed is %s: the failure this test makes moves no failed-scale-up metric, or the test does not make it", a.State)
			}
			if a.Labels["alertname"] == name && a.State == "firing" {
				firing = time.Since(created)
			}
		}
		time.Sleep(5 * time.Second)
	}
	t.Logf("alerts seen: %s", strings.Join(seen, ", "))
	if firing == 0 {
		t.Fatalf("%s did not fire within %s (for %s, evaluated every %s) of the pod's creation", name, bound, forDur, interval)
	}
	t.Logf("%s fired %s after the pod was created (for %s, evaluated every %s)", name, firing.Round(time.Second), forDur, interval)
	if m := c.Compute.Mutations(); len(m) > 0 {
		t.Errorf("the autoscaler changed MIGs although a node has no providerID:\n%s", mutated(c))
	}
}
