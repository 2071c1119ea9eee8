// Package rollout brings the cloud nodes of a cluster to their groups'
// current revision (package revision): per zonal MIG, a batch of stale
// nodes at a time, it creates their replacement VMs through the MIG, waits
// until they are Ready and rid of their startup taint, cordons and drains
// the old nodes through the Eviction API (every PodDisruptionBudget
// respected, no pod deleted but past the drain timeout when the source
// says "force"; pods kubectl drain would refuse held back), and deletes
// them through the MIG, so that the Cluster Autoscaler's view of the group
// stays coherent.
//
// It keeps no state of its own: what is left to do is read again from the
// cluster (the nodes' revision labels, the cordon and the annotation it
// puts on a node it drains) and from the Compute API (the MIG's instances)
// at every step, so a rollout stopped at any point, even killed, is
// finished by running it again. A replacement's name is derived from the
// node it replaces, so a second run finds the VM the first one asked for.
package rollout

import (
	"crypto/sha256"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodecheck"
)

// DrainingAnnotation marks a node the rollout cordoned to replace it; its
// value is the revision the node is being replaced with. A node that
// carries it is finished first when a rollout is run again, and made
// schedulable again when a drain gives up.
const DrainingAnnotation = "nodegen.dev/rollout-draining"

// CordonedAnnotation records that the rollout cordoned the node (it was
// schedulable before): only such a node is made schedulable again when
// the rollout lets it go. A node someone else cordoned stays cordoned.
const CordonedAnnotation = "nodegen.dev/rollout-cordoned"

// UndoAnnotation marks an unused replacement the rollout is removing
// after a stopped batch; a run that finds it finishes the removal.
const UndoAnnotation = "nodegen.dev/rollout-undo"

// Plan is what a rollout would do, group by group, in order.
type Plan struct {
	Policy model.Rollout `json:"policy"`
	// Drain is what the drains may evict beyond the default.
	Drain DrainOptions `json:"drain"`
	// UpcomingNodeFreeze: the cluster's autoscaler adds no node anywhere
	// while a node is upcoming, so each surge holds every scale-up until
	// its replacement is ready (model.AutoscalerMinor.UpcomingNodeBlocks).
	UpcomingNodeFreeze bool   `json:"upcomingNodeFreeze"`
	AutoscalerTag      string `json:"autoscalerTag"`
	// PodsRead: the plan read the stale nodes' pods (AddPods).
	PodsRead bool `json:"podsRead"`
	// Leaving are the MIGs of nodes the source no longer has (a zone
	// removed from a group, a group removed or renamed): their nodes are
	// drained and deleted, and the empty MIGs deleted, before anything
	// else, so that terraform apply can go on (the MIGs' deletion_policy
	// makes it refuse to delete one while its state holds it).
	Leaving []LeavingMIG `json:"leaving"`
	// AutoscalerUpgrade, when MIGs leave, is the command to run before the
	// rollout: the running autoscaler must no longer name them (--yes
	// refuses while it does).
	AutoscalerUpgrade string      `json:"autoscalerUpgrade,omitempty"`
	Groups            []GroupPlan `json:"groups"`
}

// LeavingMIG is a zonal MIG that is no longer in the source, with the
// nodes of it the cluster still has.
type LeavingMIG struct {
	Group string `json:"group"`
	Zone  string `json:"zone"`
	Name  string `json:"name"`
	// Why says what left the source: the zone, or the group.
	Why string `json:"why"`
	// Excluded: cluster.rollout.exclude names the group; it is left alone.
	Excluded bool        `json:"excluded,omitempty"`
	Nodes    []StaleNode `json:"nodes"`
}

