package bench_test

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/bench"
	"github.com/nodegen/nodegen/internal/validate"
	"github.com/nodegen/nodegen/internal/verify"
)

// Sizes are the synthetic sources' numbers of node groups.
var sizes = []int{10, 100, 1000}

var (
	tmpOnce sync.Once
	tmpRoot string
	tmpErr  error
	written sync.Map // groups → source dir
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tmpRoot != "" {
		os.RemoveAll(tmpRoot)
	}
	os.Exit(code)
}

// sourceDir returns a synthetic source of n groups, written once per run.
func sourceDir(tb testing.TB, n int) string {
	tb.Helper()
	tmpOnce.Do(func() { tmpRoot, tmpErr = os.MkdirTemp("", "nodegen-bench-") })
	if tmpErr != nil {
		tb.Fatal(tmpErr)
	}
	if d, ok := written.Load(n); ok {
		return d.(string)
	}
	dir := filepath.Join(tmpRoot, fmt.Sprint(n), "nodegroups")
	if err := bench.Write(dir, n); err != nil {
		tb.Fatal(err)
	}
	optIn(tb, dir)
	written.Store(n, dir)
	return dir
}

// optIn opts the source in dir in to the IAM condition on the cluster's
// prefix when the condition naming each MIG and prefix is over the cap.
func optIn(tb testing.TB, dir string) {
	tb.Helper()
	l, err := source.Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	if len(l.Fleet.Clusters[0].AutoscalerCondition()) > model.AutoscalerConditionCap {
		if err := bench.OptInPrefixCondition(dir); err != nil {
			tb.Fatal(err)
		}
	}
}

// load loads and validates a synthetic source (pipeline.Load), failing on
// any finding.
func load(tb testing.TB, n int) *source.Loaded {
	tb.Helper()
	l, err := pipeline.Load(sourceDir(tb, n))
	if err != nil {
		tb.Fatalf("loading %d groups: %v", n, err)
	}
	return l
}

// TestSynthetic checks that synthetic sources are valid, render and
// verify, and have the promised mix. (The 1000-group source is checked by
// every run of hack/bench, which fails on any finding.)
func TestSynthetic(t *testing.T) {
	for _, n := range sizes[:2] {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := load(t, n).Fleet.Clusters[0]
			if len(src.NodeGroups) != n {
				t.Fatalf("%d node groups, want %d", len(src.NodeGroups), n)
			}
			gpu, static := 0, 0
			for _, g := range src.Groups() {
				if g.GPU != nil {
					gpu++
					if g.Shape.Machine == nil {
						t.Errorf("group %s: unknown machine type %s", g.Name, g.MachineType)
					} else if err := g.Shape.Machine.CheckGPU(g.GPU.Type, g.GPU.Count); err != nil {
						t.Errorf("group %s: %v", g.Name, err)
					}
				} else if g.Shape.Machine == nil {
					t.Errorf("group %s: unknown machine type %s", g.Name, g.MachineType)
				}
				if g.Kind == "gce-static" {
					static++
					continue
				}
				if len(g.Zones) != 2 || gce.ZoneRegion(g.Zones[0]) != gce.ZoneRegion(g.Zones[1]) {
					t.Errorf("group %s: zones %v, want two of one region", g.Name, g.Zones)
				}
				if l := len(g.Labels); l < 3 || l > 5 {
					t.Errorf("group %s: %d labels, want 3 to 5", g.Name, l)
				}
				if l := len(g.Taints); l < 1 || l > 2 {
					t.Errorf("group %s: %d taints, want 1 or 2", g.Name, l)
				}
			}
			if static != 1 || gpu != n/2 {
				t.Errorf("%d gce-static and %d GPU groups, want 1 and %d", static, gpu, n/2)
			}
			if _, err := pipeline.Run(sourceDir(t, n), pipeline.Options{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCLI runs gen, gen again, check and vet on the 100-group source as
// the benchmark program does, and checks their results.
func TestCLI(t *testing.T) {
	t.Setenv("NODEGEN_CACHE_DIR", t.TempDir()) // check's shortcut records
	dir := sourceDir(t, 100)
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	run := func(args ...string) int {
		stdout.Reset()
		stderr.Reset()
		return cli.Main(args, nil, &stdout, &stderr)
	}
	if code := run("gen", "--source", dir, "--out", out); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr.String())
	}
	// Every group is a cloud group: a kube-env, a startup script and a
	// Terraform file each, plus the cluster-wide files: six in k8s/
	// (the taint remover, the GPU Operator's values, the node garbage
	// collector, the node CSR approver, the join-token renewer: the
	// token is in Secret Manager, and the autoscaler node's admission
	// policy), two for the autoscaler, four in monitoring/ (the rule
	// file, the PrometheusRule, the ServiceMonitor, the dashboard), six Terraform files
	// (main, variables, outputs, versions, iam, join-secret), two docs
	// (nodegroups, day0), the on-prem providerID script, a build script
	// per image family (a CPU one and a GPU one); and the record of what
	// gen wrote (.nodegen-manifest.json).
	if got, want := bytes.Count(stdout.Bytes(), []byte("added ")), 3*100+21+2+1; got != want {
		t.Errorf("gen added %d files, want %d\n%s", got, want, stdout.String())
	}
	if code := run("gen", "--source", dir, "--out", out); code != 0 || stdout.Len() != 0 {
		t.Fatalf("second gen: exit %d, output %q, stderr %s", code, stdout.String(), stderr.String())
	}
	if code := run("check", "--full", "--source", dir, "--out", out); code != 0 {
		t.Fatalf("check: exit %d: %s", code, stderr.String())
	}
	if code := run("vet", "--source", dir); code != 0 {
		t.Fatalf("vet: exit %d: %s", code, stderr.String())
	}
}

// reportCPU reports the process's CPU time (user and system, every
// goroutine and the garbage collector) per iteration as cpu-ms/op, and
// allocations: on a shared machine wall time says little about parallel
// stages. Call it right before the loop and defer what it returns.
func reportCPU(b *testing.B) func() {
	b.ReportAllocs()
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func forSizes(b *testing.B, f func(b *testing.B, n int)) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) { f(b, n) })
	}
}

