package bench_test

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
)

// scaleSizes are the sizes of the end-to-end command benchmarks: the
// issue's targets are stated at 1000 and 5000 groups, and linearity up to
// 10,000 (BenchmarkLinear). Select one with -bench 'Command/vet/groups=5000'.
var scaleSizes = []int{1000, 5000, 10000}

// command runs a nodegen command in process on the n-group source; gen
// writes into a fresh output directory each time (as gen into an empty
// out/ does), check compares with an up-to-date one.
func command(b testing.TB, name string, n int) func() {
	dir := sourceDir(b, n)
	tmp := b.TempDir()
	run := func(args ...string) {
		if code := cli.Main(args, nil, io.Discard, io.Discard); code != 0 {
			b.Fatalf("%v: exit %d", args, code)
		}
	}
	switch name {
	case "vet":
		return func() { run("vet", "--source", dir) }
	case "check":
		out := filepath.Join(tmp, "out")
		run("gen", "--source", dir, "--out", out)
		return func() { run("check", "--source", dir, "--out", out) }
	case "gen":
		i := 0
		return func() {
			i++
			run("gen", "--source", dir, "--out", filepath.Join(tmp, fmt.Sprint("out", i)))
		}
	}
	b.Fatalf("unknown command %s", name)
	return nil
}

// BenchmarkCommand measures vet, gen (into an empty output directory)
// and check (of an up-to-date one) in process, end to end, at 1000, 5000
// and 10,000 groups: CPU time per run and allocations.
func BenchmarkCommand(b *testing.B) {
	for _, name := range []string{"vet", "gen", "check"} {
		b.Run(name, func(b *testing.B) {
			for _, n := range scaleSizes {
				b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
					f := command(b, name, n)
					runtime.GC()
					defer reportCPU(b)()
					for b.Loop() {
						f()
					}
				})
			}
		})
	}
}

// BenchmarkLinear guards that no command does work that grows faster than
// the number of node groups: it runs each command once at 1000 and once at
// 10,000 groups and fails when the bytes or the number of allocations
// (which, unlike time, do not depend on the machine's load) grow more than
// 11× for 10× the groups. It reports the CPU-time growth as cpu-growth.
// A pairwise loop over the groups grows 100×.
func BenchmarkLinear(b *testing.B) {
	for _, name := range []string{"vet", "gen", "check"} {
		b.Run(name, func(b *testing.B) {
			small, large := command(b, name, 1000), command(b, name, 10000)
			for b.Loop() {
				s := measure(small)
				l := measure(large)
				if g := float64(l.bytes) / float64(s.bytes); g > 11 {
					b.Errorf("%s allocates %.1f× the bytes at 10,000 groups as at 1000 (%d, %d)", name, g, l.bytes, s.bytes)
				}
				if g := float64(l.allocs) / float64(s.allocs); g > 11 {
					b.Errorf("%s allocates %.1f× the objects at 10,000 groups as at 1000 (%d, %d)", name, g, l.allocs, s.allocs)
				}
				b.ReportMetric(float64(l.cpu)/float64(s.cpu), "cpu-growth")
				b.ReportMetric(float64(l.bytes)/float64(s.bytes), "bytes-growth")
				b.ReportMetric(float64(l.allocs)/float64(s.allocs), "allocs-growth")
			}
		})
	}
}

// TestLinear is BenchmarkLinear's guard at a size every test run can
// afford: vet (load, validate, render and verify) at 100 and at 1000
// groups. Work that grows with the square of the groups allocates 100×
// for 10× the groups; a command whose work is linear allocates less than
// 10×, as the fixed part weighs more at 100. What it counts are
// allocations, not time, so the machine's load does not move it.
func TestLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("vet at 1000 groups: not in -short")
	}
	small, large := command(t, "vet", 100), command(t, "vet", 1000)
	small() // the first run pays for what is built once per process
	s, l := measure(small), measure(large)
	t.Logf("vet at 1000 groups: %.1f× the bytes and %.1f× the allocations of vet at 100 (CPU %.1f×)",
		float64(l.bytes)/float64(s.bytes), float64(l.allocs)/float64(s.allocs), float64(l.cpu)/float64(s.cpu))
	// The objects, not the bytes: a file that grows with the groups is
	// one buffer grown by doubling, whose bytes weigh more at 1000 groups
	// than its one object does (the bytes measured 10.2× here, the
	// objects 9.1×; with each group's startup-taint alert deciding the
	// startup time from every group, the objects 11.9×).
	if g := float64(l.allocs) / float64(s.allocs); g > 11 {
		t.Errorf("vet allocates %.1f× the objects at 1000 groups as at 100 (%d, %d): some work grows faster than the groups", g, l.allocs, s.allocs)
	}
}

type cost struct {
	cpu           int64
	bytes, allocs uint64
}

// measure runs f once and returns the process's CPU time and the memory
// allocated meanwhile.
func measure(f func()) cost {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := cpuTime()
	f()
	c := cost{cpu: int64(cpuTime() - start)}
	runtime.ReadMemStats(&after)
	c.bytes = after.TotalAlloc - before.TotalAlloc
	c.allocs = after.Mallocs - before.Mallocs
	return c
}