// AddPods reads what the drain of each stale node would hold back and
// which Job pods it would evict, from the cluster's pods and the claims
// among theirs bound to volumes on a node's disks (ReadLocalClaims).
func (p *Plan) AddPods(pods []corev1.Pod, o DrainOptions, local LocalClaims) {
	p.Drain, p.PodsRead = o, true
	byNode := map[string][]corev1.Pod{}
	for _, pod := range pods {
		byNode[pod.Spec.NodeName] = append(byNode[pod.Spec.NodeName], pod)
	}
	for i := range p.Groups {
		for j := range p.Groups[i].MIGs {
			for k := range p.Groups[i].MIGs[j].Stale {
				s := &p.Groups[i].MIGs[j].Stale[k]
				ps := byNode[s.Name]
				sort.Slice(ps, func(a, b int) bool { return ps[a].Namespace+"/"+ps[a].Name < ps[b].Namespace+"/"+ps[b].Name })
				_, s.Held, s.JobPods = evictable(ps, o, local)
			}
		}
	}
	for i := range p.Leaving {
		for k := range p.Leaving[i].Nodes {
			s := &p.Leaving[i].Nodes[k]
			ps := byNode[s.Name]
			sort.Slice(ps, func(a, b int) bool { return ps[a].Namespace+"/"+ps[a].Name < ps[b].Namespace+"/"+ps[b].Name })
			_, s.Held, s.JobPods = evictable(ps, o, local)
		}
	}
}

// GroupPlan is one cloud group's part of the plan.
type GroupPlan struct {
	Group    string `json:"group"`
	Kind     string `json:"kind"`
	Revision string `json:"revision"`
	// Excluded: cluster.rollout.exclude names the group.
	Excluded bool `json:"excluded,omitempty"`
	// Changes say what replacing the stale nodes changes, read from the
	// first stale node against the source (labels, taints, version).
	Changes []string  `json:"changes,omitempty"`
	MIGs    []MIGPlan `json:"migs"`
}

// Stale counts the group's stale nodes.
func (g *GroupPlan) Stale() int {
	n := 0
	for _, m := range g.MIGs {
		n += len(m.Stale)
	}
	return n
}

// MIGPlan is one zonal MIG of a group.
type MIGPlan struct {
	Zone    string      `json:"zone"`
	Name    string      `json:"name"`
	Current []string    `json:"current"`
	Stale   []StaleNode `json:"stale"`
	// Surge is how many replacements a batch gets: cluster.rollout.surge,
	// less for an autoscaled group whose max leaves less room beside the
	// MIG's nodes; 0 when the MIG is at its max (the MIG is skipped).
	Surge int `json:"surge"`
	// Max is the autoscaled group's max per MIG (0 for a gce-static group,
	// whose surge has no such bound).
	Max int `json:"max,omitempty"`
	// Caps, when set, names the autoscaler's cluster-wide cap that limits
	// Surge (capRoom): the room it leaves beside the cluster's nodes.
	Caps string `json:"caps,omitempty"`
}

// StaleNode is a node to replace, with the revision it carries ("" when
// it has none) and the name of its replacement.
type StaleNode struct {
	Name        string `json:"name"`
	Revision    string `json:"revision"`
	Replacement string `json:"replacement"`
	// Draining: a rollout already cordoned it (it goes first).
	Draining bool `json:"draining,omitempty"`
	// Held are its pods the drain does not evict without a flag; while
	// there are any, the node is not replaced. JobPods are its pods a Job
	// controls, which the drain evicts. Both are known only when the plan
	// read the pods (Plan.PodsRead).
	Held    []HeldPod `json:"held,omitempty"`
	JobPods []string  `json:"jobPods,omitempty"`
}