// BenchmarkLoad measures source.Load: reading the files, the CUE
// evaluation against the schema, and decoding into the model.
func BenchmarkLoad(b *testing.B) {
	forSizes(b, func(b *testing.B, n int) {
		dir := sourceDir(b, n)
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := source.Load(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRun measures the whole pipeline in memory (pipeline.Run): load,
// validate, render and verify.
func BenchmarkRun(b *testing.B) {
	forSizes(b, func(b *testing.B, n int) {
		dir := sourceDir(b, n)
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := pipeline.Run(dir, pipeline.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkValidate measures the Go rules over a loaded source.
func BenchmarkValidate(b *testing.B) {
	forSizes(b, func(b *testing.B, n int) {
		l := load(b, n)
		defer reportCPU(b)()
		for b.Loop() {
			if list := validate.Source(l.Members[0].Source, l.Members[0]); len(list) > 0 {
				b.Fatal(list)
			}
		}
	})
}

// BenchmarkRender measures rendering every artifact in memory.
func BenchmarkRender(b *testing.B) {
	forSizes(b, func(b *testing.B, n int) {
		src := load(b, n).Fleet.Clusters[0]
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := render.All(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkVerify measures re-reading every artifact as its consumer does.
func BenchmarkVerify(b *testing.B) {
	forSizes(b, func(b *testing.B, n int) {
		src := load(b, n).Fleet.Clusters[0]
		files, err := render.All(src)
		if err != nil {
			b.Fatal(err)
		}
		defer reportCPU(b)()
		for b.Loop() {
			if err := verify.All(src, files); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// upToDate renders the n-group source and writes it to a fresh output
// directory, for the benchmarks of what runs on an up-to-date out/.
func upToDate(b *testing.B, n int) (string, layout.Files) {
	files, err := render.All(load(b, n).Fleet.Clusters[0])
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "out")
	if _, err := outdir.WriteWith(out, files, outdir.Options{}); err != nil {
		b.Fatal(err)
	}
	return out, files
}

// BenchmarkCompare measures comparing the render with an up-to-date
// output directory (what check does after rendering).
func BenchmarkCompare(b *testing.B) {
	forSizes(b, func(b *testing.B, n int) {
		out, files := upToDate(b, n)
		defer reportCPU(b)()
		for b.Loop() {
			r, err := outdir.CompareWith(out, files, outdir.Options{})
			if err != nil || !r.Clean() {
				b.Fatalf("compare: %v, %d changes", err, len(r.Changes))
			}
		}
	})
}

// BenchmarkWriteUnchanged measures gen's write stage when nothing changed.
func BenchmarkWriteUnchanged(b *testing.B) {
	forSizes(b, func(b *testing.B, n int) {
		out, files := upToDate(b, n)
		defer reportCPU(b)()
		for b.Loop() {
			r, err := outdir.WriteWith(out, files, outdir.Options{})
			if err != nil || !r.Clean() {
				b.Fatalf("write: %v, %d changes", err, len(r.Changes))
			}
		}
	})
}

// BenchmarkCheck measures `nodegen check` in process, end to end.
func BenchmarkCheck(b *testing.B) {
	b.Setenv("NODEGEN_CACHE_DIR", b.TempDir()) // check's shortcut records
	forSizes(b, func(b *testing.B, n int) {
		dir := sourceDir(b, n)
		out := filepath.Join(b.TempDir(), "out")
		if code := cli.Main([]string{"gen", "--source", dir, "--out", out}, nil, io.Discard, io.Discard); code != 0 {
			b.Fatalf("gen: exit %d", code)
		}
		defer reportCPU(b)()
		for b.Loop() {
			if code := cli.Main([]string{"check", "--full", "--source", dir, "--out", out}, nil, io.Discard, io.Discard); code != 0 {
				b.Fatalf("check: exit %d", code)
			}
		}
	})
}

// TestParallelRenderDeterministic renders and verifies the same source on
// one CPU and on several, repeatedly: the files must be identical.
func TestParallelRenderDeterministic(t *testing.T) {
	src := load(t, 100).Fleet.Clusters[0]
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	want, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{2, 4, 8} {
		runtime.GOMAXPROCS(procs)
		for range 3 {
			got, err := render.All(src)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("GOMAXPROCS %d: the render differs from the serial one", procs)
			}
			if err := verify.All(src, got); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestVaried checks that the varied source is valid, renders and
// verifies, and that its groups differ in shape.
func TestVaried(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := bench.WriteVaried(dir, 100); err != nil {
		t.Fatal(err)
	}
	optIn(t, dir)
	r, err := pipeline.Run(dir, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := r.Clusters[0].Member.Source
	if len(src.NodeGroups) != 100 {
		t.Fatalf("%d node groups, want 100", len(src.NodeGroups))
	}
	shapes := map[string]bool{}
	for _, g := range src.CloudGroups() {
		gpu := ""
		if g.GPU != nil {
			gpu = g.GPU.Type
		}
		shapes[fmt.Sprint(len(g.Zones), len(g.Labels), len(g.Taints), g.MachineType, gpu, g.Spot, g.LocalSSDCount, g.BootDiskSizeGb)] = true
	}
	if len(shapes) < 90 {
		t.Errorf("%d distinct group shapes among 100 groups, want at least 90", len(shapes))
	}
}
