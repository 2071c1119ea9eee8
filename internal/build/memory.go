package build

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// BudgetMemory turns on the memory budget of rendering (see
// budgetMemory). It sets the process's garbage collector, so only a
// program that owns its process sets it (the nodegen command does; tests
// and other callers of this package do not).
var BudgetMemory = false

// Bounds of the budget. headroom is added to what the evaluation needed,
// for the runtime's own growth while rendering (the stacks of the
// rendering goroutines, the collector's metadata) and room for the heap
// beyond the evaluation's; minBudget is the least budget, for small
// sources, whose evaluation needs little.
//
// Each collection marks what is live, at small sizes mostly the fixed
// part of a run (templates, the parsers' tables, the cluster's
// Kubernetes objects), so a tight budget marks it again and again. With
// 4 and 16 MiB, vet ran 7 collections at 5 groups and 13 at 60; with 12
// and 24 MiB it runs 2 and 8, for 10-25% less CPU at 5 groups and up to
// 10% at 60, and about 7 MB more peak RSS at 5 and 60 groups and 8 MB at
// 1000 (where the collections stay about as many). That spends part of
// the margin to 2.0x cue export's peak RSS: the figures are in
// docs/performance.md.
const (
	headroom  = 12 << 20
	minBudget = 24 << 20
)

// budgetMemory is called when the evaluation of the source is released,
// before rendering. The evaluation is the larger part of a run's memory:
// at its end the runtime holds what it needed (the heap at its peak,
// mostly garbage once it is released). Rendering and verifying allocate
// several times as much again, but keep far less alive at once (the
// artifacts and the parsers' trees of one group at a time). So from here
// the collector no longer runs each time the heap grows by GOGC percent
// over what is live, but only when the runtime's memory reaches what the
// evaluation already needed (a soft memory limit, plus headroom, at least
// minBudget):
// the peak memory of the run stays the evaluation's, and rendering, with
// its small live heap, is collected a few times instead of dozens.
//
// GOGC or GOMEMLIMIT in the environment still decide: then nothing is
// changed.
func budgetMemory() {
	if !BudgetMemory {
		return
	}
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		if _, set := os.LookupEnv(env); set {
			return
		}
	}
	debug.SetMemoryLimit(int64(budget(runtimeMemory())))
	debug.SetGCPercent(-1)
}

// budget is the soft memory limit of rendering after an evaluation that
// needed need bytes.
func budget(need uint64) uint64 { return max(need+headroom, minBudget) }

// runtimeMemory is the memory the Go runtime holds from the operating
// system (everything it mapped less what it returned), the measure the
// soft memory limit is compared with.
func runtimeMemory() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
