package explain

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/model"
)

// GroupInitBudget is an autoscaled group's init budget (model.InitBudget):
// how long a scale-up of it may take until its node is usable, and the
// freeze that implies when the autoscaler adds no node while one is
// upcoming.
type GroupInitBudget struct {
	Group string `json:"group"`
	// Provision, Startup and Needs are Go durations (model.InitBudget).
	Provision string   `json:"provision"`
	Startup   string   `json:"startup"`
	Needs     string   `json:"needs"`
	Steps     []string `json:"steps"`
	// Total is Provision plus Startup.
	Total string `json:"total"`
	// Freezes is true when the source's autoscaler adds no node anywhere
	// while one is upcoming (the stock build): a scale-up of the group
	// then holds every other for up to Total.
	Freezes bool `json:"freezes"`
	// Message says it in one line.
	Message string `json:"message"`
}

// upcomingFreezes says whether the source's autoscaler adds no node while
// one is upcoming: a release in nodegen's table with the fault, or one it
// does not know (model.AutoscalerReleases).
func upcomingFreezes(src *model.Source) bool {
	rel, err := src.Cluster.AutoscalerRelease()
	return err != nil || !rel.Known || rel.UpcomingNodeBlocks
}

// initBudgets are the autoscaled groups' init budgets, by group.
func initBudgets(src *model.Source) []GroupInitBudget {
	freezes := upcomingFreezes(src)
	tag := src.Cluster.AutoscalerImageTag()
	var out []GroupInitBudget
	budgets := src.InitBudgets()
	for i, g := range src.CloudGroups() {
		if !g.Autoscaled() {
			continue
		}
		b := budgets[i]
		gb := GroupInitBudget{
			Group: g.Name, Provision: model.FormatDuration(b.Provision), Startup: model.FormatDuration(b.Startup),
			Needs: model.FormatDuration(b.Needs), Steps: b.Steps, Total: model.FormatDuration(b.Total()), Freezes: freezes,
		}
		if freezes {
			gb.Message = fmt.Sprintf("%s %s; with the Cluster Autoscaler %s, each scale-up of %s freezes every other scale-up, in every group, for up to %s (until its node is ready or given up)", g.Name, b, tag, g.Name, gb.Total)
		} else {
			gb.Message = fmt.Sprintf("%s %s; the Cluster Autoscaler %s goes on scaling other groups meanwhile", g.Name, b, tag)
		}
		out = append(out, gb)
	}
	return out
}