// MakePlan plans the rollout of nodes (every node of the cluster; those of
// no cloud group are left out) to the revisions.
func MakePlan(src *model.Source, revs map[string]string, nodes []corev1.Node) Plan {
	p := Plan{Policy: src.Cluster.Rollout, AutoscalerTag: src.Cluster.AutoscalerImageTag()}
	if rel, err := src.Cluster.AutoscalerRelease(); err == nil && rel.Known {
		p.UpcomingNodeFreeze = rel.UpcomingNodeBlocks
	}
	byMIG := map[string][]*corev1.Node{}
	leaving := map[string]*LeavingMIG{}
	sorted := slices.Clone(nodes)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i := range sorted {
		n := &sorted[i]
		ref, ok := model.ParseGCEProviderID(n.Spec.ProviderID)
		if !ok {
			continue
		}
		if g := src.GroupOfInstance(ref); g != nil {
			byMIG[g.Name+"/"+ref.Zone] = append(byMIG[g.Name+"/"+ref.Zone], n)
			continue
		}
		if l := leavingMIG(src, n, ref); l != nil {
			k := l.Group + "/" + l.Zone
			if leaving[k] == nil {
				leaving[k] = l
			}
			leaving[k].Nodes = append(leaving[k].Nodes, StaleNode{Name: n.Name, Revision: n.Labels[model.RevisionLabel], Draining: n.Annotations[DrainingAnnotation] != ""})
		}
	}
	for _, k := range model.SortedKeys(leaving) {
		p.Leaving = append(p.Leaving, *leaving[k])
	}
	if len(p.Leaving) > 0 {
		p.AutoscalerUpgrade = src.AutoscalerUpgrade()
	}
	for _, g := range src.RolloutOrder() {
		gp := GroupPlan{Group: g.Name, Kind: g.Kind, Revision: revs[g.Name], Excluded: slices.Contains(src.Cluster.Rollout.Exclude, g.Name)}
		var first *corev1.Node
		for _, z := range g.Zones {
			mp := MIGPlan{Zone: z, Name: src.Cluster.MIGName(g, z), Current: []string{}, Stale: []StaleNode{}}
			for _, n := range byMIG[g.Name+"/"+z] {
				rev := n.Labels[model.RevisionLabel]
				if rev == gp.Revision {
					mp.Current = append(mp.Current, n.Name)
					continue
				}
				if first == nil {
					first = n
				}
				mp.Stale = append(mp.Stale, StaleNode{Name: n.Name, Revision: rev, Replacement: ReplacementName(&src.Cluster, g, n.Name, gp.Revision),
					Draining: n.Annotations[DrainingAnnotation] != ""})
			}
			// Nodes a rollout began to drain go first.
			sort.SliceStable(mp.Stale, func(i, j int) bool { return mp.Stale[i].Draining && !mp.Stale[j].Draining })
			mp.Surge = src.Cluster.Rollout.Surge
			if g.Autoscaled() {
				mp.Max = g.Max
				mp.Surge = max(0, min(mp.Surge, g.Max-len(mp.Current)-len(mp.Stale)))
			}
			if room, capped, why := capRoom(src, g, nodes); capped && room < min(mp.Surge, len(mp.Stale)) {
				mp.Surge, mp.Caps = room, why
			}
			gp.MIGs = append(gp.MIGs, mp)
		}
		if first != nil {
			gp.Changes = changes(src, g, first)
		}
		p.Groups = append(p.Groups, gp)
	}
	return p
}

// LeavingRevision is the value of DrainingAnnotation on a node the
// rollout drains because its MIG left the source.
const LeavingRevision = "leaving"

// leavingMIG finds the MIG, no longer in the source, of a node of a GCE
// instance: in the cluster's project, labelled with a group
// (model.GroupLabel) that is no longer a cloud group of the source or no
// longer has the instance's zone, and named as that group's MIGs name
// their instances (the cluster's name, the group's, '-' and four
// characters). nil for any other node.
func leavingMIG(src *model.Source, n *corev1.Node, ref model.GCERef) *LeavingMIG {
	cl := &src.Cluster
	name := n.Labels[model.GroupLabel]
	if name == "" || ref.Project != cl.GCP.Project {
		return nil
	}
	old := &model.NodeGroup{Name: name}
	if rest, ok := strings.CutPrefix(ref.Name, cl.BaseInstanceName(old)+"-"); !ok || len(rest) != 4 {
		return nil
	}
	l := &LeavingMIG{Group: name, Zone: ref.Zone, Name: cl.MIGName(old, ref.Zone), Nodes: []StaleNode{}}
	switch g := src.NodeGroups[name]; {
	case g == nil:
		l.Why = "group " + name + " is no longer in the source"
	case !g.Cloud():
		l.Why = "group " + name + " is no longer a cloud group"
	case !slices.Contains(g.Zones, ref.Zone):
		l.Why = "zone " + ref.Zone + " is no longer in " + name + "'s zones"
	default:
		return nil
	}
	l.Excluded = slices.Contains(cl.Rollout.Exclude, name)
	return l
}

