// Package validate checks a decoded source against the rules of every
// consumer of nodegen's artifacts (kubelet, kube-env, the autoscaler, GCE)
// that the CUE schema cannot express, and reports each problem at the
// position of the value that causes it.
package validate

import (
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
)

// Positioner finds where a value was written.
type Positioner interface {
	Pos(sels ...cue.Selector) token.Pos
	KeyPos(sels ...cue.Selector) token.Pos
}

type checker struct {
	src  *model.Source
	pos  Positioner
	list diag.List
}

// Source checks src and returns every finding.
func Source(src *model.Source, pos Positioner) diag.List {
	c := &checker{src: src, pos: pos}
	c.cluster()
	for _, g := range src.Groups() {
		c.group(g)
	}
	return c.list.Sorted()
}

// at records a finding about the value at path.
func (c *checker) at(path []cue.Selector, format string, args ...any) {
	c.list.Add(c.pos.Pos(path...), pathString(path), format, args...)
}

// atKey records a finding about the key of the field at path.
func (c *checker) atKey(path []cue.Selector, format string, args ...any) {
	c.list.Add(c.pos.KeyPos(path...), pathString(path), format, args...)
}

func pathString(path []cue.Selector) string {
	labels := make([]string, len(path))
	for i, s := range path {
		labels[i] = s.String()
	}
	return strings.Join(labels, ".")
}

func sel(parts ...any) []cue.Selector {
	out := make([]cue.Selector, 0, len(parts))
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out = append(out, cue.Str(p))
		case int:
			out = append(out, cue.Index(p))
		case cue.Selector:
			out = append(out, p)
		}
	}
	return out
}

func (c *checker) cluster() {
	cl := &c.src.Cluster
	jt := cl.JoinToken
	if (jt.SecretManager == nil) == (jt.MetadataKey == "") {
		c.at(sel("cluster", "joinToken"), "set exactly one of secretManager or metadataKey")
	}
	name := cl.Autoscaler.NodeGroup
	g, ok := c.src.NodeGroups[name]
	p := sel("cluster", "autoscaler", "nodeGroup")
	switch {
	case !ok:
		c.at(p, "no node group %q: the autoscaler needs a dedicated gce-static node group", name)
	case g.Kind != model.KindGCEStatic:
		c.at(p, "node group %q is %s; the autoscaler must run on a gce-static group (fixed size, never scaled away, with the GCE metadata server in reach)", name, g.Kind)
	case g.GPU != nil:
		c.at(p, "node group %q has GPUs; the autoscaler must run on a CPU-only group", name)
	case len(g.Taints) == 0:
		c.at(p, "node group %q has no taint; taint it so that no other pod lands on the autoscaler's node", name)
	}
}

func (c *checker) group(g *model.NodeGroup) {
	base := sel("nodeGroups", g.Name)
	for _, k := range model.SortedKeys(g.Labels) {
		c.label(g, append(base, cue.Str("labels"), cue.Str(k)), k, g.Labels[k])
	}
	keys := map[string]int{}
	for i, t := range g.Taints {
		p := append(sel("nodeGroups", g.Name, "taints"), cue.Index(i))
		c.taint(p, t)
		if j, dup := keys[t.Key]; dup {
			c.at(append(p, cue.Str("key")), "taint key %q repeats taints[%d]: kube-env's node_taints holds one taint per key (the autoscaler keeps the last), so the template would differ from the node", t.Key, j)
		} else {
			keys[t.Key] = i
		}
		if strings.HasPrefix(t.Key, model.StartupTaintPrefix) {
			c.at(append(p, cue.Str("key")), "taint %q has the autoscaler's startup-taint prefix; declare it as startupTaint instead", t.Key)
		}
	}
	if g.Cloud() {
		c.cloudGroup(g, base, keys)
	}
}

// label checks a user label.
func (c *checker) label(g *model.NodeGroup, p []cue.Selector, k, v string) {
	for _, msg := range validation.IsQualifiedName(k) {
		c.atKey(p, "label key %q: %s", k, msg)
	}
	for _, msg := range validation.IsValidLabelValue(v) {
		c.at(p, "label value %q: %s", v, msg)
	}
	switch k {
	case model.GroupLabel, model.GPULabel, model.ZoneLabel, model.RegionLabel, model.InstanceTypeLabel:
		c.atKey(p, "label %q is set by nodegen; remove it", k)
		return
	}
	if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
		c.atKey(p, "label %q is in a kubernetes.io/k8s.io namespace the kubelet may not set on itself: the kubelet refuses to start with it (and NodeRestriction rejects it); use your own prefix, e.g. %q", k, suggestPrefix(k))
	}
	if strings.ContainsAny(v, ",;") || strings.ContainsAny(k, ",;=") {
		c.at(p, "label %s=%s cannot be carried by kube-env (',' and ';' split its lists)", k, v)
	}
}

