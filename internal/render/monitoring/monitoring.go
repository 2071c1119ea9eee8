// Package monitoring writes out/monitoring: the alerting rules of a
// cluster, in the names and numbers of its source, as a Prometheus rule
// file and as a prometheus-operator PrometheusRule, the ServiceMonitor
// that scrapes the Cluster Autoscaler, and a Grafana dashboard (built with
// Grafana's foundation SDK) in a ConfigMap for Grafana's sidecar.
package monitoring

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// Timings of the scrape and of the rules' evaluation. Every rule's window
// and `for` is a multiple of them or one of the source's durations.
const (
	// ScrapeInterval is the ServiceMonitor's interval; a scrape of
	// kube-state-metrics is expected at the same pace.
	ScrapeInterval = 30 * time.Second
	// EvaluationInterval is each rule group's interval.
	EvaluationInterval = 30 * time.Second
	// nearlyFraction is how much of a cap "nearly reached" is.
	nearlyFraction = 0.9
	// loopStale is how long the leading autoscaler may go without
	// starting a loop (--scan-interval is 10s by default) before none is
	// taken to lead.
	loopStale = 3 * time.Minute
	// scaleUpTried is how recent the autoscaler's last scale-up try must
	// be for it to be still trying (it tries once a loop, every 10s by
	// default), and how long it must have added no node: the window of
	// NodegenPendingWithoutScaleUp, four scrapes.
	scaleUpTried = 2 * time.Minute
)

// Files renders out/monitoring.
func Files(src *model.Source, files layout.Files) error {
	header := layout.HashHeader(src.Name)
	groups, err := ruleGroups(src)
	if err != nil {
		return err
	}
	rules, err := yamlout.Marshal(map[string]any{"groups": groups})
	if err != nil {
		return fmt.Errorf("marshal rules: %w", err)
	}
	files[layout.MonitoringRulesPath] = append([]byte(header), rules...)
	objs := []runtime.Object{prometheusRule(src, groups)}
	b, err := manifest.MarshalObjects(header, objs)
	if err != nil {
		return err
	}
	files[layout.MonitoringPrometheusRulePath] = b
	b, err = manifest.MarshalObjects(header, []runtime.Object{serviceMonitor(src)})
	if err != nil {
		return err
	}
	files[layout.MonitoringServiceMonitorPath] = b
	cm, err := dashboardConfigMap(src)
	if err != nil {
		return err
	}
	b, err = manifest.MarshalObjects(header, []runtime.Object{cm})
	if err != nil {
		return err
	}
	files[layout.MonitoringDashboardPath] = b
	return nil
}

// objectMeta is the metadata of nodegen's monitoring objects: in the
// autoscaler's namespace, labelled as nodegen's (a Prometheus selects them
// with its ruleSelector and serviceMonitorSelector, docs/monitoring.md).
func objectMeta(src *model.Source, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: src.Cluster.Autoscaler.Namespace,
		Labels: map[string]string{
			"app.kubernetes.io/managed-by": "nodegen",
			"app.kubernetes.io/part-of":    src.Cluster.Name,
		},
	}
}

func prometheusRule(src *model.Source, groups []monitoringv1.RuleGroup) *monitoringv1.PrometheusRule {
	return &monitoringv1.PrometheusRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule"},
		ObjectMeta: objectMeta(src, "nodegen-"+src.Cluster.Name),
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: groups},
	}
}

func serviceMonitor(src *model.Source) *monitoringv1.ServiceMonitor {
	return &monitoringv1.ServiceMonitor{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "ServiceMonitor"},
		ObjectMeta: objectMeta(src, model.AutoscalerFullname),
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{
				model.MetricsServiceLabel: model.AutoscalerFullname,
			}},
			NamespaceSelector: monitoringv1.NamespaceSelector{MatchNames: []string{src.Cluster.Autoscaler.Namespace}},
			Endpoints: []monitoringv1.Endpoint{{
				Port:     model.AutoscalerMetricsPortName,
				Path:     "/metrics",
				Interval: promDuration(ScrapeInterval),
			}},
		},
	}
}

// promDuration writes d as a Prometheus duration ("30s", "1h5m").
func promDuration(d time.Duration) monitoringv1.Duration {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		d time.Duration
		s string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.s)
			d -= n * u.d
		}
	}
	return monitoringv1.Duration(b.String())
}

// seconds writes d in whole seconds, for a comparison with a timestamp
// difference.
func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// q quotes s as a PromQL string: PromQL's double-quoted strings take Go's
// escapes.
func q(s string) string { return strconv.Quote(s) }

// anyOf is a regular expression matching exactly one of values (PromQL
// anchors =~ at both ends).
func anyOf(values []string) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = regexpQuote(v)
	}
	return strings.Join(parts, "|")
}

// alert is one alerting rule before it becomes a monitoringv1.Rule.
type alert struct {
	name     string
	expr     string
	forDur   time.Duration
	severity string
	labels   map[string]string
	summary  string
	desc     string
}

// anchor is the alert's runbook section in docs/monitoring.md.
func anchor(name string) string { return "docs/monitoring.md#" + strings.ToLower(name) }

func (a alert) rule(cluster string) monitoringv1.Rule {
	labels := map[string]string{"severity": a.severity, "nodegen_cluster": cluster}
	for k, v := range a.labels {
		labels[k] = v
	}
	r := monitoringv1.Rule{
		Alert:  a.name,
		Expr:   intstr.FromString(a.expr),
		Labels: labels,
		Annotations: map[string]string{
			"summary":     a.summary,
			"description": a.desc,
			"runbook":     anchor(a.name),
		},
	}
	if a.forDur > 0 {
		d := promDuration(a.forDur)
		r.For = &d
	}
	return r
}

// ruleGroups are the cluster's rule groups: the autoscaler's, then the nodes'
// and the day-2 jobs'.
func ruleGroups(src *model.Source) ([]monitoringv1.RuleGroup, error) {
	c := src.Cluster.Name
	interval := promDuration(EvaluationInterval)
	var out []monitoringv1.RuleGroup
	for _, g := range []struct {
		name   string
		alerts func(*model.Source) ([]alert, error)
	}{
		{"autoscaler", autoscalerAlerts},
		{"nodes", nodeAlerts},
	} {
		alerts, err := g.alerts(src)
		if err != nil {
			return nil, err
		}
		rg := monitoringv1.RuleGroup{Name: "nodegen-" + c + "-" + g.name, Interval: &interval}
		for _, a := range alerts {
			rg.Rules = append(rg.Rules, a.rule(c))
		}
		out = append(out, rg)
	}
	return out, nil
}
