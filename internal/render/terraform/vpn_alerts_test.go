package terraform_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/validate"
)

// monitoringMetrics is what Google says of the metrics the VPN's alert
// policies may read: the metric type, the monitored resource type it is
// written against, its metric labels (Google Cloud metrics list,
// https://cloud.google.com/monitoring/api/metrics_gcp_p_z, section "vpn":
// tunnel_established, "Indicates successful tunnel establishment if > 0",
// labels tunnel_name and gateway_name; section "router": bgp/session_up,
// "Indicator for successful bgp session establishment", label
// bgp_peer_name) and its resource's labels (monitored resources list,
// https://cloud.google.com/monitoring/api/resources: vpn_gateway and
// gce_router).
var monitoringMetrics = map[string]struct {
	resource                     string
	metricLabels, resourceLabels []string
}{
	"vpn.googleapis.com/tunnel_established": {"vpn_gateway", []string{"tunnel_name", "gateway_name"}, []string{"project_id", "region", "gateway_id"}},
	"router.googleapis.com/bgp/session_up":  {"gce_router", []string{"bgp_peer_name"}, []string{"project_id", "region", "router_id"}},
}

// parseMonitoringFilter reads a Cloud Monitoring filter of selectors
// joined by AND, each `selector = "value"`
// (https://cloud.google.com/monitoring/api/v3/filters), into its
// selectors' values; a selector given twice, or anything else, is an
// error.
func parseMonitoringFilter(f string) (map[string]string, error) {
	out := map[string]string{}
	selector := regexp.MustCompile(`^[a-z][a-z_.]*[a-z_]`)
	rest := f
	for {
		rest = strings.TrimLeft(rest, " ")
		key := selector.FindString(rest)
		if key == "" {
			return nil, fmt.Errorf("no selector at %q", rest)
		}
		rest = strings.TrimLeft(rest[len(key):], " ")
		if !strings.HasPrefix(rest, "=") {
			return nil, fmt.Errorf("%s: no '=' at %q", key, rest)
		}
		rest = strings.TrimLeft(rest[1:], " ")
		lit, err := strconv.QuotedPrefix(rest)
		if err != nil || !strings.HasPrefix(lit, `"`) {
			return nil, fmt.Errorf("%s: no quoted value at %q", key, rest)
		}
		v, _ := strconv.Unquote(lit)
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s given twice", key)
		}
		out[key] = v
		rest = strings.TrimLeft(rest[len(lit):], " ")
		if rest == "" {
			return out, nil
		}
		if !strings.HasPrefix(rest, "AND ") {
			return nil, fmt.Errorf("no AND at %q", rest)
		}
		rest = rest[len("AND "):]
	}
}

// checkMonitoringFilter returns what is wrong with a policy's filter
// against monitoringMetrics: a metric type Google does not list, a
// resource type that is not the metric's, a label neither the metric's
// nor its resource's.
func checkMonitoringFilter(f string) []string {
	sel, err := parseMonitoringFilter(f)
	if err != nil {
		return []string{fmt.Sprintf("%q: %v", f, err)}
	}
	m, ok := monitoringMetrics[sel["metric.type"]]
	if !ok {
		return []string{fmt.Sprintf("%q: metric type %q is none of the table's", f, sel["metric.type"])}
	}
	var errs []string
	if sel["resource.type"] != m.resource {
		errs = append(errs, fmt.Sprintf("%q: resource type %q, want %q", f, sel["resource.type"], m.resource))
	}
	for k := range sel {
		switch {
		case k == "metric.type" || k == "resource.type" || k == "project":
		case strings.HasPrefix(k, "metric.labels.") || strings.HasPrefix(k, "metric.label."):
			if l := k[strings.LastIndex(k, ".")+1:]; !slices.Contains(m.metricLabels, l) {
				errs = append(errs, fmt.Sprintf("%q: %s is no label of %s", f, l, sel["metric.type"]))
			}
		case strings.HasPrefix(k, "resource.labels.") || strings.HasPrefix(k, "resource.label."):
			if l := k[strings.LastIndex(k, ".")+1:]; !slices.Contains(m.resourceLabels, l) {
				errs = append(errs, fmt.Sprintf("%q: %s is no label of %s", f, l, m.resource))
			}
		default:
			errs = append(errs, fmt.Sprintf("%q: %s is no selector of a time series filter", f, k))
		}
	}
	return errs
}

