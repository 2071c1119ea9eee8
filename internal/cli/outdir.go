package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/urfave/cli/v2"
)

// The output directory of the commands that write or compare it (gen,
// check): its flags, the options of package outdir, and the checks made
// before it is read.

// outFlag is --out without a short form: -o is the output format of the
// commands that print reports (explain, drift), and means only that.
func outFlag(f *ioFlags) cli.Flag {
	return &cli.StringFlag{Name: "out", Value: "out", Usage: "output `DIR`", Destination: &f.Out}
}

// outPath is p, relative to the output directory, as the user names it.
func outPath(f *ioFlags, p string) string { return filepath.ToSlash(filepath.Join(f.Out, p)) }

// outFlags are the flags of the commands that read the output directory;
// gen adds --force.
func outFlags(force bool) func(f *ioFlags) []cli.Flag {
	return func(f *ioFlags) []cli.Flag {
		flags := []cli.Flag{outFlag(f), &cli.DurationFlag{
			Name: "lock-timeout", Value: outdir.DefaultLockTimeout, EnvVars: []string{outdir.LockTimeoutEnv},
			Usage: "give up after waiting this `DURATION` for another nodegen run on the output directory", Destination: &f.LockTimeout,
		}}
		if force {
			flags = append(flags, &cli.BoolFlag{Name: "force", Usage: "overwrite (or delete) generated files edited by hand", Destination: &f.Force})
		}
		return flags
	}
}

// outOptions are the options of outdir for f and the clusters of r;
// waiting is said on s.err.
func outOptions(s *streams, f *ioFlags, r *pipeline.Result) outdir.Options {
	if f.LockTimeout <= 0 {
		f.LockTimeout = time.Nanosecond // 0 means "do not wait"
	}
	return outdir.Options{Force: f.Force, LockTimeout: f.LockTimeout, Scope: r.Scope, Waiting: func(msg string) { fmt.Fprintf(s.err, "nodegen: %s\n", msg) }}
}

// outDirUsable turns an output directory gen and check cannot work on
// into a usage error with a hint, once the source is read and before the
// output directory is: a symbolic link (gen
// replaces the directory in one rename, which would replace the link, not
// the directory it names, and check would compare the link's own empty
// tree), something other than a directory, and, for check (mustExist),
// none at all: a mistyped --out, or gen never run, rather than every file
// reported missing.
func outDirUsable(out string, mustExist bool) error {
	fi, err := os.Lstat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !mustExist {
			return nil
		}
		return usageError{fmt.Errorf("no output directory %s (%s): run `nodegen gen --out %s` first, or name the existing one with --out DIR", filepath.Clean(out), cwdForHint(), out)}
	case err != nil:
		return fmt.Errorf("reading the output directory: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := filepath.EvalSymlinks(out)
		if target == "" {
			target, _ = os.Readlink(out)
		}
		return usageError{fmt.Errorf("--out %s is a symbolic link (to %s): nodegen replaces the output directory in one rename, which would replace the link and not the directory it names; pass --out %s", out, target, target)}
	case !fi.IsDir():
		return usageError{fmt.Errorf("--out %s is not a directory", out)}
	}
	return nil
}
