// Package agree checks nodegen's central promise: the labels and taints the
// Cluster Autoscaler reads from a group's kube-env are the labels and taints
// its nodes register with at join (the startup taint aside), and both are
// the source's; and a new on-prem server registers with its group's.
package agree

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
)

// Joined is a node as its JoinConfiguration registers it.
type Joined struct {
	Name       string
	Labels     map[string]string
	Taints     []model.Taint
	ProviderID string
}

// FromJoinConfiguration reads the node's registration from a
// JoinConfiguration: the taints, and node-labels parsed as the kubelet
// parses --node-labels (split on ',', then at the first '=', trimmed).
func FromJoinConfiguration(c *kubeadm.JoinConfiguration) (Joined, error) {
	j := Joined{Name: c.NodeRegistration.Name, Labels: map[string]string{}}
	if s, ok := c.ExtraArg("node-labels"); ok && s != "" {
		for _, item := range strings.Split(s, ",") {
			k, v, found := strings.Cut(item, "=")
			if !found {
				return j, fmt.Errorf("node-labels: %q has no '='", item)
			}
			j.Labels[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	j.ProviderID, _ = c.ExtraArg("provider-id")
	for _, t := range c.NodeRegistration.Taints {
		j.Taints = append(j.Taints, model.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return j, nil
}

// CheckTemplate compares a group's kube-env, read the autoscaler's way
// with kubeenv.ReadTemplate (which it does not modify; startup taints
// dropped: flagged are the keys given to --startup-taint), with a node
// that joined in zone, and both with the source.
func CheckTemplate(cl *model.Cluster, g *model.NodeGroup, tmpl *kubeenv.Template, flagged []string, node Joined, zone string) error {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	// The labels the script adds at boot are the ones the autoscaler adds
	// to every template itself: check them against the group's facts.
	boot := cl.BootLabels(g, zone)
	for _, k := range model.SortedKeys(boot) {
		if got, ok := node.Labels[k]; !ok || got != boot[k] {
			fail("node label %s=%q, want %q", k, got, boot[k])
		}
	}
	nodeLabels := maps.Clone(node.Labels)
	for k := range boot {
		delete(nodeLabels, k)
	}
	// The kubelet sets these on the Node it registers, whatever the join
	// says (model.KubeletSelfLabels).
	for k, v := range model.KubeletSelfLabels(g) {
		if _, ok := nodeLabels[k]; !ok {
			nodeLabels[k] = v
		}
	}
	// The approver sets these once it checked the VM; the join must not
	// (NodeRestriction refuses a kubelet registering with them).
	for k, v := range model.VerifiedLabels(g) {
		if _, ok := nodeLabels[k]; ok {
			fail("the join sets label %s, which NodeRestriction refuses to a kubelet: the node would not register", k)
		}
		nodeLabels[k] = v
	}
	if !maps.Equal(tmpl.Labels, nodeLabels) {
		fail("labels differ: kube-env %v, join %v", tmpl.Labels, nodeLabels)
	}
	if err := tmpl.MatchesSource(g, flagged...); err != nil {
		fail("kube-env and source differ: %v", err)
	}

	var tmplTaints []string
	for _, t := range tmpl.SanitizedTaints(flagged...) {
		tmplTaints = append(tmplTaints, t.Key+"="+t.Value+":"+t.Effect)
	}
	var joinTaints []string
	startup := 0
	for _, t := range node.Taints {
		if g.StartupTaint != nil && t == *g.StartupTaint {
			startup++
			continue
		}
		joinTaints = append(joinTaints, t.String())
	}
	slices.Sort(joinTaints)
	if !slices.Equal(tmplTaints, joinTaints) {
		fail("taints differ: kube-env %v, join %v", tmplTaints, joinTaints)
	}
	if g.StartupTaint != nil && startup != 1 {
		fail("the node joins with its startup taint %s %d times, want once", g.StartupTaint, startup)
	}
	if want := fmt.Sprintf("gce://%s/%s/%s", cl.GCP.Project, zone, node.Name); node.ProviderID != want {
		fail("provider-id %q, want %q", node.ProviderID, want)
	}
	if len(errs) > 0 {
		return fmt.Errorf("group %s: %s", g.Name, strings.Join(errs, "; "))
	}
	return nil
}

// CheckOnprem compares a new server of the onprem group g, as its join
// registers it, with the source: the labels are the group's that a
// kubelet may set on itself (model.NodeGroup.OnpremJoinLabels; the others,
// which the kubelet would refuse to start with, are label-onprem-nodes.sh's),
// the taints the group's, and the providerID the one the nodes outside
// the MIGs get (none when the source leaves it to the user).
func CheckOnprem(cl *model.Cluster, g *model.NodeGroup, node Joined) error {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	for _, k := range model.SortedKeys(node.Labels) {
		if !model.KubeletMaySetLabel(k) {
			fail("the join sets label %s, which a kubelet may not set on its own Node: the kubelet would not start", k)
		}
	}
	if want := g.OnpremJoinLabels(); !maps.Equal(node.Labels, want) {
		fail("labels differ: join %v, source %v", node.Labels, want)
	}
	var got, want []string
	for _, t := range node.Taints {
		got = append(got, t.String())
	}
	for _, t := range g.Taints {
		want = append(want, t.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		fail("taints differ: join %v, source %v", got, want)
	}
	if want := cl.OnpremJoinProviderID(node.Name); node.ProviderID != want {
		fail("provider-id %q, want %q", node.ProviderID, want)
	}
	if len(errs) > 0 {
		return fmt.Errorf("group %s: %s", g.Name, strings.Join(errs, "; "))
	}
	return nil
}