// TestMonitoringFilterCheckFails: the filter check catches a metric type,
// a resource type or a label Google does not list, and a filter that is
// not AND-joined selectors; and takes the ones the policies use.
func TestMonitoringFilterCheckFails(t *testing.T) {
	for _, good := range []string{
		`metric.type = "vpn.googleapis.com/tunnel_established" AND resource.type = "vpn_gateway" AND metric.labels.tunnel_name = "a-tunnel0"`,
		`metric.type = "router.googleapis.com/bgp/session_up" AND resource.type = "gce_router" AND metric.labels.bgp_peer_name = "a-tunnel0" AND resource.labels.region = "r"`,
	} {
		if errs := checkMonitoringFilter(good); len(errs) > 0 {
			t.Errorf("%s: %v", good, errs)
		}
	}
	for _, bad := range []string{
		`metric.type = "vpn.googleapis.com/tunnel_up" AND resource.type = "vpn_gateway"`,
		`metric.type = "vpn.googleapis.com/tunnel_established" AND resource.type = "gce_router"`,
		`metric.type = "router.googleapis.com/bgp/session_up" AND resource.type = "gce_router" AND metric.labels.peer_name = "a"`,
		`metric.type = "router.googleapis.com/bgp/session_up" AND resource.type = "gce_router" AND resource.labels.router_name = "a"`,
		`metric.type = "vpn.googleapis.com/tunnel_established" resource.type = "vpn_gateway"`,
		`metric.type = "vpn.googleapis.com/tunnel_established" AND resource.type = vpn_gateway`,
		`metric.type = "vpn.googleapis.com/tunnel_established" AND resource.type = "vpn_gateway" AND metric.type = "x"`,
	} {
		if len(checkMonitoringFilter(bad)) == 0 {
			t.Errorf("%s passes the filter check", bad)
		}
	}
}

// tfPolicy is what vpn.tf says of an alert policy.
type tfPolicy struct {
	label, display, combiner, severity, project, content string
	channels                                             []string // nil: no notification_channels
	filters                                              []string
	durations                                            []string
}

// exprText is an expression's source text.
func exprText(src []byte, b *hclsyntax.Body, name string) string {
	a, ok := b.Attributes[name]
	if !ok {
		return ""
	}
	return string(a.Expr.Range().SliceBytes(src))
}

// tfAlertPolicies reads vpn.tf's alert policies, and the names its
// tunnels, BGP peers and HA VPN gateway have, the project expression of
// the tunnels and the Cloud Router's keepalive interval.
func tfAlertPolicies(t *testing.T, files layout.Files) (policies []tfPolicy, tunnels, peers []string, gateway, project string, keepalive int64) {
	t.Helper()
	src := files[layout.TerraformVPNPath]
	b := parseTF(t, files, layout.TerraformVPNPath)
	for _, r := range blocksOf(b, "resource", gce.TFVPNTunnel) {
		tunnels = append(tunnels, constValue(t, r.Body, "name").AsString())
		project = exprText(src, r.Body, "project")
	}
	for _, r := range blocksOf(b, "resource", gce.TFRouterPeer) {
		peers = append(peers, constValue(t, r.Body, "name").AsString())
	}
	for _, r := range blocksOf(b, "resource", gce.TFHAVPNGateway) {
		gateway = constValue(t, r.Body, "name").AsString()
	}
	_, keepalive, _, _, _ = tfVPN(t, files)
	for _, r := range blocksOf(b, "resource", gce.TFAlertPolicy) {
		p := tfPolicy{
			label:    r.Labels[1],
			display:  constValue(t, r.Body, "display_name").AsString(),
			combiner: constValue(t, r.Body, "combiner").AsString(),
			severity: constValue(t, r.Body, "severity").AsString(),
			project:  exprText(src, r.Body, "project"),
		}
		if _, ok := r.Body.Attributes["notification_channels"]; ok {
			p.channels = stringList(constValue(t, r.Body, "notification_channels"))
		}
		for _, d := range blocksOf(r.Body, "documentation") {
			p.content = constValue(t, d.Body, "content").AsString()
		}
		for _, c := range blocksOf(r.Body, "conditions") {
			for _, th := range blocksOf(c.Body, "condition_threshold") {
				p.filters = append(p.filters, constValue(t, th.Body, "filter").AsString())
				p.durations = append(p.durations, constValue(t, th.Body, "duration").AsString())
			}
		}
		policies = append(policies, p)
	}
	return policies, tunnels, peers, gateway, project, keepalive
}

