package layout

import "strings"

// FleetDocsPath is the drawing of a fleet source's clusters (and of its
// mesh), in out/ next to the clusters' trees. A one-cluster source has
// none.
const FleetDocsPath = "docs/fleet.md"

// FleetWide reports whether p (relative to out/) is a file of the whole
// fleet rather than of one cluster's tree.
func FleetWide(p string) bool { return p == FleetDocsPath }

// ClusterDir is the directory of a cluster's tree in out/, with a
// trailing slash: the cluster's name in a fleet, "" for a one-cluster
// source, whose out/ is the cluster's tree.
func ClusterDir(single bool, cluster string) string {
	if single {
		return ""
	}
	return cluster + "/"
}

// InCluster reports whether p (relative to out/) belongs to the tree at
// dir (a ClusterDir): every file when dir is "", otherwise the files
// under dir that are not fleet-wide.
func InCluster(dir, p string) bool {
	return dir == "" || (strings.HasPrefix(p, dir) && !FleetWide(p))
}

// Prefixed returns f with dir (a ClusterDir) before every path.
func (f Files) Prefixed(dir string) Files {
	if dir == "" {
		return f
	}
	out := make(Files, len(f))
	for p, b := range f {
		out[dir+p] = b
	}
	return out
}
