// Package explain answers, offline, why a pod would or would not make the
// Cluster Autoscaler scale up each node group from zero: it builds the
// template node the autoscaler builds for every zonal MIG (TemplateNode),
// adds the pods every fresh node runs, and checks the pod against it with
// the scheduler's own helpers from k8s.io/component-helpers (taints and
// tolerations, nodeSelector and required node affinity, resource fit).
//
// Not evaluated: inter-pod affinity and topology spread (they depend on
// the pods already running), host ports, volumes and PersistentVolume
// topology, DRA claims, PriorityClass, and the autoscaler's runtime state
// (nodes already running, backoff after failed scale-ups). The caps in
// cluster.autoscaler.caps are checked with every cloud group at its
// minimum size; the priority expander's choice is reported when the
// expander chain starts with it. Explainer.Plan estimates what the
// autoscaler adds for all the workloads together (fresh nodes, the caps as
// the cloud's budget), an estimate of its binpacking, not its code.
package explain

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
)

// Verdicts.
const (
	Fits          = "fits"
	NoFit         = "no-fit"
	NotAutoscaled = "not-autoscaled"
	Unknown       = "unknown" // the template node could not be built
)

// Reason kinds.
const (
	ReasonTaint        = "taint"
	ReasonNodeSelector = "nodeSelector"
	ReasonNodeAffinity = "nodeAffinity"
	ReasonResource     = "resource"
	ReasonMaxSize      = "maxSize"
	ReasonTemplate     = "template"
	// ReasonReplicas: the pod fits a node of the group, but the group
	// cannot reach the nodes the workload's replicas need.
	ReasonReplicas = "replicas"
)

// Report is the answer for every workload.
type Report struct {
	Workloads []WorkloadResult `json:"workloads"`
	// AllFit is true when every workload fits at least one autoscaled group.
	AllFit bool `json:"allFit"`
	// Skipped are documents without a pod template.
	Skipped []Skipped `json:"skipped,omitempty"`
	// SpotFallbacks are the worst-case waits before a preferred Spot group
	// falls back.
	SpotFallbacks []SpotFallback `json:"spotFallbacks,omitempty"`
	// Autoscaler are notes about the autoscaler itself, for every
	// workload: its release and the nodes outside the MIGs.
	Autoscaler []Note `json:"autoscaler,omitempty"`
	// InitBudgets are the autoscaled groups' init budgets and the freeze
	// each implies.
	InitBudgets []GroupInitBudget `json:"initBudgets,omitempty"`
	// Plan is what the autoscaler would add for the workloads together
	// (Explainer.Plan): an estimate, not its code.
	Plan *Plan `json:"plan,omitempty"`
	// PodMTU is the pod network's MTU and how it was derived, nil without
	// cluster.podNetwork.
	PodMTU *PodMTU `json:"podMTU,omitempty"`
}

// PodMTU is the pod MTU nodegen renders (model.Cluster.PodMTU) and its
// derivation: the paths a pod packet takes, the smallest of them less the
// encapsulation's overhead.
type PodMTU struct {
	MTU           int             `json:"mtu"`
	Computed      int             `json:"computed"`
	Encapsulation string          `json:"encapsulation"`
	Overhead      int             `json:"overhead"`
	Paths         []model.MTUPath `json:"paths"`
	Derivation    string          `json:"derivation"`
}

func podMTU(src *model.Source) *PodMTU {
	m := src.Cluster.PodMTU()
	if m == nil || len(m.Unknown) > 0 {
		return nil
	}
	return &PodMTU{MTU: m.MTU, Computed: m.Computed, Encapsulation: m.Encapsulation, Overhead: m.Overhead, Paths: m.Paths, Derivation: m.Stated()}
}

// WorkloadResult is the answer for one workload.
type WorkloadResult struct {
	Workload  string        `json:"workload"` // Kind [namespace/]name
	Kind      string        `json:"kind"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name"`
	Source    string        `json:"source"` // file:line
	Fits      bool          `json:"fits"`   // fits at least one autoscaled group
	Groups    []GroupResult `json:"groups"`
	// Preferred are the groups the priority expander keeps among those
	// the workload fits (all of the highest priority), when the expander
	// chain starts with "priority"; PreferredPriority is their priority.
	Preferred         []string `json:"preferred,omitempty"`
	PreferredPriority *int     `json:"preferredPriority,omitempty"`
}

