package monitoring

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/model"
)

// DashboardLabel is the label by which Grafana's dashboard sidecar (the
// Grafana chart's sidecar.dashboards, label grafana_dashboard by default)
// picks up a ConfigMap holding dashboards.
const DashboardLabel = "grafana_dashboard"

// datasource is the dashboard's Prometheus: the data source variable's
// choice.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// DashboardFile is the name of the dashboard's JSON in its ConfigMap.
func DashboardFile(src *model.Source) string { return "nodegen-" + src.Cluster.Name + ".json" }

// dashboardUID is the dashboard's uid: nodegen-<cluster>, or for a name
// that makes it longer than Grafana's 40 characters a digest of it.
func dashboardUID(cluster string) string {
	uid := "nodegen-" + cluster
	if len(uid) <= 40 {
		return uid
	}
	sum := sha256.Sum256([]byte(cluster))
	return "nodegen-" + hex.EncodeToString(sum[:])[:32]
}

type query struct{ expr, legend string }

func panel(title, unit, desc string, qs ...query) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(desc).Datasource(datasource).Unit(unit).Min(0).Height(8).Span(12)
	for i, q := range qs {
		p.WithTarget(prometheus.NewDataqueryBuilder().Datasource(datasource).RefId(string(rune('A' + i))).Expr(q.expr).LegendFormat(q.legend))
	}
	return p
}

