package pipeline

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The budget replaces the proportional collector by a soft memory limit
// of what the evaluation needed, only in a process that asked for it and
// only when the environment does not set the collector.
func TestBudgetMemory(t *testing.T) {
	limit0 := debug.SetMemoryLimit(-1)
	gc0 := debug.SetGCPercent(100)
	t.Cleanup(func() {
		debug.SetMemoryLimit(limit0)
		debug.SetGCPercent(gc0)
	})
	unset := func(t *testing.T) {
		for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
			t.Setenv(env, "") // restored after the test
			os.Unsetenv(env)
		}
	}
	reset := func() {
		debug.SetMemoryLimit(limit0)
		debug.SetGCPercent(100)
	}
	state := func() (limit int64, gc int) {
		gc = debug.SetGCPercent(100)
		debug.SetGCPercent(gc)
		return debug.SetMemoryLimit(-1), gc
	}

	t.Run("set", func(t *testing.T) {
		unset(t)
		reset()
		need := runtimeMemory()
		OwnProcess.budgetMemory()
		limit, gc := state()
		if gc != -1 {
			t.Errorf("GOGC %d after the budget, want off (-1)", gc)
		}
		if limit < int64(minBudget) || uint64(limit) < need+headroom || limit == limit0 {
			t.Errorf("memory limit %d, want at least %d (the runtime's memory before, %d, plus %d) and %d", limit, need+headroom, need, headroom, minBudget)
		}
	})
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env+" set", func(t *testing.T) {
			unset(t)
			reset()
			t.Setenv(env, "off")
			OwnProcess.budgetMemory()
			if limit, gc := state(); limit != limit0 || gc != 100 {
				t.Errorf("with %s in the environment: limit %d, GOGC %d; want both unchanged (%d, 100)", env, limit, gc, limit0)
			}
		})
	}
	t.Run("not asked", func(t *testing.T) {
		unset(t)
		reset()
		SharedProcess.budgetMemory()
		if limit, gc := state(); limit != limit0 || gc != 100 {
			t.Errorf("SharedProcess: limit %d, GOGC %d; want both unchanged (%d, 100)", limit, gc, limit0)
		}
	})
}

func TestBudgetBounds(t *testing.T) {
	for _, c := range []struct{ need, want uint64 }{
		{0, minBudget},
		{minBudget - headroom, minBudget},
		{100 << 20, 100<<20 + headroom},
	} {
		if got := budget(c.need); got != c.want {
			t.Errorf("budget(%d) = %d, want %d", c.need, got, c.want)
		}
	}
}

// TestMemoryPolicyOfRun: a run changes the process's collector and memory
// limit only under OwnProcess (the nodegen command's policy); the zero
// Options, which tests and other callers use, leave them as they were.
func TestMemoryPolicyOfRun(t *testing.T) {
	limit0 := debug.SetMemoryLimit(-1)
	gc0 := debug.SetGCPercent(100)
	t.Cleanup(func() {
		debug.SetMemoryLimit(limit0)
		debug.SetGCPercent(gc0)
	})
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(env, "") // restored after the test
		os.Unsetenv(env)
	}
	state := func() (limit int64, gc int) {
		gc = debug.SetGCPercent(100)
		debug.SetGCPercent(gc)
		return debug.SetMemoryLimit(-1), gc
	}
	for _, c := range []struct {
		policy  MemoryPolicy
		changed bool
	}{{SharedProcess, false}, {OwnProcess, true}} {
		debug.SetMemoryLimit(limit0)
		debug.SetGCPercent(100)
		if _, err := Run(testsrc.Dir(), Options{Memory: c.policy}); err != nil {
			t.Fatal(err)
		}
		limit, gc := state()
		if changed := limit != limit0 || gc != 100; changed != c.changed {
			t.Errorf("policy %d: memory limit %d (before %d), GOGC %d after a run; want changed %v", c.policy, limit, limit0, gc, c.changed)
		}
	}
}
