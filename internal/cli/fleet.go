package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/secrets"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/validate"
	"github.com/nodegen/nodegen/internal/verify"
)

// clusterFlag is --cluster: the clusters of a fleet source a command works
// on (repeatable, or a comma list); all of them when not given.
func clusterFlag(f *ioFlags) cli.Flag {
	return &cli.StringSliceFlag{Name: "cluster", Usage: "work on the cluster `NAME` only (repeatable or a comma list; default: every cluster of the source)", Destination: &f.Clusters}
}

// rendered is a valid source rendered: the clusters --cluster selects,
// and what a command writes or compares.
type rendered struct {
	l *source.Loaded
	// clusters are the selected clusters, in the fleet's order.
	clusters []renderedCluster
	// selected is set when --cluster restricted the clusters.
	selected bool
	// files is every file to write or compare, paths relative to out/:
	// the selected clusters' trees and, without --cluster, the fleet-wide
	// files.
	files layout.Files
	// scope limits gen and check to the selected clusters' trees (nil:
	// the whole output directory).
	scope func(string) bool
}

// renderedCluster is one cluster, rendered.
type renderedCluster struct {
	m *source.Loaded
	// dir is its tree in out/ (layout.ClusterDir).
	dir string
	// files are its artifacts, paths relative to dir.
	files layout.Files
}

// render loads and validates the source of f, renders each selected
// cluster with the one-cluster pipeline, checks and verifies its
// artifacts, and adds the fleet-wide files. Findings are printed to s.err
// and reported as errFindings; a --cluster that names no cluster is a
// usage error.
func loadAndRenderFleet(s *streams, f *ioFlags) (*rendered, error) {
	l, err := loadValid(s, f.Source)
	if err != nil {
		return nil, err
	}
	members, err := selectClusters(l, f.Clusters.Value())
	if err != nil {
		return nil, err
	}
	r := &rendered{l: l, selected: len(f.Clusters.Value()) > 0, files: layout.Files{}}
	// The clusters render and verify independently, in parallel (the
	// model alone); the findings, which read positions in the source's
	// CUE values, are made afterwards, one cluster after the other.
	type result struct {
		files     layout.Files
		err       error
		verifyErr error
	}
	results := make([]result, len(members))
	par.Do(len(members), func(i int) {
		m, res := members[i], &results[i]
		if res.files, res.err = render.Cluster(l.Fleet, m.Source); res.err == nil {
			res.verifyErr = verify.All(m.Source, res.files)
		}
	})
	var list diag.List
	for i, m := range members {
		res := results[i]
		if res.err != nil {
			return nil, fmt.Errorf("render%s: %w", clusterNote(l, m), res.err)
		}
		// What only the artifacts tell comes first; a verification
		// failure counts for artifacts that passed it.
		if al := validate.Artifacts(m.Source, res.files, m); len(al) > 0 {
			list = append(list, al...)
		} else if sl := secrets.Artifacts(res.files); len(sl) > 0 {
			list = append(list, sl...)
		} else if res.verifyErr != nil {
			vf := validate.VerificationFailures(res.verifyErr, m)
			if len(vf) == 0 {
				return nil, fmt.Errorf("internal error: a rendered artifact%s failed verification: %w", clusterNote(l, m), res.verifyErr)
			}
			list = append(list, vf...)
		}
		rc := renderedCluster{m: m, dir: layout.ClusterDir(l.Fleet.Single, m.Source.Cluster.Name), files: res.files}
		r.clusters = append(r.clusters, rc)
		for p, b := range rc.files.Prefixed(rc.dir) {
			r.files[p] = b
		}
	}
	if len(list) > 0 {
		return nil, printFindings(s, list)
	}
	if !r.selected {
		wide, err := render.FleetWide(l.Fleet)
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		if list := secrets.Artifacts(wide); len(list) > 0 {
			return nil, printFindings(s, list)
		}
		for p, b := range wide {
			r.files[p] = b
		}
	} else if !l.Fleet.Single {
		dirs := make([]string, len(r.clusters))
		for i, c := range r.clusters {
			dirs[i] = c.dir
		}
		r.scope = func(p string) bool {
			return slices.ContainsFunc(dirs, func(d string) bool { return layout.InCluster(d, p) })
		}
	}
	return r, nil
}

// clusterNote names a fleet's cluster in an error message.
func clusterNote(l *source.Loaded, m *source.Loaded) string {
	if l.Fleet.Single {
		return ""
	}
	return " of cluster " + m.Source.Cluster.Name
}

// selectClusters returns the members --cluster names (every member when
// names is empty), in the fleet's order. A name that is not a cluster of
// the source is a usage error.
func selectClusters(l *source.Loaded, names []string) ([]*source.Loaded, error) {
	if len(names) == 0 {
		return l.Members, nil
	}
	var all []string
	for _, m := range l.Members {
		all = append(all, m.Source.Cluster.Name)
	}
	for _, n := range names {
		if slices.Contains(all, n) {
			continue
		}
		switch {
		case n == "":
			return nil, usageError{fmt.Errorf("--cluster needs a cluster name")}
		case l.Fleet.Single:
			return nil, usageError{fmt.Errorf("--cluster %s: the source %s is one cluster, named %s", n, l.Dir, all[0])}
		}
		hint := "its clusters are " + strings.Join(all, ", ")
		if s := diag.Suggest(n, all); s != "" {
			hint = fmt.Sprintf("did you mean %s?", s)
		}
		return nil, usageError{fmt.Errorf("--cluster %s: no such cluster in %s; %s", n, l.Dir, hint)}
	}
	var out []*source.Loaded
	for _, m := range l.Members {
		if slices.Contains(names, m.Source.Cluster.Name) {
			out = append(out, m)
		}
	}
	return out, nil
}

// oneCluster is the single cluster a command that reads one cluster's
// world (explain, drift) works on: the source's, or in a fleet the one
// --cluster names.
func oneCluster(s *streams, f *ioFlags, cmd string) (*model.Source, layout.Files, error) {
	r, err := loadAndRenderFleet(s, f)
	if err != nil {
		return nil, nil, err
	}
	if len(r.clusters) != 1 {
		var names []string
		for _, c := range r.clusters {
			names = append(names, c.m.Source.Cluster.Name)
		}
		return nil, nil, usageError{fmt.Errorf("%s works on one cluster, and the source is a fleet: name one of %s with --cluster", cmd, strings.Join(names, ", "))}
	}
	return r.clusters[0].m.Source, r.clusters[0].files, nil
}

// fleetExport is what export prints for a fleet source.
type fleetExport struct {
	Clusters map[string]*model.Source `json:"clusters"`
	Mesh     *model.Mesh              `json:"mesh,omitempty"`
}
