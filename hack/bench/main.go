//go:build unix

// Command bench compares nodegen with `cue export` of the same source, as
// `make bench` runs it.
//
// It writes synthetic sources of 5, 60, 1000 and 10,000 node groups
// (see internal/testing/bench; -varied: sources whose groups all differ), builds nodegen and cuelang.org/go's own
// cue command at the version in go.mod, checks that both evaluate the
// same thing, then runs, in interleaved rounds (each round starts at
// another command, each command after an untimed sync): `cue export`
// of the source unified with the schema's #Source, `nodegen check` on an unchanged tree (its shortcut, see
// internal/fastcheck: once with every file known by its stamp, as for a
// repeated check, and once with every file's ctime just changed, as for
// the first check after a gen), `nodegen check --full`, `nodegen gen` into an
// empty output directory, `nodegen gen` again with nothing changed, and
// `nodegen vet`. It prints per size the median CPU time (user + system),
// wall time and peak resident memory (the kernel's ru_maxrss of the
// child) of each command with its ratio to cue export, the spread of its
// rounds (the lowest and highest CPU time, and of the CPU ratio to cue
// export in the same round), how each grows
// from 1000 to 10,000 groups, the shipped example's `check`, and each
// performance target with its verdict, as Markdown: at every size, gen,
// check --full and vet at most 4.0× cue export's CPU and every command's
// peak RSS at most 2.0× cue export's; every command's CPU growing at most
// 11× from 1000 to 10,000 groups; check's shortcut at most 0.1× cue
// export at 1000 groups; the shipped example's check under 100 ms.
//
// Usage (from the repository root):
//
//	go run ./hack/bench [-sizes 5,60,1000,10000] [-varied] [-rounds 7] [-rounds1000 5] [-rounds5000 3] [-keep]
//
// It builds on Unix only: it reads its children's resource use with getrusage.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/bench"
	"github.com/nodegen/nodegen/schema"
)

