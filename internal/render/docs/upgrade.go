package docs

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// AutoscalerUpgrade is the one-line command that gives the running Cluster
// Autoscaler, in namespace, the MIGs of the values file (the day-0 step's
// chart install, on one line): after gen, it stops the autoscaler sizing
// the MIGs that left the source.
func AutoscalerUpgrade(namespace, values string) string {
	return fmt.Sprintf("helm upgrade --install %s %s/%s --version %s --namespace %s -f %s",
		AutoscalerRelease, AutoscalerChartRepoName, AutoscalerChart, AutoscalerChartVersion, namespace, values)
}

// AutoscalerUpgradeOf is AutoscalerUpgrade for a cluster whose artifacts
// are in out/, where gen writes them by default.
func AutoscalerUpgradeOf(src *model.Source) string {
	return AutoscalerUpgrade(src.Cluster.Autoscaler.Namespace, "out/"+src.Tree+layout.AutoscalerValuesPath)
}