// ownNamesVPN renders the tests' source under another cluster name, with
// one on-prem gateway of its own name and a 25 s keepalive (a 75 s hold
// time, not a whole minute).
func ownNamesVPN(t *testing.T, extra string) layout.Files {
	t.Helper()
	spec := testsrc.Spec{Cluster: strings.NewReplacer(`"gw-a"`, `"edge-west"`, "bgpKeepaliveInterval: 30", "bgpKeepaliveInterval: 25").Replace(vpnCUE(1, false)) + extra}
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range spec.Files() {
		if name == "cluster.cue" {
			renamed := strings.Replace(text, `name:                 "hybrid-ai"`, `name:                 "lab-b"`, 1)
			if renamed == text {
				t.Fatal("the tests' cluster.cue names no cluster hybrid-ai")
			}
			text = renamed
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := source.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if list := validate.Loaded(l); len(list) > 0 {
		t.Fatalf("nodegen rejects the test's source: %v", list)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// monitoringRunbooks are the runbook sections of docs/monitoring.md, by
// title.
func monitoringRunbooks(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### (\S+)$`).FindAllStringSubmatch(string(doc), -1) {
		out[m[1]] = true
	}
	return out
}

// TestVPNAlertPolicies: vpn.tf renders one Cloud Monitoring alert policy
// per tunnel (tunnel_established of that tunnel on that HA VPN gateway),
// one per BGP session (session_up of that peer) and one for every session
// down at once, each in the VPN's project, for as long as the BGP hold
// time in whole minutes, each filter of metric types, resource types and
// labels Google lists, each with a runbook section in docs/monitoring.md
// that its name and documentation name. A second source with its own
// cluster and gateway names and keepalive finds its own names in every
// policy and none of the first's.
func TestVPNAlertPolicies(t *testing.T) {
	runbooks := monitoringRunbooks(t)
	_, example := testsrc.Spec{Cluster: vpnCUE(2, false)}.MustRender(t)
	for name, files := range map[string]layout.Files{"example": example, "own names": ownNamesVPN(t, "")} {
		policies, tunnels, peers, gateway, project, keepalive := tfAlertPolicies(t, files)
		if len(tunnels) != 2 || len(peers) != 2 || gateway == "" {
			t.Fatalf("%s: vpn.tf has tunnels %v, peers %v, gateway %q", name, tunnels, peers, gateway)
		}
		hold := 3 * keepalive
		want := fmt.Sprintf("%ds", (hold+59)/60*60)
		if len(policies) != len(tunnels)+len(peers)+1 {
			t.Errorf("%s: %d alert policies, want one per tunnel, one per BGP session and one for the VPN", name, len(policies))
		}
		perTunnel, perPeer := map[string]int{}, map[string]int{}
		var all []string
		for _, p := range policies {
			if p.project != project {
				t.Errorf("%s: policy %s in project %s, the VPN's is %s", name, p.label, p.project, project)
			}
			if p.channels != nil {
				t.Errorf("%s: policy %s notifies %v without channels in the source", name, p.label, p.channels)
			}
			alert, _, _ := strings.Cut(p.display, ":")
			if !runbooks[alert] || !strings.Contains(p.content, "section "+alert+".") {
				t.Errorf("%s: policy %s (%q) has no runbook section in docs/monitoring.md that its documentation names: %q", name, p.label, p.display, p.content)
			}
			if len(p.filters) == 0 {
				t.Errorf("%s: policy %s has no condition", name, p.label)
			}
			for i, f := range p.filters {
				for _, e := range checkMonitoringFilter(f) {
					t.Errorf("%s: policy %s: %s", name, p.label, e)
				}
				if p.durations[i] != want {
					t.Errorf("%s: policy %s waits %s, want the hold time %ds in whole minutes, %s", name, p.label, p.durations[i], hold, want)
				}
			}
			sel, _ := parseMonitoringFilter(p.filters[0])
			switch {
			case p.combiner == "OR" && len(p.filters) == 1 && sel["metric.type"] == "vpn.googleapis.com/tunnel_established":
				if sel["metric.labels.gateway_name"] != gateway {
					t.Errorf("%s: policy %s watches gateway %q, not %q", name, p.label, sel["metric.labels.gateway_name"], gateway)
				}
				perTunnel[sel["metric.labels.tunnel_name"]]++
				if !strings.Contains(p.display, sel["metric.labels.tunnel_name"]) {
					t.Errorf("%s: policy %q does not name its tunnel", name, p.display)
				}
			case p.combiner == "OR" && len(p.filters) == 1 && sel["metric.type"] == "router.googleapis.com/bgp/session_up":
				perPeer[sel["metric.labels.bgp_peer_name"]]++
				if !strings.Contains(p.display, sel["metric.labels.bgp_peer_name"]) {
					t.Errorf("%s: policy %q does not name its BGP peer", name, p.display)
				}
			case p.combiner == "AND":
				for _, f := range p.filters {
					s, _ := parseMonitoringFilter(f)
					all = append(all, s["metric.labels.bgp_peer_name"])
				}
			default:
				t.Errorf("%s: policy %s (%q) is none of the VPN's kinds", name, p.label, p.display)
			}
		}
		for _, tn := range tunnels {
			if perTunnel[tn] != 1 {
				t.Errorf("%s: tunnel %s has %d alert policies, want 1 (%v)", name, tn, perTunnel[tn], perTunnel)
			}
		}
		for _, pn := range peers {
			if perPeer[pn] != 1 {
				t.Errorf("%s: BGP peer %s has %d alert policies, want 1 (%v)", name, pn, perPeer[pn], perPeer)
			}
		}
		if slices.Sort(all); !slices.Equal(all, slices.Sorted(slices.Values(peers))) {
			t.Errorf("%s: the VPN-down policy watches %v, want every BGP peer %v", name, all, peers)
		}
	}
	// The second source's policies carry its names only.
	own := string(ownNamesVPN(t, "")[layout.TerraformVPNPath])
	for _, w := range []string{"lab-b-tunnel0", "lab-b-tunnel1", `"lab-b-vpn"`, "edge-west", `"120s"`} {
		if !strings.Contains(own, w) {
			t.Errorf("own names: vpn.tf lacks %s", w)
		}
	}
	if strings.Contains(own, "hybrid-ai") || strings.Contains(own, "gw-a") {
		t.Errorf("own names: vpn.tf names the first source's cluster or gateway")
	}
}

// TestVPNAlertNotificationChannels: the source's notification channels
// are every policy's notification_channels, in the source's order.
func TestVPNAlertNotificationChannels(t *testing.T) {
	channels := []string{"projects/acme-hybrid-ai/notificationChannels/8487441449588706880", "projects/123456789012/notificationChannels/42"}
	extra := fmt.Sprintf("\n\tgcp: network: vpn: notificationChannels: [%q, %q]", channels[0], channels[1])
	_, example := testsrc.Spec{Cluster: vpnCUE(2, false) + extra}.MustRender(t)
	for name, files := range map[string]layout.Files{"example": example, "own names": ownNamesVPN(t, extra)} {
		policies, _, _, _, _, _ := tfAlertPolicies(t, files)
		if len(policies) == 0 {
			t.Fatalf("%s: no alert policy", name)
		}
		for _, p := range policies {
			if !slices.Equal(p.channels, channels) {
				t.Errorf("%s: policy %s notifies %v, want %v", name, p.label, p.channels, channels)
			}
		}
	}
}

// TestVPNAlertDurationBeforeEviction: a hold time whose whole minutes
// reach tunnelLossToleration (135 s, rounded up 180 s, against 150 s)
// waits tunnelLossToleration in whole minutes instead (120 s), so that
// with every tunnel down the alerts do not wait longer than nodegen's pods
// are tolerated on the cut-off nodes.
func TestVPNAlertDurationBeforeEviction(t *testing.T) {
	cue := strings.Replace(vpnCUE(2, false), "bgpKeepaliveInterval: 30", `bgpKeepaliveInterval: 45, tunnelLossToleration: "150s"`, 1)
	_, files := testsrc.Spec{Cluster: cue}.MustRender(t)
	policies, _, _, _, _, keepalive := tfAlertPolicies(t, files)
	if keepalive != 45 || len(policies) == 0 {
		t.Fatalf("keepalive %d, %d policies", keepalive, len(policies))
	}
	for _, p := range policies {
		for _, d := range p.durations {
			if d != "120s" {
				t.Errorf("policy %s waits %s, want 120s (tunnelLossToleration 150s in whole minutes)", p.label, d)
			}
		}
	}
}
