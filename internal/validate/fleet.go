package validate

import (
	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
)

// Fleet checks what spans the clusters of a fleet source: that the
// mesh's clusters are clusters of the fleet. It returns nothing for a
// one-cluster source (whose mesh, if any, the loader already rejected).
func Fleet(l *source.Loaded) diag.List {
	if l.Fleet == nil || l.Fleet.Single {
		return nil
	}
	c := &checker{pos: l}
	if m := l.Fleet.Mesh; m != nil {
		keys := make([]string, 0, len(l.Members))
		for _, mb := range l.Members {
			keys = append(keys, mb.Key)
		}
		for _, name := range model.SortedKeys(m.Clusters) {
			if l.Member(name) != nil || l.Broken.Clusters[name] {
				continue
			}
			p := sel("mesh", "clusters", name)
			if s := diag.Suggest(name, keys); s != "" {
				c.atKey(p, "no cluster %q in clusters; did you mean %q?", name, s)
			} else {
				c.atKey(p, "no cluster %q in clusters: every cluster of the mesh must be a cluster of the fleet", name)
			}
		}
	}
	return c.list.Sorted()
}