// GroupResult is the verdict for one workload and one node group.
type GroupResult struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"` // gce, gce-static, onprem
	Verdict string `json:"verdict"`
	// Zones are the zones whose MIG's template node the pod fits.
	Zones []string `json:"zones,omitempty"`
	// Reasons are every reason the pod does not fit, when it fits no zone.
	Reasons []Reason `json:"reasons,omitempty"`
	// Notes say what a fitting pod should know about the group's nodes
	// (Spot, shared GPUs).
	Notes []string `json:"notes,omitempty"`
}

// Reason is one reason a pod does not fit a template node.
type Reason struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Zone is set when the reason holds in that zone only.
	Zone string `json:"zone,omitempty"`
	// For resource reasons: the resource, the pod's request, what is free on
	// a fresh node (allocatable minus the pods every new node runs), and the
	// allocatable, as exact quantities.
	Resource    string `json:"resource,omitempty"`
	Requested   string `json:"requested,omitempty"`
	Free        string `json:"free,omitempty"`
	Allocatable string `json:"allocatable,omitempty"`
}

// Template is one zonal MIG's template node with the pods a fresh node runs.
type Template struct {
	Zone string
	Node *corev1.Node
	// Fresh are the pods every new node runs: kube-proxy, then the
	// DaemonSets whose pods the node admits.
	Fresh []FreshPod
}

// FreshPod is a pod every new node of a group runs.
type FreshPod struct {
	Name     string // "kube-proxy" or "DaemonSet <ns>/<name>"
	Requests corev1.ResourceList
	ds       *Workload // the DaemonSet it comes from, if from the workloads
}

// Explainer holds the template nodes of a source's node groups.
type Explainer struct {
	src       *model.Source
	groups    []*model.NodeGroup
	templates map[string][]*Template
	errs      map[string]error
	capacity  capacity
	spot      []SpotFallback
}

// New builds the template node of every autoscaled group's zonal MIGs from
// the rendered kube-env values in files, with the pods a fresh node runs:
// kube-proxy, the DaemonSets nodegen renders (the taint remover) and the
// DaemonSets among workloads whose pods the node admits.
func New(src *model.Source, files layout.Files, workloads []*Workload) (*Explainer, error) {
	objs, err := k8sdecode.Objects(files[layout.TaintRemoverPath])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", layout.TaintRemoverPath, err)
	}
	var daemonSets []*Workload
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			w := workloadOf(ds)
			w.File = layout.TaintRemoverPath
			DefaultRequests(&w.Pod.Spec)
			daemonSets = append(daemonSets, w)
		}
	}
	for _, w := range workloads {
		if w.Kind == "DaemonSet" {
			daemonSets = append(daemonSets, w)
		}
	}
	flagged := src.ExtraStartupTaints()
	e := &Explainer{src: src, templates: map[string][]*Template{}, errs: map[string]error{}, capacity: newCapacity(src), spot: spotFallbacks(src)}
	for _, g := range src.Groups() {
		e.groups = append(e.groups, g)
		if !g.Autoscaled() {
			continue
		}
		for _, z := range g.Zones {
			node, err := nodetemplate.TemplateNode(&src.Cluster, g, z, files[layout.KubeEnvPath(g.Name)], flagged)
			if err != nil {
				e.errs[g.Name] = err
				break
			}
			t := &Template{Zone: z, Node: node, Fresh: []FreshPod{{
				Name:     "kube-proxy",
				Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(nodetemplate.KubeProxyMilliCPU, resource.DecimalSI)},
			}}}
			for _, ds := range daemonSets {
				if admits(node, ds.Pod) {
					t.Fresh = append(t.Fresh, FreshPod{Name: ds.ID(), Requests: resourcehelper.PodRequests(ds.Pod, resourcehelper.PodResourcesOptions{}), ds: ds})
				}
			}
			e.templates[g.Name] = append(e.templates[g.Name], t)
		}
	}
	return e, nil
}

// Explain checks every workload against every group.
func (e *Explainer) Explain(workloads []*Workload) *Report {
	r := &Report{AllFit: true, Workloads: []WorkloadResult{}, Autoscaler: autoscalerNotes(e.src), InitBudgets: initBudgets(e.src), SpotFallbacks: e.spot, PodMTU: podMTU(e.src)}
	for _, w := range workloads {
		wr := e.Workload(w)
		r.AllFit = r.AllFit && wr.Fits
		r.Workloads = append(r.Workloads, wr)
	}
	if p := e.Plan(workloads); len(p.Steps)+len(p.Pending) > 0 {
		r.Plan = p
	}
	return r
}