// LeavingMIGOf says whether a zonal MIG of the project is one of the
// cluster's that left the source: named as the cluster names a group's MIG
// (the cluster's name, the group's, the zone), its base instance name the
// cluster's and the group's, and the group no longer a cloud group of the
// source or no longer in that zone. nil otherwise.
func LeavingMIGOf(src *model.Source, m ZonalMIG) *LeavingMIG {
	cl := &src.Cluster
	name, ok := strings.CutPrefix(m.BaseInstanceName, cl.Name+"-")
	if !ok || name == "" {
		return nil
	}
	old := &model.NodeGroup{Name: name}
	if m.Name != cl.MIGName(old, m.Zone) {
		return nil
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{model.GroupLabel: name}}}
	return leavingMIG(src, n, model.GCERef{Project: cl.GCP.Project, Zone: m.Zone, Name: cl.BaseInstanceName(old) + "-0000"})
}

// changes says, in a person's terms, what replacing the stale node n
// changes: drift's findings on it against the source, and its kubelet
// version against the group's.
func changes(src *model.Source, g *model.NodeGroup, n *corev1.Node) []string {
	var out []string
	results, _ := nodecheck.Check(src, []corev1.Node{*n}, nodecheck.Options{})
	for _, r := range results {
		for _, f := range r.Findings {
			switch f.Kind {
			case nodecheck.LabelMissing:
				out = append(out, fmt.Sprintf("label %s=%s added", f.Key, f.Want))
			case nodecheck.LabelExtra:
				out = append(out, fmt.Sprintf("label %s=%s removed", f.Key, f.Got))
			case nodecheck.LabelDifferent:
				out = append(out, fmt.Sprintf("label %s: %s → %s", f.Key, f.Got, f.Want))
			case nodecheck.TaintMissing:
				out = append(out, fmt.Sprintf("taint %s added", f.Want))
			case nodecheck.TaintExtra:
				out = append(out, fmt.Sprintf("taint %s removed", f.Got))
			case nodecheck.TaintDifferent:
				out = append(out, fmt.Sprintf("taint %s → %s", f.Got, f.Want))
			}
		}
	}
	if got, want := strings.TrimPrefix(n.Status.NodeInfo.KubeletVersion, "v"), src.Cluster.NodeVersion(g); got != "" && got != want {
		out = append(out, fmt.Sprintf("Kubernetes version %s → %s", got, want))
	}
	if len(out) == 0 {
		out = append(out, "the labels, taints and version stay; the startup script, image or machine differ (see nodegen drift --instance-template)")
	}
	return out
}

// ReplacementName is the name of the VM that replaces the node old in g's
// MIG: the MIG's base instance name and four characters derived from the
// old node's name and the new revision, the form the autoscaler and nodegen
// take for an instance of the MIG. Derived, so that a rollout run again
// finds the replacement the first run asked for.
func ReplacementName(c *model.Cluster, g *model.NodeGroup, old, rev string) string {
	sum := sha256.Sum256([]byte(old + "\x00" + rev))
	s := new(big.Int).SetBytes(sum[:8]).Text(36)
	for len(s) < 4 {
		s = "0" + s
	}
	return c.BaseInstanceName(g) + "-" + s[len(s)-4:]
}
