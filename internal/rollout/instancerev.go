package rollout

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/revision"
)

// InstanceRevisions reads the revision of every instance of a zonal MIG
// from Compute: the instance template its managed-instance record names
// (listManagedInstances, version.instanceTemplate), whose kube-env
// declares the revision. A Node's model.RevisionLabel is only a hint: its
// kubelet may set it to anything. cache maps a template's URL to its
// revision ("" when its kube-env declares none) across calls (a template
// never changes); it may be nil.
func (c *Compute) InstanceRevisions(ctx context.Context, project, zone, mig string, cache map[string]string) (map[string]string, error) {
	instances, err := c.ListManagedInstances(ctx, project, zone, mig)
	if err != nil {
		return nil, err
	}
	if cache == nil {
		cache = map[string]string{}
	}
	out := make(map[string]string, len(instances))
	for _, mi := range instances {
		url := mi.Version.InstanceTemplate
		if url == "" {
			out[mi.Name()] = ""
			continue
		}
		rev, ok := cache[url]
		if !ok {
			_, t, err := c.GetInstanceTemplate(ctx, url)
			if err != nil {
				return nil, fmt.Errorf("the instance template of %s: %w", mi.Name(), err)
			}
			if env, has := t.Properties.MetadataValue(model.MetadataKubeEnv); has {
				if r, declared, err := revision.FromKubeEnv([]byte(env)); err == nil && declared {
					rev = r
				}
			}
			cache[url] = rev
		}
		out[mi.Name()] = rev
	}
	return out, nil
}

// UseInstanceRevisions corrects the plan of group g's MIG in zone with
// the revisions Compute gives its instances (InstanceRevisions): a node
// whose instance Compute made from another revision's template is stale,
// whatever its label says, and one Compute made from the group's revision
// is current. A node whose instance the MIG does not list keeps what its
// label says.
func (p *Plan) UseInstanceRevisions(src *model.Source, g *model.NodeGroup, zone string, instances map[string]string) {
	for i := range p.Groups {
		gp := &p.Groups[i]
		if gp.Group != g.Name {
			continue
		}
		for j := range gp.MIGs {
			mp := &gp.MIGs[j]
			if mp.Zone != zone {
				continue
			}
			var current []string
			for _, n := range mp.Current {
				rev, known := instances[n]
				if !known || rev == gp.Revision {
					current = append(current, n)
					continue
				}
				mp.Stale = append(mp.Stale, StaleNode{Name: n, Revision: rev, Replacement: ReplacementName(&src.Cluster, g, n, gp.Revision)})
			}
			stale := mp.Stale[:0:0]
			for _, s := range mp.Stale {
				if rev, known := instances[s.Name]; known && rev == gp.Revision && !s.Draining {
					current = append(current, s.Name)
					continue
				}
				if rev, known := instances[s.Name]; known {
					s.Revision = rev
				}
				stale = append(stale, s)
			}
			slices.Sort(current)
			if current == nil {
				current = []string{}
			}
			sort.SliceStable(stale, func(a, b int) bool {
				if stale[a].Draining != stale[b].Draining {
					return stale[a].Draining
				}
				return stale[a].Name < stale[b].Name
			})
			mp.Current, mp.Stale = current, stale
		}
	}
}
