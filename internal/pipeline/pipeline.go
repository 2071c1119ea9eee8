// Package pipeline is nodegen's pipeline as one call: Run loads a source
// (one cluster or a fleet), validates it, renders every artifact of the
// selected clusters, has each artifact re-read by its consumer's parser
// (package verify) and turns what only the artifacts tell into findings.
// The commands, the golden tests, the benchmarks and the fuzz targets all
// call it.
package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/par"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/secrets"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/validate"
	"github.com/nodegen/nodegen/internal/verify"
)

// Options select what Run renders.
type Options struct {
	// Clusters are the names of the clusters of a fleet to render, in any
	// order; empty: every cluster and the fleet-wide files.
	Clusters []string
	// Memory is how the run uses the memory of its process (the zero
	// value: SharedProcess).
	Memory MemoryPolicy
}

// Result is a valid source rendered.
type Result struct {
	// Source is the source, loaded and valid.
	Source *source.Loaded
	// Clusters are the selected clusters, in the fleet's order.
	Clusters []Cluster
	// Selected is set when Options.Clusters restricted the clusters.
	Selected bool
	// Files is every file to write or compare, paths relative to the
	// output directory: the selected clusters' trees and, without a
	// selection, the fleet-wide files.
	Files layout.Files
	// Scope limits a write or a comparison of the output directory to the
	// selected clusters' trees (nil: the whole directory).
	Scope func(string) bool

	warnings diag.List
}

// Cluster is one cluster of a Result.
type Cluster struct {
	// Member is the cluster's part of the source (the source itself for a
	// one-cluster source).
	Member *source.Member
	// Dir is its tree in the output directory (layout.ClusterDir).
	Dir string
	// Files are its artifacts, paths relative to Dir.
	Files layout.Files
	// Revisions are its cloud groups' revisions, by group name: what
	// their kube-env and startup scripts declare.
	Revisions map[string]string
}

// Warnings are the warnings of the rendered clusters' sources
// (validate.Warnings): what is valid but likely not what was meant.
func (r *Result) Warnings() diag.List { return r.warnings }

// ClusterError is an Options.Clusters entry that names no cluster of the
// source: a usage mistake, not a finding about the source.
type ClusterError struct{ msg string }

func (e *ClusterError) Error() string { return e.msg }

// Load loads the source in dir and validates it completely
// (validate.Loaded). Problems with the source come back as one sorted
// diag.List error; only I/O errors are other errors.
func Load(dir string) (*source.Loaded, error) { return load(dir, SharedProcess) }

// load is Load under a memory policy: the evaluation's collector and its
// memory guard.
func load(dir string, mem MemoryPolicy) (*source.Loaded, error) {
	mem.evaluationGC()
	var l *source.Loaded
	err := mem.guardMemory(func() error {
		var err error
		l, err = source.Open(dir)
		return err
	})
	if err != nil {
		return nil, err
	}
	if list := validate.Loaded(l); len(list) > 0 {
		return nil, list
	}
	return l, nil
}

// Run loads and validates the source in dir, renders each selected
// cluster, verifies its artifacts and adds the fleet-wide files. Problems
// with the source, found by validation or only in its artifacts, come back
// as one diag.List error; an Options.Clusters entry that names no cluster
// as a *ClusterError.
func Run(dir string, opts Options) (*Result, error) {
	l, err := load(dir, opts.Memory)
	if err != nil {
		return nil, err
	}
	return Render(l, opts)
}

// Render renders and verifies the selected clusters of a valid source l,
// as Run does after loading. It releases l's evaluation
// (source.Loaded.Release) once the warnings are made: the artifacts'
// findings need only the positions of the node groups' names. Under
// OwnProcess, rendering then runs within the memory the evaluation
// needed.
func Render(l *source.Loaded, opts Options) (*Result, error) {
	members, err := selectClusters(l, opts.Clusters)
	if err != nil {
		return nil, err
	}
	r := &Result{Source: l, Selected: len(opts.Clusters) > 0, Files: layout.Files{}}
	for _, m := range members {
		r.warnings = append(r.warnings, validate.Warnings(m.Source, m)...)
	}
	r.warnings = append(r.warnings, validate.MeshWarnings(l)...)
	l.Release()
	opts.Memory.budgetMemory()
	// The clusters render and verify independently, in parallel (the
	// model alone); the findings, which read positions in the source's
	// CUE values, are made afterwards, one cluster after the other.
	type result struct {
		render.Output
		err       error
		verifyErr error
	}
	results := make([]result, len(members))
	par.Do(len(members), func(i int) {
		m, res := members[i], &results[i]
		if res.Output, res.err = render.Cluster(l.Fleet, m.Source); res.err == nil {
			res.verifyErr = verify.All(m.Source, res.Files)
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
		if al := validate.Artifacts(m.Source, res.Files, m); len(al) > 0 {
			list = append(list, al...)
		} else if sl := secrets.Artifacts(res.Files); len(sl) > 0 {
			list = append(list, sl...)
		} else if res.verifyErr != nil {
			vf := validate.VerificationFailures(res.verifyErr, m)
			if len(vf) == 0 {
				return nil, fmt.Errorf("internal error: a rendered artifact%s failed verification: %w", clusterNote(l, m), res.verifyErr)
			}
			list = append(list, vf...)
		}
		c := Cluster{Member: m, Dir: layout.ClusterDir(l.Fleet.Single, m.Source.Cluster.Name), Files: res.Files, Revisions: res.Revisions}
		r.Clusters = append(r.Clusters, c)
		for p, b := range c.Files.Prefixed(c.Dir) {
			r.Files[p] = b
		}
	}
	if len(list) > 0 {
		return nil, list
	}
	if !r.Selected {
		wide, err := render.FleetWide(l.Fleet)
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		if list := secrets.Artifacts(wide); len(list) > 0 {
			return nil, list
		}
		for p, b := range wide {
			r.Files[p] = b
		}
	} else if !l.Fleet.Single {
		dirs := make([]string, len(r.Clusters))
		for i, c := range r.Clusters {
			dirs[i] = c.Dir
		}
		r.Scope = func(p string) bool {
			return slices.ContainsFunc(dirs, func(d string) bool { return layout.InCluster(d, p) })
		}
	}
	return r, nil
}

// clusterNote names a fleet's cluster in an error message.
func clusterNote(l *source.Loaded, m *source.Member) string {
	if l.Fleet.Single {
		return ""
	}
	return " of cluster " + m.Source.Cluster.Name
}

// selectClusters returns the members names names (every member when names
// is empty), in the fleet's order. A name that is not a cluster of the
// source is a *ClusterError.
func selectClusters(l *source.Loaded, names []string) ([]*source.Member, error) {
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
			return nil, &ClusterError{"--cluster needs a cluster name"}
		case l.Fleet.Single:
			return nil, &ClusterError{fmt.Sprintf("--cluster %s: the source %s is one cluster, named %s", n, l.Dir, all[0])}
		}
		hint := "its clusters are " + strings.Join(all, ", ")
		if s := diag.Suggest(n, all); s != "" {
			hint = fmt.Sprintf("did you mean %s?", s)
		}
		return nil, &ClusterError{fmt.Sprintf("--cluster %s: no such cluster in %s; %s", n, l.Dir, hint)}
	}
	var out []*source.Member
	for _, m := range l.Members {
		if slices.Contains(names, m.Source.Cluster.Name) {
			out = append(out, m)
		}
	}
	return out, nil
}