// Workload checks one workload against every group: autoscaled groups
// first, then the others, each by name.
func (e *Explainer) Workload(w *Workload) WorkloadResult {
	wr := WorkloadResult{Workload: w.ID(), Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Source: w.Pos(), Groups: []GroupResult{}}
	var rest []GroupResult
	for _, g := range e.groups {
		gr := GroupResult{Group: g.Name, Kind: g.Kind}
		if !g.Autoscaled() {
			gr.Verdict = NotAutoscaled
			rest = append(rest, gr)
			continue
		}
		if err := e.errs[g.Name]; err != nil {
			gr.Verdict = Unknown
			gr.Reasons = []Reason{{Kind: ReasonTemplate, Message: "no template node: " + err.Error()}}
			wr.Groups = append(wr.Groups, gr)
			continue
		}
		e.group(g, w, &gr)
		wr.Fits = wr.Fits || gr.Verdict == Fits
		wr.Groups = append(wr.Groups, gr)
	}
	wr.Groups = append(wr.Groups, rest...)
	e.capacity.prefer(&wr)
	return wr
}

// group evaluates w against each zonal template of g. The pod fits the
// group if it fits any zone; otherwise every reason is reported, with the
// zone when it does not hold in every zone.
func (e *Explainer) group(g *model.NodeGroup, w *Workload, gr *GroupResult) {
	tmpls := e.templates[g.Name]
	perZone := make([][]Reason, len(tmpls))
	for i, t := range tmpls {
		rs := Check(w, t)
		if g.Max == 0 {
			rs = append(rs, Reason{Kind: ReasonMaxSize, Message: "max size is 0: the autoscaler never adds a node"})
		}
		rs = append(rs, e.capacity.capReasons(g)...)
		if len(rs) == 0 {
			gr.Zones = append(gr.Zones, t.Zone)
		}
		perZone[i] = rs
	}
	if len(gr.Zones) > 0 {
		if r, short := e.replicasReason(g, w); short {
			gr.Verdict, gr.Zones, gr.Reasons = NoFit, nil, []Reason{r}
			return
		}
		gr.Verdict = Fits
		gr.Notes = append(capacityNotes(g, w), capNotes(e.src, g)...)
		return
	}
	gr.Verdict = NoFit
	count := map[string]int{}
	for _, rs := range perZone {
		for _, r := range rs {
			count[r.Message]++
		}
	}
	seen := map[string]bool{}
	for i, rs := range perZone {
		for _, r := range rs {
			if count[r.Message] == len(perZone) {
				if seen[r.Message] {
					continue
				}
				seen[r.Message] = true
			} else {
				r.Zone = tmpls[i].Zone
			}
			gr.Reasons = append(gr.Reasons, r)
		}
	}
}

// replicasReason counts the workload's replicas against the nodes the
// group can reach (its max per zone × zones, less what a cap admits with
// the other cloud groups at their minimum), at as many replicas per node
// as a fresh node of the group has room for. It returns the reason when
// they are more than the group can hold.
func (e *Explainer) replicasReason(g *model.NodeGroup, w *Workload) (Reason, bool) {
	if w.Replicas <= 1 {
		return Reason{}, false
	}
	var perNode int64
	by := ""
	for _, t := range e.templates[g.Name] {
		if n, what := podsPerNode(w, t); n > perNode {
			perNode, by = n, what
		}
	}
	if perNode < 1 {
		return Reason{}, false
	}
	reach := int64(g.MaxNodes())
	bound := fmt.Sprintf("max %d per zone × %d %s", g.Max, len(g.Zones), plural(len(g.Zones), "zone", "zones"))
	for _, u := range e.capacity.uses() {
		per, ok := u.per(g)
		if !ok || per == 0 {
			continue
		}
		left, known := u.max, true
		for _, o := range e.capacity.cloud {
			if o == g {
				continue
			}
			n, ok := u.per(o)
			known = known && ok
			left -= n * int64(o.MinNodes())
		}
		if n := max(left, 0) / per; known && n < reach {
			reach, bound = n, fmt.Sprintf("%s %d, %d per node of the group, with the other cloud groups at their minimum", u.name, rawMax(u), per)
		}
	}
	need := (int64(w.Replicas) + perNode - 1) / perNode
	if need <= reach {
		return Reason{}, false
	}
	held := reach * perNode
	rest := int64(w.Replicas) - held
	return Reason{Kind: ReasonReplicas, Message: fmt.Sprintf(
		"%d replicas need %d nodes of this group (%d per node, by %s), and it reaches at most %d (%s): the autoscaler grows it for %d of them; %d %s pending",
		w.Replicas, need, perNode, by, reach, bound, held, rest, plural(int(rest), "stays", "stay"))}, true
}

