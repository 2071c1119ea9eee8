package cli

import (
	"fmt"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/fastcheck"
	"github.com/nodegen/nodegen/internal/outdir"
)

// check's shortcut (package fastcheck): its flags, the inputs it is
// recorded for, and the record a full gen or check leaves.

// shortcutFlags are check's flags for its shortcut (internal/fastcheck).
func shortcutFlags(f *ioFlags) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "full", Usage: "always render the source and compare, even when nothing changed since the last full run, and keep no record of it (CI)", Destination: &f.Full},
		&cli.BoolFlag{Name: "verbose", Usage: "say on stderr whether the shortcut answered, and if not why", Destination: &f.Verbose},
	}
}

// notInputs are the flags that cannot change what a render is or where it
// goes; every other flag of the command is part of fastcheck's inputs
// (with its value, set or default), so a flag added later counts unless
// it is listed here.
var notInputs = []string{"source", "out", "lock-timeout", "force", "full", "verbose", "by-hand"}

// fastInputs are fastcheck's inputs for the command of c.
func fastInputs(c *cli.Context, f *ioFlags) fastcheck.Inputs {
	// The shortcut does not wait for another run's lock on out/: the full
	// path it then falls back to waits (and says so).
	in := fastcheck.Inputs{Source: f.Source, Out: f.Out, Lock: outdir.Options{LockTimeout: time.Nanosecond}}
	for _, fl := range c.Command.Flags {
		name := fl.Names()[0]
		if !slices.Contains(notInputs, name) {
			in.Flags = append(in.Flags, fmt.Sprintf("%s=%v", name, c.Value(name)))
		}
	}
	return in
}

// shortcut runs check: from fastcheck's record when it proves out/
// current, otherwise full (which records its success for the next run).
// --full runs full without looking at or writing a record.
func shortcut(s *streams, f *ioFlags, full cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := noArgs(c); err != nil {
			return err
		}
		if f.Full || f.ByHand {
			// Neither the record nor the shortcut: what CI and a
			// check of a scratch copy want, and --by-hand, which
			// needs the source.
			why := "--full"
			if !f.Full {
				why = "--by-hand"
			}
			f.verbose(s, "full check (%s)", why)
			return full(c)
		}
		in := fastInputs(c, f)
		ok, note := fastcheck.Fresh(in)
		if ok {
			f.verbose(s, "%s is current: nothing changed since a full run of this nodegen (shortcut: %s; --full renders and compares)", f.Out, note)
			return nil
		}
		f.verbose(s, "full check: %s", note)
		return record(s, c, f, in, full)
	}
}

// recordAfter runs gen and records its success for check's shortcut.
func recordAfter(s *streams, f *ioFlags, run cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		return record(s, c, f, fastInputs(c, f), run)
	}
}

// record runs a full gen or check and, when it succeeds, records that
// out/'s record is the render of the source it evaluated. A record that
// cannot be written (no cache directory) only costs the next check its
// shortcut.
func record(s *streams, c *cli.Context, f *ioFlags, in fastcheck.Inputs, run cli.ActionFunc) error {
	if err := run(c); err != nil {
		return err
	}
	if err := fastcheck.Record(in, f.SourceDigest, f.ManifestDigest); err != nil {
		f.verbose(s, "no record for the shortcut: %v", err)
	}
	return nil
}

func (f *ioFlags) verbose(s *streams, format string, args ...any) {
	if f.Verbose {
		fmt.Fprintf(s.err, "nodegen: "+format+"\n", args...)
	}
}
