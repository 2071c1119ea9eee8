package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/secrets"
)

// clusterFlag is --cluster: the clusters of a fleet source a command works
// on (repeatable, or a comma list); all of them when not given.
func clusterFlag(f *ioFlags) cli.Flag {
	return &cli.StringSliceFlag{Name: "cluster", Usage: "work on the cluster `NAME` only (repeatable or a comma list; default: every cluster of the source)", Destination: &f.Clusters}
}

// runPipeline runs the pipeline (pipeline.Run) on the source of f
// for the clusters --cluster selects. Findings are printed to s.err and
// reported as errFindings; a --cluster that names no cluster is a usage
// error.
func runPipeline(s *streams, f *ioFlags) (*pipeline.Result, error) {
	if err := sourceDirExists(f.Source); err != nil {
		return nil, err
	}
	r, err := pipeline.Run(f.Source, pipeline.Options{Clusters: f.Clusters.Value(), Memory: s.memory})
	var list diag.List
	var ce *pipeline.ClusterError
	switch {
	case errors.As(err, &list):
		return nil, printFindings(s, list)
	case errors.As(err, &ce):
		return nil, usageError{ce}
	}
	return r, err
}

// oneCluster is the single cluster a command that reads one cluster's
// world (explain, drift) works on: the source's, or in a fleet the one
// --cluster names, rendered.
func oneCluster(s *streams, f *ioFlags, cmd string) (*pipeline.Cluster, error) {
	r, err := runPipeline(s, f)
	if err != nil {
		return nil, err
	}
	if len(r.Clusters) != 1 {
		var names []string
		for _, c := range r.Clusters {
			names = append(names, c.Member.Source.Cluster.Name)
		}
		return nil, usageError{fmt.Errorf("%s works on one cluster, and the source is a fleet: name one of %s with --cluster", cmd, strings.Join(names, ", "))}
	}
	return &r.Clusters[0], nil
}

// renderCommand builds a command that takes no arguments, loads,
// validates and renders the source, and hands the result to run. more
// adds flags (nil: --source only).
func renderCommand(s *streams, name, usage, doc string, more func(f *ioFlags) []cli.Flag, run func(f *ioFlags, r *pipeline.Result) error) *cli.Command {
	f := &ioFlags{}
	flags := []cli.Flag{sourceFlag(f), clusterFlag(f)}
	if more != nil {
		flags = append(flags, more(f)...)
	}
	return &cli.Command{
		Name:         name,
		Usage:        usage,
		Description:  doc,
		Flags:        flags,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			r, err := runPipeline(s, f)
			if err != nil {
				return err
			}
			f.SourceDigest = r.Source.Digest
			if warnCommands[name] {
				cwd, _ := os.Getwd()
				secrets.RedactList(r.Warnings()).Print(s.err, cwd)
			}
			return run(f, r)
		},
	}
}

func sourceFlag(f *ioFlags) cli.Flag {
	return &cli.StringFlag{Name: "source", Aliases: []string{"s"}, Value: "nodegroups", Usage: "source `DIR` of .cue files", Destination: &f.Source}
}

// sourceDirExists turns a missing source directory, most often nodegen run
// from the wrong directory, into a usage error with a hint.
func sourceDirExists(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageError{fmt.Errorf("no %s/ here (%s): run nodegen from the directory that holds the source, or pass --source DIR", filepath.Clean(dir), cwdForHint())}
	case err != nil:
		return fmt.Errorf("reading source: %w", err)
	case !fi.IsDir():
		return usageError{fmt.Errorf("--source %s is not a directory", dir)}
	}
	return nil
}