// podsPerNode is how many of w's pods a fresh node made from t holds
// beside the pods every new node runs, and what bounds it (a resource, or
// the node's pod count).
func podsPerNode(w *Workload, t *Template) (int64, string) {
	req := resourcehelper.PodRequests(w.Pod, resourcehelper.PodResourcesOptions{})
	used := corev1.ResourceList{}
	running := int64(0)
	for _, f := range t.Fresh {
		if f.ds == w {
			continue
		}
		running++
		for k, q := range f.Requests {
			u := used[k]
			u.Add(q)
			used[k] = u
		}
	}
	pods := t.Node.Status.Allocatable[corev1.ResourcePods]
	n, by := pods.Value()-running, "the node's pod count (maxPods)"
	for _, name := range slices.Sorted(maps.Keys(req)) {
		q := req[name]
		if q.IsZero() {
			continue
		}
		free := t.Node.Status.Allocatable[name]
		free = free.DeepCopy()
		if u, ok := used[name]; ok {
			free.Sub(u)
		}
		if k := free.MilliValue() / q.MilliValue(); k < n {
			n, by = k, string(name)
		}
	}
	return n, by
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Check returns every reason w's pod does not fit a fresh node made from t;
// none when it fits.
func Check(w *Workload, t *Template) []Reason {
	node, pod := t.Node, w.Pod
	var out []Reason
	logger := klog.Background()
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue // PreferNoSchedule only scores
		}
		if !corev1helpers.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, taint, false) {
			out = append(out, Reason{Kind: ReasonTaint, Message: fmt.Sprintf("taint %s not tolerated", taintString(taint))})
		}
	}
	out = append(out, affinityReasons(pod, node)...)
	out = append(out, resourceReasons(w, t)...)
	return out
}

// admits reports whether a fresh node admits a DaemonSet's pod: the pod
// tolerates its NoSchedule and NoExecute taints and its required node
// affinity matches.
func admits(node *corev1.Node, pod *corev1.Pod) bool {
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if untolerated {
		return false
	}
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return err == nil && ok
}

// affinityReasons reports each nodeSelector entry and each required
// node-affinity term the node does not meet. The verdict is the
// scheduler's (nodeaffinity.GetRequiredNodeAffinity); the breakdown
// evaluates each entry, term and requirement alone with the same helpers.
func affinityReasons(pod *corev1.Pod, node *corev1.Node) []Reason {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	if err != nil {
		return []Reason{{Kind: ReasonNodeAffinity, Message: "invalid required node affinity: " + err.Error()}}
	}
	if ok {
		return nil
	}
	var out []Reason
	for _, k := range model.SortedKeys(pod.Spec.NodeSelector) {
		v := pod.Spec.NodeSelector[k]
		if m, _ := nodeaffinity.NewRequiredNodeAffinity(map[string]string{k: v}, nil).Match(node); !m {
			out = append(out, Reason{Kind: ReasonNodeSelector, Message: fmt.Sprintf("nodeSelector %s=%s not met (%s)", k, v, nodeHas(node, k))})
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		ns := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		if sel, err := nodeaffinity.NewNodeSelector(ns); err == nil && !sel.Match(node) {
			if len(ns.NodeSelectorTerms) == 0 {
				out = append(out, Reason{Kind: ReasonNodeAffinity, Message: "required node affinity has no terms: no node matches"})
			}
			for i, term := range ns.NodeSelectorTerms {
				out = append(out, Reason{Kind: ReasonNodeAffinity, Message: termMessage(i, len(ns.NodeSelectorTerms), term, node)})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, Reason{Kind: ReasonNodeAffinity, Message: "required node affinity or nodeSelector not met"})
	}
	return out
}

// termMessage says which requirements of one node-selector term fail.
func termMessage(i, n int, term corev1.NodeSelectorTerm, node *corev1.Node) string {
	var failed []string
	one := func(t corev1.NodeSelectorTerm, desc, key string, isLabel bool) {
		sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{t}})
		if err != nil {
			failed = append(failed, desc+" (invalid: "+err.Error()+")")
			return
		}
		if !sel.Match(node) {
			if isLabel {
				desc += " (" + nodeHas(node, key) + ")"
			}
			failed = append(failed, desc)
		}
	}
	for _, r := range term.MatchExpressions {
		one(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{r}}, requirementString(r), r.Key, true)
	}
	for _, r := range term.MatchFields {
		one(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{r}}, "field "+requirementString(r), r.Key, false)
	}
	prefix := "required node affinity"
	if n > 1 {
		prefix = fmt.Sprintf("required node affinity term %d of %d", i+1, n)
	}
	if len(failed) == 0 {
		return prefix + " not met (an empty term matches no node)"
	}
	return prefix + " not met: " + strings.Join(failed, "; ")
}

