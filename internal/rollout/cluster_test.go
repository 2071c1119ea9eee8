package rollout_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/verify"
)

// world plays, against the real API server, the parts of a cluster a test
// has no process for: the kubelet of every VM the fake MIGs hold (it
// registers the Node its instance template's JoinConfiguration describes,
// reports it Ready, runs the pods bound to it and lets terminating pods
// go), the taint remover (it lifts the startup taint of a Ready node), the
// ReplicaSet controller and scheduler of one workload (it keeps replicas
// pods, binding each new one to a usable node of the group), and the
// disruption controller (it keeps the workload's PodDisruptionBudget's
// status, as the Eviction API reads it). Everything it does is done through
// the API, as admin.
type world struct {
	t       *testing.T
	kube    kubernetes.Interface
	compute *fakeCompute
	src     *model.Source
	group   *model.NodeGroup
	// also is another group whose nodes the workload's pods may go to
	// (the new name of a renamed group), or "".
	also     string
	ns, app  string
	replicas int
	// templates maps an instance template's name to its startup script.
	scripts map[string]string
	// rs is the workload's ReplicaSet, its pods' controller (an object
	// only: no controller reconciles it).
	rs *appsv1.ReplicaSet

	mu      sync.Mutex
	stopped map[string]bool // nodes whose VM is gone
	dead    map[string]bool // VMs that never register (a boot that fails)
	// marked are taints a node has from its registration on, beyond its
	// JoinConfiguration's (put there by someone else before anyone looks).
	marked map[string][]corev1.Taint
	// unverified are VMs the node CSR approver does not verify (yet).
	unverified map[string]bool
	podSeq     int
}

// register creates the Node of a VM as its kubelet does at join: name,
// providerID, labels and taints from the JoinConfiguration of the startup
// script the VM was made from, then status Ready.
func (w *world) register(ctx context.Context, g *model.NodeGroup, zone, instance, script string) error {
	doc, err := verify.JoinTemplateOf([]byte(script))
	if err != nil {
		return err
	}
	for p, v := range map[string]string{model.InstancePlaceholder: instance, model.ZonePlaceholder: zone, model.TokenPlaceholder: "abcdef.0123456789abcdef"} {
		doc = bytes.ReplaceAll(doc, []byte(p), []byte(v))
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(doc)
	if err != nil {
		return err
	}
	j, err := agree.FromJoinConfiguration(cfg)
	if err != nil {
		return err
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: j.Name, Labels: j.Labels}, Spec: corev1.NodeSpec{ProviderID: j.ProviderID}}
	n.Labels[corev1.LabelHostname] = j.Name
	n.Labels[corev1.LabelOSStable], n.Labels[corev1.LabelArchStable] = "linux", g.Arch
	for _, t := range j.Taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	w.mu.Lock()
	n.Spec.Taints = append(n.Spec.Taints, w.marked[instance]...)
	w.mu.Unlock()
	created, err := w.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return w.reportReady(ctx, g, created)
}

// reportReady reports the node Ready, as its kubelet's status loop does
// (step calls it again for a registered node without a status: an update
// that lost a race with someone else's patch).
func (w *world) reportReady(ctx context.Context, g *model.NodeGroup, created *corev1.Node) error {
	created.Status = corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		Capacity:   corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
		NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v" + w.src.Cluster.NodeVersion(g)},
	}
	created.Status.Allocatable = created.Status.Capacity
	_, err := w.kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// run plays the world every tick until ctx ends; an error fails the test.
func (w *world) run(ctx context.Context, groups map[string]*model.NodeGroup) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A conflict, a race with a deletion, and the API server's own
		// transient answers on a loaded machine (a timeout, 429, 503) are
		// tried again at the next tick, as a controller would.
		if err := w.step(ctx, groups); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) &&
			!apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) && !apierrors.IsTooManyRequests(err) && !apierrors.IsServiceUnavailable(err) {
			w.t.Errorf("world: %v", err)
			return
		}
	}
}

