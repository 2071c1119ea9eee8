package autoscaler

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

// options returns the autoscaler's global options as flag name
// (without dashes) and value, sorted by name; the cluster-wide limits
// (capFlags) come after them.
func options(src *model.Source) [][2]string {
	a := src.Cluster.Autoscaler
	balance := src.BalanceSimilarNodeGroups()
	opts := [][2]string{
		{"balance-similar-node-groups", strconv.FormatBool(balance)},
	}
	if balance {
		// Two zonal MIGs of one group are similar only when their nodes'
		// labels are equal, bar the ignored ones (compareLabels in
		// cluster-autoscaler/processors/nodegroupset/compare_nodegroups.go
		// and CreateGceNodeInfoComparator in gce_nodegroups.go beside it,
		// kubernetes/autoscaler cluster-autoscaler-1.35.0). During a
		// rollout one zone's nodes carry the new revision and another's
		// the old: without this the autoscaler stops balancing them.
		opts = append(opts, [2]string{"balancing-ignore-label", model.RevisionLabel})
	}
	opts = append(opts, [][2]string{
		// The per-MIG metrics (node_group_target_count,
		// node_group_healthiness, node_group_backoff_status, min and max)
		// that out/monitoring's rules read are off by default
		// (cluster-autoscaler/config/flags/flags.go emitPerNodeGroupMetrics,
		// metrics/metrics.go RegisterAll, kubernetes/autoscaler
		// cluster-autoscaler-1.35.2).
		{"emit-per-nodegroup-metrics", "true"},
		{"expander", a.Expander},
		// Explicit, for the two replicas: one leads, the other waits
		// (the chart's Role grants the Lease "cluster-autoscaler", the
		// autoscaler's default --leader-elect-resource-name).
		{"leader-elect", "true"},
		{"max-node-provision-time", a.MaxNodeProvisionTime.String()},
	}...)
	// The window from registration to ready, one for every MIG
	// (cluster-autoscaler-1.35.2 config/flags/flags.go
	// max-node-startup-time, default 15m; the GCE provider reads no
	// startup time per MIG, cloudprovider/gce/gce_manager.go
	// GetMigOptions): set only when a group's init budget needs more.
	if d, ok := src.MaxNodeStartupTime(); ok {
		opts = append(opts, [2]string{"max-node-startup-time", model.FormatDuration(d)})
	}
	return append(opts, [][2]string{
		{"scale-down-gpu-utilization-threshold", strconv.FormatFloat(a.ScaleDownGpuUtilizationThreshold, 'f', -1, 64)},
		{"scale-down-unneeded-time", a.ScaleDownUnneededTime.String()},
		{"scale-down-unready-time", a.ScaleDownUnreadyTime.String()},
		{"scale-down-utilization-threshold", strconv.FormatFloat(a.ScaleDownUtilizationThreshold, 'f', -1, 64)},
	}...)
}

// Flags renders the autoscaler's command-line flags, one a line.
func Flags(src *model.Source, header string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("--cloud-provider=gce\n")
	for _, m := range src.AutoscaledMIGs() {
		fmt.Fprintf(&b, "--nodes=%d:%d:%s\n", m.Min, m.Max, m.URL)
	}
	for _, k := range src.ExtraStartupTaints() {
		fmt.Fprintf(&b, "--startup-taint=%s\n", k)
	}
	for _, o := range options(src) {
		if o[0] == "max-node-provision-time" {
			if times := src.ProvisionTimes(); len(times) > 0 {
				fmt.Fprintf(&b, "# The default for every MIG; a group's kube-env autoscaling_options value wins. Per group: %s.\n", strings.Join(times, ", "))
			}
		}
		if o[0] == "max-node-startup-time" {
			fmt.Fprintf(&b, "# For every MIG (the GCE provider reads none per MIG): what the slowest group needs from registration to ready (nodegen explain: init budget), longer than the autoscaler's default %s.\n", model.FormatDuration(model.DefaultMaxNodeStartupTime))
		}
		fmt.Fprintf(&b, "--%s=%s\n", o[0], o[1])
	}
	b.WriteString(capsComment(src))
	for _, o := range capFlags(src) {
		fmt.Fprintf(&b, "--%s=%s\n", o[0], o[1])
	}
	return b.Bytes(), nil
}

// Values renders values for the official cluster-autoscaler Helm
// chart: the same MIGs and options as the flags, and a nodeSelector and
// tolerations that pin the autoscaler to its dedicated node group.
func Values(src *model.Source, header string) ([]byte, error) {
	c := &src.Cluster
	groups := []map[string]any{}
	for _, m := range src.AutoscaledMIGs() {
		groups = append(groups, map[string]any{"name": m.URL, "minSize": m.Min, "maxSize": m.Max})
	}
	extra := map[string]any{}
	for _, o := range options(src) {
		extra[o[0]] = o[1]
	}
	for i, k := range src.ExtraStartupTaints() {
		// The chart drops everything after the first '_' of a key, so
		// repeated flags get distinct keys.
		extra[fmt.Sprintf("startup-taint_%d", i+1)] = k
	}
	gpuTotals := 0
	for _, o := range capFlags(src) {
		if o[0] == "gpu-total" {
			gpuTotals++
			extra[fmt.Sprintf("gpu-total_%d", gpuTotals)] = o[1]
		} else {
			extra[o[0]] = o[1]
		}
	}
	var nodeSelector map[string]string
	var tolerations []corev1.Toleration
	replicas := 1
	if g, ok := src.NodeGroups[c.Autoscaler.NodeGroup]; ok {
		nodeSelector = map[string]string{model.VerifiedGroupLabel: g.Name}
		tolerations = append(manifest.Tolerations(g.Taints), manifest.TunnelLossTolerations(c)...)
		replicas = replicasOn(g)
	}
	values := map[string]any{
		"cloudProvider":     "gce",
		"autoscalingGroups": groups,
		"extraArgs":         extra,
		"image":             imageValues(c),
		"nodeSelector":      nodeSelector,
		"tolerations":       tolerations,
		"fullnameOverride":  model.AutoscalerFullname,
		// The Service the chart makes for the metrics port, labelled for
		// out/monitoring's ServiceMonitor, which selects on this label
		// rather than on the chart's, which carry the release's name.
		"service": map[string]any{
			"labels":   map[string]string{model.MetricsServiceLabel: model.AutoscalerFullname},
			"portName": model.AutoscalerMetricsPortName,
		},
		// The chart's ServiceAccount, named here rather than derived from
		// the release: the autoscaler node's admission policy admits its
		// pods by it.
		"rbac": map[string]any{"serviceAccount": map[string]any{"name": model.AutoscalerServiceAccount}},
	}
	for k, v := range spread(replicas) {
		values[k] = v
	}
	if prios := expanderPriorities(src); prios != nil {
		// The chart renders the priority expander's ConfigMap from this
		// map (priority → patterns) when extraArgs.expander contains
		// "priority", and then lets the autoscaler read it.
		values["expanderPriorities"] = stringKeys(prios)
	}
	return manifest.MarshalValues(header, values)
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