func main() {
	if os.Getenv(starterEnv) != "" {
		os.Exit(starter(os.Args[1:]))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	sizes      []int
	rounds     int
	rounds1000 int
	rounds5000 int
	example    int
	keep       bool
	varied     bool
	nodegen    string
	cue        string
}

func parseFlags() (*options, error) {
	o := &options{}
	sizes := flag.String("sizes", "5,60,1000,10000", "comma-separated numbers of node groups")
	flag.IntVar(&o.rounds, "rounds", 7, "timed rounds for sources under 1000 groups")
	flag.IntVar(&o.rounds1000, "rounds1000", 5, "timed rounds for sources of 1000 to 4999 groups")
	flag.IntVar(&o.rounds5000, "rounds5000", 3, "timed rounds for sources of 5000 groups or more")
	flag.IntVar(&o.example, "example", 11, "runs of `nodegen check` on the shipped example")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory")
	flag.BoolVar(&o.varied, "varied", false, "bench sources whose groups all differ (bench.WriteVaried) instead of the regular synthetic ones")
	flag.StringVar(&o.nodegen, "nodegen", "", "use this nodegen binary instead of building one")
	flag.StringVar(&o.cue, "cue", "", "use this cue binary instead of building one")
	flag.Parse()
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("bad -sizes %q", *sizes)
		}
		o.sizes = append(o.sizes, n)
	}
	return o, nil
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "nodegen-bench-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "bench: keeping %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	fmt.Println("# nodegen vs cue export")
	fmt.Println()
	printMachine()

	nodegen, cue, cueVersion, err := buildTools(o, root, tmp)
	if err != nil {
		return err
	}
	fmt.Printf("cue: %s (cuelang.org/go's cmd/cue at the version in go.mod)\n\n", cueVersion)

	// The schema as nodegen embeds it, and a file that binds the top
	// level to #Source: `cue export` then evaluates the user's files
	// unified with #Source, as nodegen does.
	schemaDir := filepath.Join(tmp, "schema")
	if err := os.MkdirAll(schemaDir, 0o755); err != nil {
		return err
	}
	schemaFile := filepath.Join(schemaDir, "nodegen.cue")
	bindFile := filepath.Join(schemaDir, "bind.cue")
	if err := os.WriteFile(schemaFile, schema.Source, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(bindFile, []byte(bindCUE), 0o644); err != nil {
		return err
	}

	// check's shortcut keeps its records here, not in the user's cache.
	if err := os.Setenv("NODEGEN_CACHE_DIR", filepath.Join(tmp, "cache")); err != nil {
		return err
	}

	busyStart, totalStart := cpuTicks()
	childStart := childrenCPU()
	results := map[int]map[string]*series{}
	for _, n := range o.sizes {
		dir := filepath.Join(tmp, fmt.Sprint(n))
		src := filepath.Join(dir, "nodegroups")
		out := filepath.Join(dir, "out")
		write := bench.Write
		if o.varied {
			write = bench.WriteVaried
		}
		if err := write(src, n); err != nil {
			return err
		}
		l, err := source.Load(src)
		if err != nil {
			return err
		}
		if len(l.Fleet.Clusters[0].AutoscalerCondition()) > model.AutoscalerConditionCap {
			if err := bench.OptInPrefixCondition(src); err != nil {
				return err
			}
		}
		files, err := filepath.Glob(filepath.Join(src, "*.cue"))
		if err != nil {
			return err
		}
		slices.Sort(files)
		ops := []op{
			{name: opCue, args: append([]string{cue, "export", schemaFile, bindFile}, files...)},
			{name: opCheck, args: []string{nodegen, "check", "--source", src, "--out", out}, before: settle(nodegen, src, out)},
			{name: opCheckCold, args: []string{nodegen, "check", "--source", src, "--out", out}, before: touchAll(out)},
			{name: opCheckFull, args: []string{nodegen, "check", "--full", "--source", src, "--out", out}},
			{name: opGenEmpty, args: []string{nodegen, "gen", "--source", src, "--out", out}, before: moveAside(out, filepath.Join(dir, "old")), wantOutput: true},
			{name: opGenSame, args: []string{nodegen, "gen", "--source", src, "--out", out}},
			{name: opVet, args: []string{nodegen, "vet", "--source", src}},
		}
		if err := sameEvaluation(nodegen, ops[0].args, src); err != nil {
			return fmt.Errorf("%d groups: %w", n, err)
		}
		// check (shortcut) and gen (unchanged) need an out/ and a record.
		if _, _, _, err := runOnce(op{name: opGenEmpty, args: ops[4].args, wantOutput: true}); err != nil {
			return fmt.Errorf("%d groups: %w", n, err)
		}
		rounds := o.rounds
		switch {
		case n >= 5000:
			rounds = o.rounds5000
		case n >= 1000:
			rounds = o.rounds1000
		}
		fmt.Fprintf(os.Stderr, "bench: %d groups: %d rounds\n", n, rounds)
		res, err := measure(ops, rounds)
		if err != nil {
			return fmt.Errorf("%d groups: %w", n, err)
		}
		// The timed check must have been the shortcut: ask it.
		if err := shortcutTaken(nodegen, src, out); err != nil {
			return fmt.Errorf("%d groups: %w", n, err)
		}
		results[n] = res
	}
	printTables(o.sizes, results)
	printNoise(busyStart, totalStart, childStart)

	ex, err := measureExample(nodegen, root, o.example)
	if err != nil {
		return err
	}
	if err := shortcutTaken(nodegen, filepath.Join(root, "nodegroups"), filepath.Join(root, "out")); err != nil {
		return fmt.Errorf("the shipped example: %w", err)
	}
	fmt.Printf("Shipped example (`nodegen check` in the repository, the shortcut, %d runs): median %s wall, max %s, %s CPU, peak RSS %s.\n\n",
		len(ex.wall), ms(ex.medianWall()), ms(slices.Max(ex.wall)), ms(ex.medianCPU()), mb(ex.medianRSS()))

	printTargets(o.sizes, results, ex)
	return nil
}

const bindCUE = `package schema

// Binds the top level (the user's files) to #Source, as nodegen does.
#Source
`

const (
	opCue       = "cue export"
	opCheck     = "nodegen check (shortcut)"
	opCheckCold = "nodegen check (shortcut, out/ just written)"
	opCheckFull = "nodegen check --full"
	opGenEmpty  = "nodegen gen (empty out/)"
	opGenSame   = "nodegen gen (unchanged)"
	opVet       = "nodegen vet"
)

var opOrder = []string{opCue, opCheck, opCheckCold, opCheckFull, opGenEmpty, opGenSame, opVet}

// settle prepares the steady state of check's shortcut, as for a check
// that follows an earlier one: it waits until every file of out/ is older
// than outdir.RacyWindow, then runs check once untimed, which records the
// files' stamps; the timed check then reads only what changed (nothing).
func settle(nodegen, src, out string) func() error {
	return func() error {
		time.Sleep(outdir.RacyWindow + 100*time.Millisecond)
		return exec.Command(nodegen, "check", "--source", src, "--out", out).Run()
	}
}