func (w *world) step(ctx context.Context, groups map[string]*model.NodeGroup) error {
	nodes, err := w.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	have := map[string]*corev1.Node{}
	for i := range nodes.Items {
		have[nodes.Items[i].Name] = &nodes.Items[i]
	}
	// Kubelets: a VM without a Node registers one; a Node whose VM is gone
	// stops being Ready.
	inMIG := map[string]bool{}
	for _, g := range groups {
		for _, z := range g.Zones {
			for name, tmpl := range w.compute.instances(z, w.src.Cluster.MIGName(g, z)) {
				inMIG[name] = true
				w.mu.Lock()
				dead := w.dead[name]
				w.mu.Unlock()
				if have[name] == nil && !dead {
					if err := w.register(ctx, g, z, name, w.scripts[tmpl]); err != nil {
						return fmt.Errorf("registering %s: %w", name, err)
					}
				}
			}
		}
	}
	for _, n := range nodes.Items {
		if g := groups[n.Labels[model.GroupLabel]]; g != nil && inMIG[n.Name] && len(n.Status.Conditions) == 0 {
			if err := w.reportReady(ctx, g, n.DeepCopy()); err != nil {
				return err
			}
			continue
		}
		if !inMIG[n.Name] && ready(&n) {
			n := n.DeepCopy()
			n.Status.Conditions[0].Status, n.Status.Conditions[0].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
			if _, err := w.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		// The node lifecycle controller: a Ready node loses the not-ready
		// taint the API server put on it at registration
		// (TaintNodesByCondition).
		if ready(&n) && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
			n := n.DeepCopy()
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
			if _, err := w.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				return err
			}
			continue
		}
		// The taint remover: a Ready node of a group with a startup taint
		// loses it (the GPUs validated).
		g := groups[n.Labels[model.GroupLabel]]
		if g != nil && g.StartupTaint != nil && ready(&n) && inMIG[n.Name] {
			var keep []corev1.Taint
			for _, t := range n.Spec.Taints {
				if t.Key != g.StartupTaint.Key {
					keep = append(keep, t)
				}
			}
			if len(keep) != len(n.Spec.Taints) {
				n := n.DeepCopy()
				n.Spec.Taints = keep
				if _, err := w.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
		}
	}
	// The node CSR approver: a registered Node whose VM is an instance of
	// its group's MIG gets the verified group label.
	for _, n := range nodes.Items {
		g := groups[n.Labels[model.GroupLabel]]
		w.mu.Lock()
		skip := w.unverified[n.Name]
		w.mu.Unlock()
		if g == nil || !inMIG[n.Name] || skip || n.Labels[model.VerifiedGroupLabel] == g.Name {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, model.VerifiedGroupLabel, g.Name)
		if _, err := w.kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	return w.workload(ctx)
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// usableFor reports whether the workload's pods may land on n: a Ready,
// schedulable node of the group (or of also) without its startup taint.
func (w *world) usableFor(n *corev1.Node) bool {
	// The workload selects the group by its verified label, as the docs
	// tell workloads to.
	if g := n.Labels[model.VerifiedGroupLabel]; (g != w.group.Name && (w.also == "" || g != w.also)) || n.Spec.Unschedulable || !ready(n) {
		return false
	}
	for _, t := range n.Spec.Taints {
		if w.group.StartupTaint != nil && t.Key == w.group.StartupTaint.Key {
			return false
		}
	}
	return true
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// workload plays the kubelets' side of the pods, the ReplicaSet
// controller and scheduler, and the disruption controller.
func (w *world) workload(ctx context.Context) error {
	all, err := w.kube.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	// The kubelets let any terminating pod of the namespace go; the
	// workload's pods are the ones with its label.
	pods := &corev1.PodList{}
	for i := range all.Items {
		p := &all.Items[i]
		if p.Labels["app"] == w.app {
			pods.Items = append(pods.Items, *p)
			continue
		}
		if p.DeletionTimestamp != nil {
			zero := int64(0)
			if err := w.kube.CoreV1().Pods(w.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	nodes, err := w.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	active := 0
	perNode := map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		switch {
		case p.DeletionTimestamp != nil:
			// The kubelet stopped the containers: the pod goes.
			zero := int64(0)
			if err := w.kube.CoreV1().Pods(w.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			continue
		case !podReady(p):
			// The kubelet started it.
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			if _, err := w.kube.CoreV1().Pods(w.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		active++
		perNode[p.Spec.NodeName]++
	}
	// The ReplicaSet controller and the scheduler: a missing replica is
	// created on the usable node with the fewest of them.
	var candidates []string
	for i := range nodes.Items {
		if w.usableFor(&nodes.Items[i]) {
			candidates = append(candidates, nodes.Items[i].Name)
		}
	}
	sort.Slice(candidates, func(i, j int) bool {
		if perNode[candidates[i]] != perNode[candidates[j]] {
			return perNode[candidates[i]] < perNode[candidates[j]]
		}
		return candidates[i] < candidates[j]
	})
	for ; active < w.replicas && len(candidates) > 0; active++ {
		w.mu.Lock()
		w.podSeq++
		name := fmt.Sprintf("%s-%d", w.app, w.podSeq)
		w.mu.Unlock()
		node := candidates[0]
		perNode[node]++
		sort.SliceStable(candidates, func(i, j int) bool { return perNode[candidates[i]] < perNode[candidates[j]] })
		if err := w.createPod(ctx, name, node); err != nil {
			return err
		}
	}
	return w.disruption(ctx)
}

func (w *world) createPod(ctx context.Context, name, node string) error {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns, Labels: map[string]string{"app": w.app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: w.rs.Name, UID: w.rs.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}
	_, err := w.kube.CoreV1().Pods(w.ns).Create(ctx, p, metav1.CreateOptions{})
	return err
}

// disruption keeps the PodDisruptionBudget's status as the disruption
// controller does: healthy pods are the Ready ones not being deleted and
// not yet counted as disrupted by an eviction.
func (w *world) disruption(ctx context.Context) error {
	pdb, err := w.kube.PolicyV1().PodDisruptionBudgets(w.ns).Get(ctx, w.app, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pods, err := w.kube.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.app})
	if err != nil {
		return err
	}
	disrupted := map[string]metav1.Time{}
	healthy := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if t, ok := pdb.Status.DisruptedPods[p.Name]; ok {
			disrupted[p.Name] = t
			continue
		}
		if podReady(p) {
			healthy++
		}
	}
	maxUnavailable := pdb.Spec.MaxUnavailable.IntValue()
	desired := w.replicas - maxUnavailable
	allowed := max(0, healthy-desired)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptedPods: disrupted, DisruptionsAllowed: int32(allowed),
		CurrentHealthy: int32(healthy), DesiredHealthy: int32(desired), ExpectedPods: int32(w.replicas),
	}
	_, err = w.kube.PolicyV1().PodDisruptionBudgets(w.ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	return err
}

// newPDB creates the workload's PodDisruptionBudget.
func (w *world) newPDB(ctx context.Context, maxUnavailable int) error {
	mu := intstr.FromInt32(int32(maxUnavailable))
	_, err := w.kube.PolicyV1().PodDisruptionBudgets(w.ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: w.app, Namespace: w.ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &mu, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.app}}},
	}, metav1.CreateOptions{})
	return err
}

// observer watches pods and nodes and checks at every event what the
// rollout must never break: no more than maxUnavailable of the workload's
// pods unavailable, never fewer usable nodes of the group than it had, no
// pod deleted other than gracefully, no node cordoned twice.
type observer struct {
	t *testing.T
	w *world

	mu             sync.Mutex
	maxUnavailable int
	minUsable      int
	pods           map[string]*corev1.Pod
	firstGrace     map[string]int64
	nodes          map[string]*corev1.Node
	cordons        map[string]int
	cordonedAt     map[string]time.Time // first cordon
	// cordonedSeq and untaintedSeq are the events (in the watch's order,
	// which is the API server's) at which a node was first cordoned, and
	// first lost the autoscaler's ToBeDeletedByClusterAutoscaler taint.
	cordonedSeq, untaintedSeq map[string]int
	protected                 map[string]bool // seen with scale-down-disabled "true"
	worstPods                 int
	worstNodes                int
	events                    int
	forced                    []string
}

func (o *observer) watch(ctx context.Context) error {
	pw, err := o.w.kube.CoreV1().Pods(o.w.ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + o.w.app})
	if err != nil {
		return err
	}
	nw, err := o.w.kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	o.worstNodes = 1 << 30
	go func() {
		defer pw.Stop()
		defer nw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-pw.ResultChan():
				if !ok {
					return
				}
				p, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					continue
				}
				o.mu.Lock()
				// The first state of a pod being deleted tells how: a
				// graceful deletion (an eviction's) has a grace period; a
				// forced one has none, or no such state at all.
				if _, seen := o.firstGrace[p.Name]; !seen && p.DeletionTimestamp != nil && ev.Type != "DELETED" {
					o.firstGrace[p.Name] = 0
					if p.DeletionGracePeriodSeconds != nil {
						o.firstGrace[p.Name] = *p.DeletionGracePeriodSeconds
					}
				}
				if ev.Type == "DELETED" {
					if g, seen := o.firstGrace[p.Name]; !seen || g == 0 {
						o.forced = append(o.forced, p.Name)
					}
					delete(o.pods, p.Name)
				} else {
					o.pods[p.Name] = p
				}
				o.check()
				o.mu.Unlock()
			case ev, ok := <-nw.ResultChan():
				if !ok {
					return
				}
				n, isNode := ev.Object.(*corev1.Node)
				if !isNode {
					continue
				}
				o.mu.Lock()
				if prev := o.nodes[n.Name]; prev != nil && !prev.Spec.Unschedulable && n.Spec.Unschedulable {
					o.cordons[n.Name]++
					if _, ok := o.cordonedAt[n.Name]; !ok {
						o.cordonedAt[n.Name] = time.Now()
						o.cordonedSeq[n.Name] = o.events
					}
				}
				if prev := o.nodes[n.Name]; prev != nil && hasTaint(prev, "ToBeDeletedByClusterAutoscaler") && !hasTaint(n, "ToBeDeletedByClusterAutoscaler") {
					if _, ok := o.untaintedSeq[n.Name]; !ok {
						o.untaintedSeq[n.Name] = o.events
					}
				}
				if n.Annotations["cluster-autoscaler.kubernetes.io/scale-down-disabled"] == "true" {
					o.protected[n.Name] = true
				}
				if ev.Type == "DELETED" {
					delete(o.nodes, n.Name)
				} else {
					o.nodes[n.Name] = n
				}
				o.check()
				o.mu.Unlock()
			}
		}
	}()
	return nil
}