// isKubernetesLabel reports whether a label key's namespace is kubernetes.io,
// k8s.io or a subdomain of either.
func isKubernetesLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if ns == d || strings.HasSuffix(ns, "."+d) {
			return true
		}
	}
	return false
}

func suggestPrefix(key string) string {
	_, name, _ := strings.Cut(key, "/")
	return "example.com/" + name
}

func (c *checker) taint(p []cue.Selector, t model.Taint) {
	for _, msg := range validation.IsQualifiedName(t.Key) {
		c.at(append(p, cue.Str("key")), "taint key %q: %s", t.Key, msg)
	}
	for _, msg := range validation.IsValidLabelValue(t.Value) {
		c.at(append(p, cue.Str("value")), "taint value %q: %s", t.Value, msg)
	}
}

func (c *checker) cloudGroup(g *model.NodeGroup, base []cue.Selector, taintKeys map[string]int) {
	cl := &c.src.Cluster
	region := cl.GCP.Region
	for i, z := range g.Zones {
		if zoneRegion(z) != region {
			c.at(append(sel("nodeGroups", g.Name, "zones"), cue.Index(i)), "zone %s is not in region %s", z, region)
		}
	}
	switch {
	case g.Min > g.Max:
		c.at(append(base, cue.Str("min")), "min %d is greater than max %d", g.Min, g.Max)
	case g.Kind == model.KindGCE && g.Max < 1:
		c.at(append(base, cue.Str("max")), "max must be at least 1 for an autoscaled group (the autoscaler rejects max 0)")
	case g.Kind == model.KindGCEStatic && g.Min != g.Max:
		c.at(append(base, cue.Str("max")), "a gce-static group has a fixed size: min (%d) and max (%d) must be equal", g.Min, g.Max)
	}
	// GCE names: MIG <cluster>-<group>-<zone> ≤ 63; base instance name ≤ 58.
	for _, z := range g.Zones {
		if n := cl.MIGName(g, z); len(n) > 63 {
			c.atKey(base, "MIG name %s is %d characters; GCE allows 63: shorten the cluster or group name", n, len(n))
			break
		}
	}
	if n := cl.BaseInstanceName(g); len(n) > 58 {
		c.atKey(base, "base instance name %s is %d characters; GCE allows 58", n, len(n))
	}
	if st := g.StartupTaint; st != nil {
		p := append(base, cue.Str("startupTaint"))
		c.taint(p, *st)
		if _, dup := taintKeys[st.Key]; dup {
			c.at(append(p, cue.Str("key")), "startup taint %q is also a regular taint of the group; the remover would delete a taint the group must keep", st.Key)
		}
		if fix, ok := nearMissStartupPrefix(st.Key); ok {
			c.at(append(p, cue.Str("key")), "the autoscaler would not treat %q as a startup taint; did you mean %q?", st.Key, fix)
		}
		if g.GPU == nil {
			c.at(p, "a startup taint needs a GPU group: the taint remover removes it once the GPU Operator has validated the GPUs")
		}
	}
	for _, k := range model.SortedKeys(g.Kubelet.EvictionHard) {
		if k != "memory.available" && k != "nodefs.available" {
			c.at(append(base, cue.Str("kubelet"), cue.Str("evictionHard"), cue.Str(k)), "the autoscaler reads only memory.available and nodefs.available from evictionHard")
		}
	}
}

// nearMissStartupPrefix reports a key whose prefix is one slip away from
// the autoscaler's startup-taint prefix, and the corrected key.
func nearMissStartupPrefix(key string) (string, bool) {
	prefix, name, ok := strings.Cut(key, "/")
	if !ok || kubeenv.IsStartupTaint(key) {
		return "", false
	}
	want := strings.TrimSuffix(model.StartupTaintPrefix, "/")
	if strings.HasPrefix(prefix, "startup-taint.") || strings.Contains(prefix, "cluster-autoscaler") ||
		levenshtein(prefix, want) <= 3 {
		return model.StartupTaintPrefix + name, true
	}
	return "", false
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func zoneRegion(zone string) string {
	if i := strings.LastIndex(zone, "-"); i > 0 {
		return zone[:i]
	}
	return zone
}