// touchAll gives every file of out/ a new ctime (a chmod to its own
// mode), as a gen that rewrote them would: the timed check cannot know
// any file by its stamp and reads them all, the first check after a gen.
func touchAll(out string) func() error {
	return func() error {
		return filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.Chmod(path, info.Mode().Perm())
		})
	}
}

// shortcutTaken runs `check --verbose` once and fails unless the shortcut
// answered.
func shortcutTaken(nodegen, src, out string) error {
	c := exec.Command(nodegen, "check", "--verbose", "--source", src, "--out", out)
	b, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "is current: nothing changed since a full run") {
		return fmt.Errorf("check did not take its shortcut (%v): %s", err, bytes.TrimSpace(b))
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run bench inside the nodegen module")
	}
	return filepath.Dir(mod), nil
}

func buildTools(o *options, root, tmp string) (nodegen, cue, cueVersion string, err error) {
	bin := filepath.Join(tmp, "bin")
	nodegen, cue = o.nodegen, o.cue
	if nodegen == "" {
		nodegen = filepath.Join(bin, "nodegen")
		fmt.Fprintln(os.Stderr, "bench: building nodegen")
		if err := goCmd(root, nil, "build", "-o", nodegen, "./cmd/nodegen"); err != nil {
			return "", "", "", err
		}
	}
	v, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "cuelang.org/go").Output()
	if err != nil {
		return "", "", "", fmt.Errorf("go list -m cuelang.org/go: %w", err)
	}
	cueVersion = strings.TrimSpace(string(v))
	if cue == "" {
		cue = filepath.Join(bin, "cue")
		// go install pkg@version builds cmd/cue with cue's own go.mod, so
		// nodegen's go.mod needs none of the command's dependencies.
		fmt.Fprintf(os.Stderr, "bench: building cue %s\n", cueVersion)
		if err := goCmd(root, []string{"GOBIN=" + bin}, "install", "cuelang.org/go/cmd/cue@"+cueVersion); err != nil {
			return "", "", "", err
		}
	}
	got, err := exec.Command(cue, "version").Output()
	if err != nil {
		return "", "", "", fmt.Errorf("cue version: %w", err)
	}
	if first, _, _ := strings.Cut(string(got), "\n"); !strings.Contains(first, cueVersion) {
		return "", "", "", fmt.Errorf("cue reports %q, go.mod has %s", first, cueVersion)
	}
	for _, p := range []*string{&nodegen, &cue} {
		if *p, err = filepath.Abs(*p); err != nil {
			return "", "", "", err
		}
	}
	return nodegen, cue, cueVersion, nil
}

func goCmd(dir string, env []string, args ...string) error {
	c := exec.Command("go", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// sameEvaluation checks that cue export and nodegen read the same source:
// cue's JSON, decoded into nodegen's model and resolved, equals what
// `nodegen export` prints.
func sameEvaluation(nodegen string, cueArgs []string, src string) error {
	cueJSON, err := exec.Command(cueArgs[0], cueArgs[1:]...).Output()
	if err != nil {
		return fmt.Errorf("cue export: %w", exitDetail(err))
	}
	var s model.Source
	if err := json.Unmarshal(cueJSON, &s); err != nil {
		return fmt.Errorf("decoding cue export's output: %w", err)
	}
	s.Resolve()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&s); err != nil {
		return err
	}
	got, err := exec.Command(nodegen, "export", "--source", src).Output()
	if err != nil {
		return fmt.Errorf("nodegen export: %w", exitDetail(err))
	}
	if !bytes.Equal(got, want.Bytes()) {
		return errors.New("cue export and nodegen export disagree about the source")
	}
	return nil
}

// moveAside returns a preparation that moves dir (when present) into
// graveyard instead of deleting it: on ext4, creating files shortly after
// deleting as many makes the inode allocator skip every recently freed
// inode, which would time the file system's bookkeeping rather than
// nodegen. Everything goes when the temporary directory is removed.
func moveAside(dir, graveyard string) func() error {
	n := 0
	return func() error {
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err := os.MkdirAll(graveyard, 0o755); err != nil {
			return err
		}
		n++
		return os.Rename(dir, filepath.Join(graveyard, fmt.Sprint(n)))
	}
}

func exitDetail(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}

// op is one timed command.
type op struct {
	name   string
	args   []string
	before func() error // untimed preparation
	// wantOutput: the command must print something (gen into an empty
	// directory lists what it added); otherwise it must print nothing
	// (cue export's output aside).
	wantOutput bool
}

// series holds one op's measurements.
type series struct {
	wall []time.Duration
	cpu  []time.Duration // user + system
	rss  []int64         // bytes
}

func (s *series) medianWall() time.Duration { return median(s.wall) }
func (s *series) medianCPU() time.Duration  { return median(s.cpu) }
func (s *series) medianRSS() int64          { return median(s.rss) }

func median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		var zero T
		return zero
	}
	return s[len(s)/2]
}

