package gce

import (
	"strconv"
	"strings"

	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
)

// kubeEnvVars returns the AUTOSCALER_ENV_VARS of a cloud group, in the
// order they are written. os, os_distribution and arch come first so that
// no later variable can make the autoscaler lose the OS.
func kubeEnvVars(g *model.NodeGroup) ([]kubeenv.Var, error) {
	vars := []kubeenv.Var{
		{Name: kubeenv.VarOS, Value: "linux"},
		{Name: kubeenv.VarOSDistribution, Value: g.OSDistribution},
		{Name: kubeenv.VarArch, Value: g.Arch},
		{Name: kubeenv.VarNodeLabels, Value: joinPairs(g.TemplateLabels(), "=")},
	}
	if len(g.Taints) > 0 {
		taints := make([]string, len(g.Taints))
		for i, t := range g.Taints {
			taints[i] = t.String()
		}
		vars = append(vars, kubeenv.Var{Name: kubeenv.VarNodeTaints, Value: strings.Join(taints, ",")})
	}
	reserved, err := g.TotalReserved()
	if err != nil {
		return nil, err
	}
	vars = append(vars,
		kubeenv.Var{Name: kubeenv.VarKubeReserved, Value: joinPairs(reserved, "=")},
		kubeenv.Var{Name: kubeenv.VarEvictionHard, Value: joinPairs(g.AutoscalerEvictionHard(), "=")},
		// The autoscaler counts only guestAccelerators for nvidia.com/gpu;
		// extended_resources also covers machine types with built-in GPUs,
		// GPU sharing, and maxPods.
		kubeenv.Var{Name: kubeenv.VarExtendedResources, Value: joinPairs(extendedResources(g), "=")},
	)
	vars = append(vars, localSSDVars(g)...)
	if opts := autoscalingOptions(g.Autoscaling); len(opts) > 0 {
		vars = append(vars, kubeenv.Var{Name: kubeenv.VarAutoscalingOptions, Value: joinPairs(opts, "=")})
	}
	return vars, nil
}

// autoscalingOptions returns a group's per-MIG autoscaler options under
// the keys the autoscaler reads from kube-env.
func autoscalingOptions(o model.AutoscalingOptions) map[string]string {
	out := map[string]string{}
	if o.ScaleDownUtilizationThreshold != nil {
		out["scaledownutilizationthreshold"] = formatFloat(*o.ScaleDownUtilizationThreshold)
	}
	if o.ScaleDownGpuUtilizationThreshold != nil {
		out["scaledowngpuutilizationthreshold"] = formatFloat(*o.ScaleDownGpuUtilizationThreshold)
	}
	if !o.ScaleDownUnneededTime.IsZero() {
		out["scaledownunneededtime"] = o.ScaleDownUnneededTime.String()
	}
	if !o.ScaleDownUnreadyTime.IsZero() {
		out["scaledownunreadytime"] = o.ScaleDownUnreadyTime.String()
	}
	if !o.MaxNodeProvisionTime.IsZero() {
		out["maxnodeprovisiontime"] = o.MaxNodeProvisionTime.String()
	}
	return out
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// joinPairs renders a map as k<sep>v pairs joined by ',', sorted by key.
func joinPairs(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for _, k := range model.SortedKeys(m) {
		parts = append(parts, k+sep+m[k])
	}
	return strings.Join(parts, ",")
}
