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

// EnforceMemoryLimit turns the evaluation memory guard on. It makes the
// process exit, so only a program that owns its process sets it (the
// nodegen command does; tests and other callers of this package do not).
var EnforceMemoryLimit = false

// guardMemory watches the heap while a source is evaluated and, when it
// grows past the limit, reports it and exits with status 1 (nothing has
// been written by then: gen writes out/ only after loading). It also sets
// the Go runtime's soft memory limit to the same value so the collector
// works hard before that. The returned function stops the watch and
// restores the previous soft limit.
func guardMemory() (stop func()) {
	if !EnforceMemoryLimit {
		return func() {}
	}
	limit := maxMemory()
	prev := debug.SetMemoryLimit(int64(limit))
	done := make(chan struct{})
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > limit {
				fmt.Fprintf(os.Stderr, "nodegen: evaluating the source needs more than %d MiB of memory (NODEGEN_MAX_MEMORY_MIB); look for values built from other values that grow with each step (x2: x1 + x1)\n", limit>>20)
				os.Exit(1)
			}
		}
	}()
	return func() {
		close(done)
		debug.SetMemoryLimit(prev)
	}
}
