package source

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
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

// EnforceMemoryLimit turns the evaluation memory guard on. The guard sets
// the process's soft memory limit and measures the whole heap, so only a
// program that owns its process sets it (the nodegen command does; tests
// and other callers of this package do not).
var EnforceMemoryLimit = false

// MemoryLimitError is an evaluation of a source stopped by the memory
// guard: it needed more than Limit bytes.
type MemoryLimitError struct{ Limit uint64 }

func (e *MemoryLimitError) Error() string {
	return fmt.Sprintf("evaluating the source needs more than %d MiB of memory (NODEGEN_MAX_MEMORY_MIB); look for values built from other values that grow with each step (x2: x1 + x1)", e.Limit>>20)
}

// guardMemory runs evaluate while it watches the heap. When the heap grows
// past the limit it returns a *MemoryLimitError at once, without waiting
// for evaluate: CUE cannot be interrupted, so the evaluation goes on in
// the background until it ends (or the process does; nothing has been
// written by then: gen writes out/ only after loading). It also sets the
// Go runtime's soft memory limit to the same value so that the collector
// works hard before that, and restores the previous one when evaluate
// returns.
func guardMemory(evaluate func() error) error {
	if !EnforceMemoryLimit {
		return evaluate()
	}
	limit := maxMemory()
	prev := debug.SetMemoryLimit(int64(limit))
	done := make(chan error, 1)
	go func() {
		defer debug.SetMemoryLimit(prev)
		done <- evaluate()
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
