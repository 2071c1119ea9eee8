package render_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestMonitoringDashboard: out/monitoring/dashboard.yaml is one ConfigMap
// (decoded strictly) in the autoscaler's namespace, labelled for Grafana's
// dashboard sidecar, holding one dashboard that decodes into Grafana's
// foundation SDK's types; every query of every panel parses as PromQL and
// names only metrics of the autoscaler (its job) and kube-state-metrics;
// every MIG of flags.txt and every startup-taint key is in a query. A
// fork's source renders its own names and none of the example's. That the
// metrics named are ones the real exporters serve is
// TestAlertsBesideHealthyScaleUp's (internal/testing/systest).
func TestMonitoringDashboard(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"example", func(t *testing.T) string { return testsrc.Copy(t, map[string]string{"cluster.cue": monitoringCluster}) }},
		{"fork", forkSource},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, files := testsrc.Render(t, c.dir(t))
			text := string(files[layout.MonitoringDashboardPath])
			parts := strings.SplitN(text, "\n---\n", 3)
			if len(parts) != 2 {
				t.Fatalf("%s: want one object after the header, got %d parts", layout.MonitoringDashboardPath, len(parts))
			}
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict([]byte(parts[1]), &cm); err != nil {
				t.Fatalf("%s: %v", layout.MonitoringDashboardPath, err)
			}
			if cm.Kind != "ConfigMap" || cm.Namespace != src.Cluster.Autoscaler.Namespace || cm.Labels["grafana_dashboard"] != "1" || len(cm.Data) != 1 {
				t.Fatalf("%s: kind %s, namespace %s, labels %v, %d data keys; want one dashboard in a ConfigMap of the autoscaler's namespace labelled grafana_dashboard", layout.MonitoringDashboardPath, cm.Kind, cm.Namespace, cm.Labels, len(cm.Data))
			}
			var d dashboard.Dashboard
			for _, j := range cm.Data {
				if err := json.Unmarshal([]byte(j), &d); err != nil {
					t.Fatalf("the dashboard does not decode: %v", err)
				}
			}
			if d.Title == nil || !strings.Contains(*d.Title, src.Cluster.Name) {
				t.Errorf("the dashboard's title %v does not name cluster %s", d.Title, src.Cluster.Name)
			}
			var exprs []string
			for _, p := range d.Panels {
				if p.Panel == nil {
					continue
				}
				if len(p.Panel.Targets) == 0 {
					t.Errorf("panel %v has no query", p.Panel.Title)
				}
				for _, tg := range p.Panel.Targets {
					q, ok := tg.(*prometheus.Dataquery)
					if !ok {
						t.Fatalf("panel %v: a query of type %T, not Prometheus's", p.Panel.Title, tg)
					}
					exprs = append(exprs, q.Expr)
				}
			}
			if len(exprs) == 0 {
				t.Fatal("the dashboard has no query")
			}
			// The parser with no experimental feature: what a Prometheus
			// parses without feature flags.
			pql := parser.NewParser(parser.Options{})
			for _, e := range exprs {
				expr, err := pql.ParseExpr(e)
				if err != nil {
					t.Errorf("query %q: %v", e, err)
					continue
				}
				for _, name := range metricNames(expr) {
					if !strings.HasPrefix(name, "cluster_autoscaler_") && !strings.HasPrefix(name, "kube_") {
						t.Errorf("query %q names %s, of neither the autoscaler nor kube-state-metrics", e, name)
					}
					if strings.HasPrefix(name, "cluster_autoscaler_") && !strings.Contains(e, name+`{job="`) {
						t.Errorf("query %q reads %s of no job", e, name)
					}
				}
			}
			all := strings.Join(exprs, "\n")
			for _, line := range strings.Split(string(files[layout.AutoscalerFlagsPath]), "\n") {
				if rest, ok := strings.CutPrefix(line, "--nodes="); ok {
					url := strings.SplitN(rest, ":", 3)[2]
					if !strings.Contains(all, strings.ReplaceAll(regexp.QuoteMeta(url), `\`, `\\`)) {
						t.Errorf("MIG %s of flags.txt is in no query", url)
					}
				}
			}
			for _, g := range src.CloudGroups() {
				if g.StartupTaint != nil && !strings.Contains(all, `key="`+g.StartupTaint.Key+`"`) {
					t.Errorf("the startup taint %s of group %s is in no query", g.StartupTaint.Key, g.Name)
				}
			}
			if c.name == "fork" {
				for _, other := range []string{"hybrid-ai", "gpu-t4", "gpu-not-ready"} {
					if strings.Contains(text, other) {
						t.Errorf("the fork's dashboard names the example's %q", other)
					}
				}
			}
		})
	}
}

// metricNames are the metric names an expression's selectors read.
func metricNames(expr parser.Expr) []string {
	var out []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && !slices.Contains(out, vs.Name) {
			out = append(out, vs.Name)
		}
		return nil
	})
	return out
}
