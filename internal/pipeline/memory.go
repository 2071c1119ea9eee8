package pipeline

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
)

// MemoryPolicy is how a run uses the memory of its process.
type MemoryPolicy int

const (
	// SharedProcess leaves the process's garbage collector and memory
	// limit as they are: for tests and every caller that shares its
	// process with other work.
	SharedProcess MemoryPolicy = iota
	// OwnProcess is the policy of a program that owns its process and
	// makes one run (the nodegen command). While the source is evaluated,
	// most of the heap is the CUE evaluation, live until the source is
	// decoded: the heap may grow to 2.5× the live data between
	// collections (Go's default: 2×), which saves about a tenth of the
	// evaluation's CPU time for about a sixth more of its memory, and the
	// evaluation is stopped with a message past NODEGEN_MAX_MEMORY_MIB
	// (guardMemory). Rendering then runs within the memory the evaluation
	// needed, collecting garbage only when the process reaches it
	// (budgetMemory). GOGC and GOMEMLIMIT in the environment still decide
	// the collector (docs/performance.md).
	OwnProcess
)

// DefaultMaxMemoryMiB bounds the memory the evaluation of a source may use
// (NODEGEN_MAX_MEMORY_MIB overrides it). CUE has no memory limit of its
// own, and a few lines can ask for gigabytes (a value built from itself
// doubled, x1: x0+x0, x2: x1+x1, …): without a bound the process dies with
// "fatal error: out of memory" and a goroutine dump.
const DefaultMaxMemoryMiB = 2048

// maxMemory returns the evaluation memory limit in bytes.
func maxMemory() uint64 {
	if v, err := strconv.ParseUint(os.Getenv("NODEGEN_MAX_MEMORY_MIB"), 10, 32); err == nil && v > 0 {
		return v << 20
	}
	return DefaultMaxMemoryMiB << 20
}

// MemoryLimitError is an evaluation of a source stopped by the memory
// guard: it needed more than Limit bytes.
type MemoryLimitError struct{ Limit uint64 }

func (e *MemoryLimitError) Error() string {
	return fmt.Sprintf("evaluating the source needs more than %d MiB of memory (NODEGEN_MAX_MEMORY_MIB); look for values built from other values that grow with each step (x2: x1 + x1)", e.Limit>>20)
}

// evaluationGC sets the collector of the evaluation: GOGC 150, unless
// GOGC is in the environment.
func (p MemoryPolicy) evaluationGC() {
	if p != OwnProcess {
		return
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(150)
	}
}

// guardMemory runs load while it watches the heap. When the heap grows
// past the limit it returns a *MemoryLimitError at once, without waiting
// for load: CUE cannot be interrupted, so the evaluation goes on in the
// background until it ends (or the process does; nothing has been
// written by then: gen writes out/ only after loading). It also sets the
// Go runtime's soft memory limit to the same value so that the collector
// works hard before that, and restores the previous one when load
// returns. The guard sets the process's soft memory limit and measures
// the whole heap: only OwnProcess has it.
func (p MemoryPolicy) guardMemory(load func() error) error {
	if p != OwnProcess {
		return load()
	}
	limit := maxMemory()
	prev := debug.SetMemoryLimit(int64(limit))
	done := make(chan error, 1)
	go func() {
		defer debug.SetMemoryLimit(prev)
		done <- load()
	}()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > limit {
			return &MemoryLimitError{Limit: limit}
		}
	}
}

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
// Only OwnProcess has the budget. GOGC or GOMEMLIMIT in the environment
// still decide: then nothing is changed.
func (p MemoryPolicy) budgetMemory() {
	if p != OwnProcess {
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