// check runs at every event, with o.mu held.
func (o *observer) check() {
	o.events++
	available := 0
	for _, p := range o.pods {
		if p.DeletionTimestamp == nil && podReady(p) {
			available++
		}
	}
	// Before the cluster settled (minUsable set), there is nothing to keep.
	if o.minUsable == 0 {
		return
	}
	if un := o.w.replicas - available; un > o.worstPods {
		o.worstPods = un
	}
	usable := 0
	for _, n := range o.nodes {
		if o.w.usableFor(n) {
			usable++
		}
	}
	if usable < o.worstNodes {
		o.worstNodes = usable
	}
}

func (o *observer) report() (worstPods, worstNodes int, forced []string, cordons map[string]int, events int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := map[string]int{}
	for k, v := range o.cordons {
		c[k] = v
	}
	return o.worstPods, o.worstNodes, append([]string(nil), o.forced...), c, o.events
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

func joinNames(m map[string]string) string { return strings.Join(sortedKeys(m), ",") }

// newReplicaSet creates the workload's ReplicaSet, so that its pods name a
// controller as a Deployment's do.
func (w *world) newReplicaSet(ctx context.Context) error {
	n := int32(w.replicas)
	sel := map[string]string{"app": w.app}
	rs, err := w.kube.AppsV1().ReplicaSets(w.ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: w.app, Namespace: w.ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}}}},
	}, metav1.CreateOptions{})
	w.rs = rs
	return err
}
