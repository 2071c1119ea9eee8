package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/build"
	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// clusterFlag is --cluster: the clusters of a fleet source a command works
// on (repeatable, or a comma list); all of them when not given.
func clusterFlag(f *ioFlags) cli.Flag {
	return &cli.StringSliceFlag{Name: "cluster", Usage: "work on the cluster `NAME` only (repeatable or a comma list; default: every cluster of the source)", Destination: &f.Clusters}
}

// runPipeline runs the pipeline (build.Run) on the source of f
// for the clusters --cluster selects. Findings are printed to s.err and
// reported as errFindings; a --cluster that names no cluster is a usage
// error.
func runPipeline(s *streams, f *ioFlags) (*build.Result, error) {
	if err := sourceDirExists(f.Source); err != nil {
		return nil, err
	}
	r, err := build.Run(f.Source, build.Options{Clusters: f.Clusters.Value()})
	var list diag.List
	var ce *build.ClusterError
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
// --cluster names.
func oneCluster(s *streams, f *ioFlags, cmd string) (*model.Source, layout.Files, error) {
	r, err := runPipeline(s, f)
	if err != nil {
		return nil, nil, err
	}
	if len(r.Clusters) != 1 {
		var names []string
		for _, c := range r.Clusters {
			names = append(names, c.Member.Source.Cluster.Name)
		}
		return nil, nil, usageError{fmt.Errorf("%s works on one cluster, and the source is a fleet: name one of %s with --cluster", cmd, strings.Join(names, ", "))}
	}
	return r.Clusters[0].Member.Source, r.Clusters[0].Files, nil
}

// fleetExport is what export prints for a fleet source.
type fleetExport struct {
	Clusters map[string]*model.Source `json:"clusters"`
	Mesh     *model.Mesh              `json:"mesh,omitempty"`
}