// measure runs one untimed warm-up round, then rounds timed rounds; each
// round runs every op once, starting at a different op each round.
func measure(ops []op, rounds int) (map[string]*series, error) {
	res := map[string]*series{}
	for _, o := range ops {
		res[o.name] = &series{}
	}
	for r := -1; r < rounds; r++ {
		for i := range ops {
			// gen (unchanged) and check need a complete out/: in a
			// round that starts after gen (empty out/), the previous
			// round's is there.
			o := ops[(i+max(r, 0))%len(ops)]
			wall, cpu, rss, err := runOnce(o)
			if err != nil {
				return nil, err
			}
			if r >= 0 {
				s := res[o.name]
				s.wall = append(s.wall, wall)
				s.cpu = append(s.cpu, cpu)
				s.rss = append(s.rss, rss)
			}
		}
	}
	return res, nil
}

func runOnce(o op) (wall, cpu time.Duration, rss int64, err error) {
	if o.before != nil {
		if err := o.before(); err != nil {
			return 0, 0, 0, err
		}
	}
	// Write back what the previous command (or before) left dirty, untimed:
	// otherwise the kernel's writeback of the thousands of files a gen
	// creates, or of the inodes touchAll changes, overlaps the next
	// command and costs it 10–20% more CPU, whichever command that is.
	syscall.Sync()
	self, err := os.Executable()
	if err != nil {
		return 0, 0, 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, 0, 0, err
	}
	defer r.Close()
	c := exec.Command(self, o.args...)
	c.Env = append(os.Environ(), starterEnv+"=1")
	c.ExtraFiles = []*os.File{w} // file descriptor 3 of the starter
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if o.name == opCue {
		c.Stdout = io.Discard
	}
	err = c.Start()
	w.Close()
	if err != nil {
		return 0, 0, 0, err
	}
	var u usage
	decodeErr := json.NewDecoder(r).Decode(&u)
	err = c.Wait()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%s: %w: %s", o.name, err, bytes.TrimSpace(stderr.Bytes()))
	}
	if decodeErr != nil {
		return 0, 0, 0, fmt.Errorf("%s: reading its usage: %w", o.name, decodeErr)
	}
	if o.name != opCue && (stdout.Len() > 0) != o.wantOutput {
		return 0, 0, 0, fmt.Errorf("%s: unexpected output %q", o.name, truncate(stdout.String()))
	}
	if stderr.Len() > 0 {
		return 0, 0, 0, fmt.Errorf("%s: unexpected stderr %q", o.name, truncate(stderr.String()))
	}
	return u.Wall, u.CPU, u.MaxRSS, nil
}

// starterEnv makes this program the starter of one timed command.
const starterEnv = "NODEGEN_BENCH_STARTER"

// usage is what the starter measured of its command.
type usage struct {
	Wall, CPU time.Duration // CPU: user + system
	MaxRSS    int64         // bytes
}

