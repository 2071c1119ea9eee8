package autoscaler

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// priorityExpanderKey is the data key of the ConfigMap the autoscaler's
// priority expander reads (expander/priority/priority.go: ConfigMapKey).
const priorityExpanderKey = "priorities"

// migPattern is the priority expander's regular expression for one MIG:
// the MIG's URL, which is what the GCE provider's NodeGroup.Id() returns
// (GenerateMigUrl with the default domain), quoted and anchored so that it
// matches that MIG and no other.
func migPattern(url string) string { return "^" + regexp.QuoteMeta(url) + "$" }

// expanderPriorities maps each priority to the patterns of the MIGs of the
// autoscaled groups that have it, in MIG order. Nil unless the expander
// chain contains "priority".
func expanderPriorities(src *model.Source) map[int][]string {
	if !src.Cluster.Autoscaler.UsesPriority() {
		return nil
	}
	out := map[int][]string{}
	for _, m := range src.AutoscaledMIGs() {
		p := m.Group.GroupPriority()
		out[p] = append(out[p], migPattern(m.URL))
	}
	return out
}

// expanderPrioritiesText is the ConfigMap's priorities value: a YAML map
// of priority to list of patterns, as the expander parses it
// (sigs.k8s.io/yaml into map[int][]string).
func expanderPrioritiesText(prios map[int][]string) (string, error) {
	b, err := yamlout.Marshal(stringKeys(prios))
	return string(b), err
}

func stringKeys(prios map[int][]string) map[string][]string {
	m := make(map[string][]string, len(prios))
	for p, res := range prios {
		m[strconv.Itoa(p)] = res
	}
	return m
}

// priorityExpanderObjects returns the priority expander's ConfigMap, or
// nothing when the expander chain has no "priority".
func priorityExpanderObjects(src *model.Source) ([]runtime.Object, error) {
	prios := expanderPriorities(src)
	if prios == nil {
		return nil, nil
	}
	text, err := expanderPrioritiesText(prios)
	if err != nil {
		return nil, err
	}
	return []runtime.Object{&corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      model.PriorityExpanderConfigMapName,
			Namespace: src.Cluster.Autoscaler.Namespace,
			Labels:    map[string]string{"app.kubernetes.io/managed-by": "nodegen"},
		},
		Data: map[string]string{priorityExpanderKey: text},
	}}, nil
}

// PriorityExpander renders the priority expander's ConfigMap for
// installs without the chart (the chart creates the same ConfigMap from
// values.yaml's expanderPriorities).
func PriorityExpander(src *model.Source, header string) ([]byte, error) {
	objs, err := priorityExpanderObjects(src)
	if err != nil || objs == nil {
		return nil, err
	}
	return manifest.MarshalObjects(header, objs)
}

// capFlags returns the autoscaler's cluster-wide limit flags, sorted by
// name: each cap of the source (the cloud's budget) plus what the declared
// nodes outside the MIGs count (model.Source.Fixed), since the autoscaler
// counts every Node of the cluster (kubernetes/autoscaler
// cluster-autoscaler-1.35.2, resourcequotas/usage.go calculateUsages);
// --gpu-total as written, since their GPUs count towards none.
func capFlags(src *model.Source) [][2]string {
	caps := src.Cluster.Autoscaler.Caps
	if caps == nil {
		return nil
	}
	fixed := src.Fixed()
	var out [][2]string
	if caps.Cores != nil {
		out = append(out, [2]string{"cores-total", fmt.Sprintf("%d:%d", caps.Cores.Min+fixed.CPU, caps.Cores.Max+fixed.CPU)})
	}
	for _, t := range model.SortedKeys(caps.GPUs) {
		r := caps.GPUs[t]
		out = append(out, [2]string{"gpu-total", fmt.Sprintf("%s:%d:%d", t, r.Min, r.Max)})
	}
	if caps.MaxNodesTotal > 0 {
		out = append(out, [2]string{"max-nodes-total", strconv.FormatInt(int64(caps.MaxNodesTotal)+fixed.Nodes, 10)})
	}
	if caps.MemoryGiB != nil {
		out = append(out, [2]string{"memory-total", fmt.Sprintf("%d:%d", caps.MemoryGiB.Min+fixed.MemoryGiB, caps.MemoryGiB.Max+fixed.MemoryGiB)})
	}
	return out
}

// capsComment says, in flags.txt, what the cap flags add to the source's
// caps; "" when nothing is added.
func capsComment(src *model.Source) string {
	f := src.Fixed()
	if src.Cluster.Autoscaler.Caps == nil || f.Nodes == 0 {
		return ""
	}
	s := fmt.Sprintf("# The caps below are the source's (the cloud's budget) plus the %d declared node(s) outside the MIGs, which the autoscaler counts too: %d vCPUs, %d GiB", f.Nodes, f.CPU, f.MemoryGiB)
	if len(src.Cluster.Autoscaler.Caps.GPUs) > 0 && slices.ContainsFunc(src.DeclaredNodes(), func(n model.DeclaredNode) bool { return n.GPUs > 0 }) {
		s += " (their GPUs count towards no --gpu-total: they lack the label " + model.GPULabel + ")"
	}
	return s + ".\n"
}
