package model

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/layout"
)

// The Cluster Autoscaler's Helm chart that the day-0 steps install, at the
// release nodegen's values are proven with (the chart's own values and
// templates read at that version), and the release name it is installed
// under.
const (
	AutoscalerChartRepoName = "autoscaler"
	AutoscalerChartRepo     = "https://kubernetes.github.io/autoscaler"
	AutoscalerChart         = "cluster-autoscaler"
	AutoscalerChartVersion  = "9.59.0"
	AutoscalerHelmRelease   = "cluster-autoscaler"
)

// AutoscalerChartImageRepository is the chart's image.repository at
// AutoscalerChartVersion (its values.yaml), which nodegen's values keep
// unless cluster.autoscaler.patchedImage names another.
const AutoscalerChartImageRepository = "registry.k8s.io/autoscaling/cluster-autoscaler"

// AutoscalerUpgrade is the one-line command that gives the running Cluster
// Autoscaler, in namespace, the MIGs of the values file (the day-0 step's
// chart install, on one line): after gen, it stops the autoscaler sizing
// the MIGs that left the source.
func AutoscalerUpgrade(namespace, values string) string {
	return fmt.Sprintf("helm upgrade --install %s %s/%s --version %s --namespace %s -f %s",
		AutoscalerHelmRelease, AutoscalerChartRepoName, AutoscalerChart, AutoscalerChartVersion, namespace, values)
}

// AutoscalerUpgrade is AutoscalerUpgrade for the cluster whose artifacts
// are in out/, where gen writes them by default.
func (s *Source) AutoscalerUpgrade() string {
	return AutoscalerUpgrade(s.Cluster.Autoscaler.Namespace, "out/"+s.Tree+layout.AutoscalerValuesPath)
}