// starter runs one command (args) with this process's standard files,
// writes its usage to file descriptor 3 as JSON and exits with its exit
// code. The benchmark starts every timed command through it, a small
// process of its own, rather than directly: Go starts a process by vfork,
// so the new program begins in its parent's address space, and the kernel
// counts that space's peak RSS in the program's ru_maxrss when it execs
// (on Linux). Started from the benchmark, which holds sources and cue's
// output, a command's peak RSS would read at least the benchmark's own;
// started from the starter, at least the starter's, a few megabytes.
func starter(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "bench starter: no command")
		return 125
	}
	c := exec.Command(args[0], args[1:]...)
	c.Env = slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, starterEnv+"=") })
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := c.Run()
	wall := time.Since(start)
	ps := c.ProcessState
	if ps == nil {
		fmt.Fprintln(os.Stderr, "bench starter:", err)
		return 125
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "bench starter: no rusage on this platform")
		return 125
	}
	// Linux reports ru_maxrss in KiB.
	u := usage{Wall: wall, CPU: ps.UserTime() + ps.SystemTime(), MaxRSS: ru.Maxrss * 1024}
	if err := json.NewEncoder(os.NewFile(3, "usage")).Encode(u); err != nil {
		fmt.Fprintln(os.Stderr, "bench starter:", err)
		return 125
	}
	return ps.ExitCode()
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func measureExample(nodegen, root string, runs int) (*series, error) {
	o := op{name: "example check", args: []string{nodegen, "check", "--source", filepath.Join(root, "nodegroups"), "--out", filepath.Join(root, "out")}}
	s := &series{}
	for i := -1; i < runs; i++ {
		wall, cpu, rss, err := runOnce(o)
		if err != nil {
			return nil, fmt.Errorf("the shipped example: %w (is out/ up to date?)", err)
		}
		if i >= 0 {
			s.wall = append(s.wall, wall)
			s.cpu = append(s.cpu, cpu)
			s.rss = append(s.rss, rss)
		}
	}
	return s, nil
}