func requirementString(r corev1.NodeSelectorRequirement) string {
	switch r.Operator {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return r.Key + " " + string(r.Operator)
	}
	return r.Key + " " + string(r.Operator) + " [" + strings.Join(r.Values, ", ") + "]"
}

func nodeHas(node *corev1.Node, key string) string {
	if v, ok := node.Labels[key]; ok {
		return "node has " + labels.Set{key: v}.String()
	}
	return "node has no label " + key
}

func taintString(t *corev1.Taint) string { return t.Key + "=" + t.Value + ":" + string(t.Effect) }

// resourceReasons reports each resource the pod requests beyond what a
// fresh node has free: its allocatable minus the requests of the pods
// every new node runs (the scheduler's NodeResourcesFit; requests as
// k8s.io/component-helpers/resource computes them: init containers,
// sidecars, pod-level resources and overhead included).
func resourceReasons(w *Workload, t *Template) []Reason {
	req := resourcehelper.PodRequests(w.Pod, resourcehelper.PodResourcesOptions{})
	used := corev1.ResourceList{}
	for _, f := range t.Fresh {
		if f.ds == w {
			continue // a DaemonSet does not wait for itself
		}
		for k, q := range f.Requests {
			u := used[k]
			u.Add(q)
			used[k] = u
		}
	}
	var out []Reason
	for _, name := range slices.Sorted(maps.Keys(req)) {
		q, k := req[name], string(name)
		if q.IsZero() {
			continue
		}
		alloc := t.Node.Status.Allocatable[name]
		free := alloc.DeepCopy()
		if u, ok := used[name]; ok {
			free.Sub(u)
		}
		if q.Cmp(free) <= 0 {
			continue
		}
		msg := fmt.Sprintf("insufficient %s: requests %s, a new node has %s free (allocatable %s)",
			k, q.String(), human(name, free), human(name, alloc))
		if alloc.IsZero() {
			msg = fmt.Sprintf("insufficient %s: requests %s, the node has none", k, q.String())
		}
		out = append(out, Reason{Kind: ReasonResource, Message: msg, Resource: k,
			Requested: q.String(), Free: exact(name, free), Allocatable: exact(name, alloc)})
	}
	if r, ok := podCountReason(w, t); ok {
		out = append(out, r)
	}
	return out
}

// exact writes a quantity canonically: CPU in cores or millicores, byte
// quantities in bytes.
func exact(name corev1.ResourceName, q resource.Quantity) string {
	if name == corev1.ResourceCPU {
		return resource.NewMilliQuantity(q.MilliValue(), resource.DecimalSI).String()
	}
	return q.String()
}

// human writes a quantity for people: byte quantities in Gi/Mi/Ki with up
// to two decimals (rounded down, so free space is never overstated).
func human(name corev1.ResourceName, q resource.Quantity) string {
	switch name {
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
	default:
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			break
		}
		return exact(name, q)
	}
	v := q.Value()
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Gi", gib}, {"Mi", mib}, {"Ki", kib}} {
		if v >= u.size {
			hundredths := v * 100 / u.size
			s := fmt.Sprintf("%d.%02d", hundredths/100, hundredths%100)
			s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
			return sign + s + u.suffix
		}
	}
	return fmt.Sprintf("%s%d", sign, v)
}