// Dashboard is the cluster's Grafana dashboard, in the same names and
// numbers as the rules: pending pods and scale-ups, upcoming nodes, per
// group its MIGs' target size against the group's max and their backoff,
// per GPU group the age of its nodes' startup taints against the
// autoscaler's startup time, and the caps used. Every query reads a metric
// the rules read, or one beside it from the same exporter.
func Dashboard(src *model.Source) (*dashboard.Dashboard, error) {
	c := src.Cluster
	pending := "max(" + ca("unschedulable_pods_count", `type="unschedulable"`) + ")"
	b := dashboard.NewDashboardBuilder("nodegen: "+c.Name).
		Uid(dashboardUID(c.Name)).
		Tags([]string{"nodegen", c.Name}).
		Description("Rendered by nodegen from the source of cluster "+c.Name+"; docs/monitoring.md says what each panel shows.").
		Refresh("30s").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Readonly().
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus")).
		WithRow(dashboard.NewRowBuilder("Scale-ups")).
		WithPanel(panel("Pending pods and nodes added", "short",
			"Pods the autoscaler finds unschedulable, and the nodes it added in the last 10 minutes.",
			query{pending, "unschedulable pods"},
			query{"sum(increase(" + ca("scaled_up_nodes_total") + "[10m]))", "nodes added in 10m"})).
		WithPanel(panel("Since the last scale-up try", "s",
			fmt.Sprintf("How long ago the autoscaler last tried a scale-up: it tries in each loop that leaves pods no node, upcoming ones included, takes. Pods pending while it keeps trying (under %s) and adds nothing is NodegenPendingWithoutScaleUp.", model.FormatDuration(scaleUpTried)),
			query{"time() - max(" + ca("last_activity", `activity="scaleUp"`) + ")", "since the last try"})).
		WithPanel(panel("Upcoming nodes", "short",
			"Nodes the autoscaler waits for: VMs not registered yet (unregistered) and registered nodes not ready yet (notStarted, a GPU node while its startup taint stays).",
			query{"sum by (state) (" + ca("nodes_count", `state=~"notStarted|unregistered"`) + ")", "{{state}}"}))
	startup, _ := src.MaxNodeStartupTime() // each group's init budget's Startup
	for _, g := range src.CloudGroups() {
		if !g.Autoscaled() && g.StartupTaint == nil {
			continue
		}
		b.WithRow(dashboard.NewRowBuilder("Group " + g.Name))
		if g.Autoscaled() {
			m := migMatcher(src, g)
			b.WithPanel(panel(g.Name+": target size and max per MIG", "short",
				fmt.Sprintf("Each MIG's target size; the group's max is %d per MIG (NodegenPendingGroupAtMax).", g.Max),
				query{"max by (node_group) (" + ca("node_group_target_count", m) + ")", "{{node_group}}"},
				query{"max by (node_group) (" + ca("node_group_max_count", m) + ")", "max {{node_group}}"})).
				WithPanel(panel(g.Name+": backoff", "short",
					"1 while the autoscaler backs the MIG off, by reason (NodegenMIGBackedOff).",
					query{"max by (node_group, reason) (" + ca("node_group_backoff_status", m, `reason!=""`) + ")", "{{node_group}} {{reason}}"}))
		}
		if g.StartupTaint != nil {
			nodes := "node=~" + q(c.InstanceNamePattern(g))
			b.WithPanel(panel(g.Name+": startup-taint age", "s",
				fmt.Sprintf("How long each node of the group has had its startup taint %s since it registered; past %s (the autoscaler's startup time, the group's init budget) NodegenStartupTaintStuck fires.", g.StartupTaint.Key, model.FormatDuration(startup)),
				query{"(time() - max by (node) (kube_node_created{" + nodes + "})) and on(node) max by (node) (kube_node_spec_taint{" + nodes + ",key=" + q(g.StartupTaint.Key) + "})", "{{node}}"},
				query{"vector(" + seconds(startup) + ")", "startup time"}))
		}
	}
	if caps, ok := src.Caps(); ok {
		b.WithRow(dashboard.NewRowBuilder("Caps"))
		limit := func(v int64) string { return "vector(" + strconv.FormatInt(v, 10) + ")" }
		if caps.MaxNodes > 0 {
			b.WithPanel(panel("Nodes against the cap", "short", "Every node counts, the ones outside the MIGs too (NodegenCapNearlyReached).",
				query{"sum(" + ca("nodes_count") + ")", "nodes"}, query{limit(caps.MaxNodes), "cap"}))
		}
		if caps.Cores {
			b.WithPanel(panel("vCPUs against the cap", "short", "Every node's vCPUs count (NodegenCapNearlyReached).",
				query{"max(" + ca("cluster_cpu_current_cores") + ")", "vCPUs"}, query{limit(caps.CoresMax), "cap"}))
		}
		if caps.Memory {
			b.WithPanel(panel("Memory against the cap", "bytes", "Every node's memory counts (NodegenCapNearlyReached).",
				query{"max(" + ca("cluster_memory_current_bytes") + ")", "memory"}, query{limit(caps.MemoryGiBMax) + " * 1073741824", "cap"}))
		}
		for _, t := range model.SortedKeys(caps.GPUsMax) {
			nodes := gpuNodes(src, t)
			if nodes == "" {
				continue
			}
			b.WithPanel(panel(t+" GPUs against the cap", "short", "The GPUs the nodes of this type advertise (NodegenCapNearlyReached).",
				query{"sum(max by (node) (kube_node_status_allocatable{resource=\"nvidia_com_gpu\",node=~" + q(nodes) + "}))", t},
				query{limit(caps.GPUsMax[t]), "cap"}))
		}
	}
	d, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	return &d, nil
}

// dashboardConfigMap is the dashboard as Grafana's sidecar loads it: a
// ConfigMap in the autoscaler's namespace, labelled grafana_dashboard,
// holding the dashboard's JSON.
func dashboardConfigMap(src *model.Source) (*corev1.ConfigMap, error) {
	d, err := Dashboard(src)
	if err != nil {
		return nil, err
	}
	j, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	meta := objectMeta(src, "nodegen-"+src.Cluster.Name+"-dashboard")
	meta.Labels[DashboardLabel] = "1"
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta,
		Data:       map[string]string{DashboardFile(src): string(j) + "\n"},
	}, nil
}