func printMachine() {
	model := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := "unknown"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kib, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					mem = fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
				}
			}
		}
	}
	kernel := "unknown"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	fmt.Printf("Machine: %d CPUs (nproc), %s, %s memory, Linux %s, %s %s/%s.\n",
		runtime.NumCPU(), model, mem, kernel, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// cpuTicks returns the busy and total CPU time of the whole machine so
// far, in clock ticks (/proc/stat).
func cpuTicks() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i >= 8 { // guest time is counted in user time already
			break
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// childrenCPU is the CPU time of this program's finished children.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// printNoise says how busy the machine was with other work while the
// benchmark ran: on a shared machine that is what makes wall times noisy.
func printNoise(busyStart, totalStart int64, childStart time.Duration) {
	busy, total := cpuTicks()
	if total <= totalStart {
		return
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	all := time.Duration(total-totalStart) * tick
	others := time.Duration(busy-busyStart)*tick - (childrenCPU() - childStart)
	fmt.Printf("While the benchmark ran, other processes used %.0f%% of the machine's CPU time (the timed commands %.0f%%).\n\n",
		100*max(0, float64(others))/float64(all), 100*float64(childrenCPU()-childStart)/float64(all))
}

func printTables(sizes []int, results map[int]map[string]*series) {
	for _, n := range sizes {
		res := results[n]
		c := res[opCue]
		fmt.Printf("## %d node groups (%d timed rounds, medians)\n\n", n, len(c.wall))
		fmt.Println("| command | CPU (user+sys) | CPU min–max | × cue export | × cue export, each round | wall | × cue export | peak RSS | × cue export |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, name := range opOrder {
			s := res[name]
			lo, hi := roundRatios(s, c)
			fmt.Printf("| %s | %s | %s–%s | %.2f | %.2f–%.2f | %s | %.2f | %s | %.2f |\n", name,
				ms(s.medianCPU()), ms(slices.Min(s.cpu)), ms(slices.Max(s.cpu)),
				ratio(s.medianCPU(), c.medianCPU()), lo, hi,
				ms(s.medianWall()), ratio(s.medianWall(), c.medianWall()),
				mb(s.medianRSS()), float64(s.medianRSS())/float64(c.medianRSS()))
		}
		fmt.Println()
	}
	if a, b := growthSizes(sizes); a > 0 {
		fmt.Printf("## Growth from %d to %d node groups (median CPU, %d ÷ %d)\n\n", a, b, b, a)
		fmt.Printf("| command | %d | %d | × |\n", a, b)
		fmt.Println("|---|---:|---:|---:|")
		for _, name := range opOrder {
			x, y := results[a][name].medianCPU(), results[b][name].medianCPU()
			fmt.Printf("| %s | %s | %s | %.1f |\n", name, ms(x), ms(y), ratio(y, x))
		}
		fmt.Println()
	}
}

// roundRatios is the lowest and highest of s's CPU time over cue export's
// in the same round: the spread of the ratio the medians summarise.
func roundRatios(s, cue *series) (lo, hi float64) {
	for i := range min(len(s.cpu), len(cue.cpu)) {
		x := ratio(s.cpu[i], cue.cpu[i])
		if i == 0 {
			lo, hi = x, x
		}
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// growthSizes are the sizes growth is measured between: 1000 and 10,000
// when both ran (the target), otherwise the smallest and largest of at
// least 1000 (0, 0 when there are not two).
func growthSizes(sizes []int) (int, int) {
	if slices.Contains(sizes, 1000) && slices.Contains(sizes, 10000) {
		return 1000, 10000
	}
	var big []int
	for _, n := range sizes {
		if n >= 1000 {
			big = append(big, n)
		}
	}
	if len(big) < 2 {
		return 0, 0
	}
	return slices.Min(big), slices.Max(big)
}

// The targets of the rendering commands (gen, check --full, vet) at every
// measured size: CPU time and peak memory against cue export's.
const (
	cpuLimit = 4.0
	rssLimit = 2.0
)

// printTargets prints the performance targets with their verdicts.
func printTargets(sizes []int, results map[int]map[string]*series, ex *series) {
	fmt.Println("## Targets (medians of CPU time and peak RSS)")
	fmt.Println()
	fmt.Println("| target | measured | verdict |")
	fmt.Println("|---|---|---|")
	row := func(ok bool, target, measured string) {
		verdict := "met"
		if !ok {
			verdict = "**missed**"
		}
		fmt.Printf("| %s | %s | %s |\n", target, measured, verdict)
	}
	missing := func(target, why string) { fmt.Printf("| %s | %s | not measured |\n", target, why) }
	// At every measured size: the rendering commands' CPU, and every
	// command's peak memory, against cue export's.
	for _, n := range sizes {
		r := results[n]
		for _, t := range []struct {
			names []string
			label string
		}{
			{[]string{opCheckFull}, "`check --full`"},
			{[]string{opGenEmpty, opGenSame}, "`gen`"},
			{[]string{opVet}, "`vet`"},
		} {
			var parts []string
			worst := 0.0
			for _, name := range t.names {
				x := ratio(r[name].medianCPU(), r[opCue].medianCPU())
				worst = max(worst, x)
				parts = append(parts, fmt.Sprintf("%.2f× (%s)", x, name))
			}
			row(worst <= cpuLimit, fmt.Sprintf("%s CPU ≤ %.1f× cue export at %d groups", t.label, cpuLimit, n), strings.Join(parts, ", "))
		}
		worst, worstX := "", 0.0
		for _, name := range opOrder[1:] {
			if x := float64(r[name].medianRSS()) / float64(r[opCue].medianRSS()); x > worstX {
				worst, worstX = name, x
			}
		}
		row(worstX <= rssLimit, fmt.Sprintf("peak RSS ≤ %.1f× cue export's, every command, at %d groups", rssLimit, n), fmt.Sprintf("at most %.2f× (%s)", worstX, worst))
	}
	if a, b := growthSizes(sizes); a == 1000 && b == 10000 {
		worst, worstX := "", 0.0
		for _, name := range opOrder[1:] {
			if x := ratio(results[b][name].medianCPU(), results[a][name].medianCPU()); x > worstX {
				worst, worstX = name, x
			}
		}
		row(worstX <= 11, "every command's CPU grows ≤ 11× from 1000 to 10,000 groups", fmt.Sprintf("at most %.1f× (%s)", worstX, worst))
	} else {
		missing("every command's CPU grows ≤ 11× from 1000 to 10,000 groups", "-sizes without 1000 and 10000")
	}
	if r, ok := results[1000]; ok {
		for _, t := range []struct{ name, label string }{
			{opCheck, "files known by stamp, as for a repeated check"},
			{opCheckCold, "out/ just written: every file read, as for the first check after a gen"},
		} {
			x := ratio(r[t.name].medianCPU(), r[opCue].medianCPU())
			row(x <= 0.1, "`check` on an unchanged tree (shortcut) ≤ 0.1× cue export at 1000 groups ("+t.label+")",
				fmt.Sprintf("%.3f× (%s CPU, %s wall)", x, ms(r[t.name].medianCPU()), ms(r[t.name].medianWall())))
		}
	} else {
		missing("`check` on an unchanged tree (shortcut) ≤ 0.1× cue export at 1000 groups", "-sizes without 1000")
	}
	row(ex.medianWall() < 100*time.Millisecond, "the shipped example's `check` under 100 ms wall",
		fmt.Sprintf("%s median, %s max", ms(ex.medianWall()), ms(slices.Max(ex.wall))))
	fmt.Println()
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }
