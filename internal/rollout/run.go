package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/revision"
)

// Cluster is what a rollout asks of the cluster's API, and no more:
// nodes listed, read, merge-patched (cordon, uncordon) and deleted, pods
// listed and evicted through the Eviction API (deleted only past the drain
// timeout with onDrainTimeout "force"), PodDisruptionBudgets, claims and
// persistent volumes listed (VolumeLister), the autoscaler's Deployment
// read (that it no longer names a MIG before the MIG goes), the rollout's
// Lease read, created and updated (the lock). API errors are
// *apierrors.StatusError. *kube.Client is one.
type Cluster interface {
	ListNodes(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	MergePatchNode(ctx context.Context, name string, patch []byte) (*corev1.Node, error)
	DeleteNode(ctx context.Context, name string) error
	ListPods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error)
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	EvictPod(ctx context.Context, eviction *policyv1.Eviction) error
	ListPodDisruptionBudgets(ctx context.Context, namespace string, opts metav1.ListOptions) (*policyv1.PodDisruptionBudgetList, error)
	VolumeLister
	GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
	GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)
	CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// Runner carries out a plan.
type Runner struct {
	Src       *model.Source
	Revisions map[string]string
	Kube      Cluster
	Compute   *Compute
	Progress  *Progress
	// Drain says which pods the drains may evict beyond the default.
	Drain DrainOptions
	// ReadyTimeout is how long a batch waits for its replacements (default:
	// the group's maxNodeProvisionTime and 5 minutes).
	ReadyTimeout time.Duration
	// Poll is how often a wait looks again (default 5s).
	Poll time.Duration
	// Holder is the identity the run holds the rollout's lock with
	// (default: LockHolder), LockWait how long it waits for a lock another
	// run holds (default: not at all), LockTiming the lock's timing
	// (default: DefaultLockTiming).
	Holder     string
	LockWait   time.Duration
	LockTiming LockTiming

	// saidNoAutoscaler: the run said once that it found no autoscaler's
	// Deployment.
	saidNoAutoscaler bool
	// templateRevs caches the revision of each instance template read
	// (Compute.InstanceRevisions).
	templateRevs map[string]string
}

// ErrStopped is returned, wrapped, when the rollout stopped on purpose
// and left the cluster as it was before the step that could not be done.
var ErrStopped = errors.New("rollout stopped")

func (r *Runner) poll() time.Duration {
	if r.Poll > 0 {
		return r.Poll
	}
	return 5 * time.Second
}

// Run brings every cloud group's nodes to its revision, group by group in
// the source's rollout order (model.Source.RolloutOrder), skipping the
// excluded groups. It reads the plan again before every batch. A group
// that cannot be finished (a drain a PodDisruptionBudget blocks, pods held
// back, replacements that do not come up, an API error) is left where its
// stop left it, its later zones untouched, and the rollout goes on with
// the next group; at the end the error names every such group
// (*BlockedError, which wraps ErrStopped). Only an interruption (ctx)
// ends it at once.
//
// First it takes the rollout's lock (Lease LockName in LockNamespace),
// which it holds to the end: another run holding it makes it refuse
// (*LockHeldError, which wraps ErrStopped) before it changes anything,
// unless LockWait lets it wait; losing it stops the run at once
// (ErrLockLost, wrapped in ErrStopped).
func (r *Runner) Run(ctx context.Context) (err error) {
	holder, timing := r.Holder, r.LockTiming
	if holder == "" {
		holder = LockHolder()
	}
	if timing == (LockTiming{}) {
		timing = DefaultLockTiming
	}
	lk, err := acquireLock(ctx, r.Kube, holder, timing, r.LockWait, r.poll(), r.Progress)
	if err != nil {
		return err
	}
	held, stop := lk.hold(ctx)
	defer func() {
		if lost := context.Cause(held); ctx.Err() == nil && errors.Is(lost, ErrLockLost) {
			err = fmt.Errorf("%w: %w; it stopped where it was, and the next run resumes from there", ErrStopped, lost)
		}
		err = errors.Join(err, stop())
	}()
	return r.run(held)
}

func (r *Runner) run(ctx context.Context) error {
	pol := r.Src.Cluster.Rollout
	drainTimeout := pol.DrainTimeout.Duration()
	blocked := &BlockedError{}
	if err := r.resume(ctx); err != nil {
		if ctx.Err() != nil {
			return err
		}
		r.Progress.Step("finishing what an earlier run left: %v", err)
		blocked.Groups = append(blocked.Groups, BlockedGroup{Group: "what an earlier run left", Err: err})
	}
	if err := r.runLeavingAll(ctx, drainTimeout, blocked); err != nil {
		return err
	}
	for _, g := range r.Src.RolloutOrder() {
		if slices.Contains(pol.Exclude, g.Name) {
			r.Progress.Step("%s: excluded (cluster.rollout.exclude), left alone", g.Name)
			continue
		}
		for _, zone := range g.Zones {
			if err := r.runMIG(ctx, g, zone, drainTimeout); err != nil {
				if ctx.Err() != nil {
					return err
				}
				r.Progress.Step("%s/%s: blocked, going on with the other groups: %v", g.Name, zone, err)
				blocked.Groups = append(blocked.Groups, BlockedGroup{Group: g.Name, Zone: zone, Err: err})
				break
			}
		}
	}
	if len(blocked.Groups) > 0 {
		return blocked
	}
	r.Progress.Step("rollout done: every cloud node is at its group's revision")
	return nil
}

// BlockedGroup is a group a rollout could not finish, and why.
type BlockedGroup struct {
	Group, Zone string
	Err         error
}

// BlockedError lists the groups a rollout could not finish; the others
// were rolled.
type BlockedError struct {
	Groups []BlockedGroup
}

func (e *BlockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d %s not finished (the others were rolled); run it again once the cause is gone:", ErrStopped, len(e.Groups), plural(len(e.Groups), "group", "groups"))
	for _, g := range e.Groups {
		msg := g.Err.Error()
		msg = strings.TrimPrefix(msg, ErrStopped.Error()+": ")
		if g.Zone == "" {
			fmt.Fprintf(&b, "\n  %s: %s", g.Group, msg)
		} else {
			fmt.Fprintf(&b, "\n  %s (%s): %s", g.Group, g.Zone, msg)
		}
	}
	return b.String()
}

// Unwrap is ErrStopped and each group's error.
func (e *BlockedError) Unwrap() []error {
	out := []error{ErrStopped}
	for _, g := range e.Groups {
		out = append(out, g.Err)
	}
	return out
}

// runMIG replaces the stale nodes of one zonal MIG, a batch at a time.
func (r *Runner) runMIG(ctx context.Context, g *model.NodeGroup, zone string, drainTimeout time.Duration) error {
	cl := &r.Src.Cluster
	project, mig := cl.GCP.Project, cl.MIGName(g, zone)
	where := g.Name + "/" + zone
	rev := r.Revisions[g.Name]
	checked := false
	for {
		nodes, err := r.Kube.ListNodes(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing nodes: %w", err)
		}
		if forgot, err := r.forgetDeleted(ctx, g, zone, nodes.Items); err != nil {
			return err
		} else if forgot {
			continue
		}
		plan := MakePlan(r.Src, r.Revisions, nodes.Items)
		var mp *MIGPlan
		for i := range plan.Groups {
			if plan.Groups[i].Group == g.Name {
				for j := range plan.Groups[i].MIGs {
					if plan.Groups[i].MIGs[j].Zone == zone {
						mp = &plan.Groups[i].MIGs[j]
					}
				}
			}
		}
		if mp != nil && len(mp.Current)+len(mp.Stale) > 0 {
			// Which nodes are stale is Compute's answer, not their
			// labels', which their kubelets may set.
			if r.templateRevs == nil {
				r.templateRevs = map[string]string{}
			}
			instances, err := r.Compute.InstanceRevisions(ctx, project, zone, mig, r.templateRevs)
			if err != nil {
				return fmt.Errorf("%s: reading the revisions of MIG %s's instances: %w", where, mig, err)
			}
			plan.UseInstanceRevisions(r.Src, g, zone, instances)
		}
		if mp == nil || len(mp.Stale) == 0 {
			if err := r.releaseAll(ctx, g, zone, nodes.Items); err != nil {
				return err
			}
			if checked {
				r.Progress.Step("%s: every node is at revision %s", where, rev)
			} else {
				r.Progress.Step("%s: up to date (revision %s), untouched", where, rev)
			}
			r.checkStaticSize(ctx, g, zone)
			return nil
		}
		if !checked {
			if err := r.checkTemplate(ctx, project, zone, mig, rev); err != nil {
				return err
			}
			checked = true
		}
		batch, err := r.pickBatch(ctx, g, zone, mp.Stale, nodes.Items)
		if err != nil {
			return err
		}
		if err := r.replaceBatch(ctx, g, zone, batch, drainTimeout); err != nil {
			return err
		}
	}
}

// checkStaticSize says when a gce-static MIG's target size is not its
// group's size. Terraform sets it when it creates the MIG and ignores it
// afterwards (a surge raises it for a batch, and an apply then must not
// shrink it: the MIG would delete any VM, an undrained one too), so a
// changed size is carried out by hand. It only says so: an error reading
// the MIG is left to the steps that need it.
func (r *Runner) checkStaticSize(ctx context.Context, g *model.NodeGroup, zone string) {
	if g.Autoscaled() {
		return
	}
	cl := &r.Src.Cluster
	mig := cl.MIGName(g, zone)
	m, err := r.Compute.GetMIG(ctx, cl.GCP.Project, zone, mig)
	if err != nil || m.TargetSize == g.Max {
		return
	}
	how := fmt.Sprintf("grow it with gcloud compute instance-groups managed resize %s --zone %s --size %d", mig, zone, g.Max)
	if m.TargetSize > g.Max {
		how = fmt.Sprintf("shrink it by draining a node (kubectl drain) and deleting it through the MIG (gcloud compute instance-groups managed delete-instances %s --zone %s --instances NAME), not by a resize, which deletes any VM", mig, zone)
	}
	r.Progress.Step("%s/%s: MIG %s has target size %d, the group's size is %d: Terraform sets a gce-static MIG's size only when it creates it; %s", g.Name, zone, mig, m.TargetSize, g.Max, how)
}

// pickBatch takes the next batch of stale nodes: up to cluster.rollout.surge
// of them, for an autoscaled group no more than its max leaves room for in
// the MIG (the autoscaler's --nodes bound), and no more than the
// autoscaler's cluster-wide caps leave room for beside the cluster's nodes
// (capRoom); a replacement already in the MIG takes no more room. A MIG at
// its max, or a group the caps leave no room for, gets no surge: the group
// is skipped, and the error says so.
func (r *Runner) pickBatch(ctx context.Context, g *model.NodeGroup, zone string, stale []StaleNode, nodes []corev1.Node) ([]StaleNode, error) {
	cl := &r.Src.Cluster
	n := min(cl.Rollout.Surge, len(stale))
	capLeft, capped, capWhy := capRoom(r.Src, g, nodes)
	if !g.Autoscaled() && !capped {
		return stale[:n], nil
	}
	project, mig := cl.GCP.Project, cl.MIGName(g, zone)
	var target int
	if g.Autoscaled() {
		m, err := r.Compute.GetMIG(ctx, project, zone, mig)
		if err != nil {
			return nil, err
		}
		target = m.TargetSize
	}
	instances, err := r.Compute.ListManagedInstances(ctx, project, zone, mig)
	if err != nil {
		return nil, err
	}
	room := g.Max - target
	var batch []StaleNode
	byMax := false
	for _, s := range stale {
		if len(batch) == n {
			break
		}
		if slices.ContainsFunc(instances, func(mi ManagedInstance) bool { return mi.Name() == s.Replacement }) {
			batch = append(batch, s)
			continue
		}
		if g.Autoscaled() && room <= 0 {
			byMax = true
			continue
		}
		if capped && capLeft <= 0 {
			continue
		}
		room--
		capLeft--
		batch = append(batch, s)
	}
	if len(batch) == 0 {
		if byMax {
			return nil, fmt.Errorf("%w: %s/%s: MIG %s is at the group's max of %d nodes (target size %d): a surge would exceed it, so the group is skipped; lower its size or raise max, then run the rollout again", ErrStopped, g.Name, zone, mig, g.Max, target)
		}
		return nil, fmt.Errorf("%w: %s/%s: the autoscaler's caps leave no room for a surge: %s, so the group is skipped; raise the cap or make room, then run the rollout again", ErrStopped, g.Name, zone, capWhy)
	}
	if len(batch) < n {
		if byMax {
			r.Progress.Step("%s/%s: surge limited to %d by the group's max of %d nodes (target size %d)", g.Name, zone, len(batch), g.Max, target)
		} else {
			r.Progress.Step("%s/%s: surge limited to %d by the autoscaler's caps: %s", g.Name, zone, len(batch), capWhy)
		}
	}
	return batch, nil
}

// checkTemplate makes sure the MIG creates nodes of the current revision:
// its instance template's kube-env declares it (terraform apply ran).
func (r *Runner) checkTemplate(ctx context.Context, project, zone, mig, rev string) error {
	m, err := r.Compute.GetMIG(ctx, project, zone, mig)
	if err != nil {
		return err
	}
	name, t, err := r.Compute.GetInstanceTemplate(ctx, m.Template())
	if err != nil {
		return err
	}
	env, ok := t.Properties.MetadataValue(model.MetadataKubeEnv)
	got, has, rerr := "", false, error(nil)
	if ok {
		got, has, rerr = revision.FromKubeEnv([]byte(env))
	}
	if !ok || rerr != nil || !has || got != rev {
		return fmt.Errorf("%w: MIG %s (zone %s) makes nodes from instance template %s, whose kube-env declares revision %q, not %s: apply out/terraform first, then run the rollout again", ErrStopped, mig, zone, name, got, rev)
	}
	return nil
}

// replaceBatch replaces the stale nodes of a batch: their replacements
// first, then each old node cordoned, drained and deleted.
func (r *Runner) replaceBatch(ctx context.Context, g *model.NodeGroup, zone string, batch []StaleNode, drainTimeout time.Duration) error {
	cl := &r.Src.Cluster
	project, mig := cl.GCP.Project, cl.MIGName(g, zone)
	where := g.Name + "/" + zone
	for _, s := range batch {
		list, err := r.Kube.ListPods(ctx, metav1.NamespaceAll, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", s.Name).String()})
		if err != nil {
			return fmt.Errorf("listing the pods of %s: %w", s.Name, err)
		}
		local, err := ReadLocalClaims(ctx, r.Kube, list.Items)
		if err != nil {
			return err
		}
		if _, held, _ := evictable(list.Items, r.Drain, local); len(held) > 0 {
			return fmt.Errorf("%w: %s: %s holds pods the rollout does not evict: %s; nothing was changed", ErrStopped, where, s.Name, heldText(held))
		}
	}
	instances, err := r.Compute.ListManagedInstances(ctx, project, zone, mig)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, mi := range instances {
		have[mi.Name()] = true
	}
	var create []string
	for _, s := range batch {
		if !have[s.Replacement] {
			create = append(create, s.Replacement)
		}
	}
	if len(create) > 0 {
		r.Progress.Step("%s: creating %s through MIG %s (surge for %s)", where, strings.Join(create, ", "), mig, names(batch))
		if err := r.Compute.CreateInstances(ctx, project, zone, mig, create); err != nil {
			return err
		}
		if g.Autoscaled() {
			var err error
			if batch, err = r.withinMax(ctx, g, zone, batch, create); err != nil {
				return err
			}
			if len(batch) == 0 {
				// runMIG picks the batch again, from the MIG as it is now.
				return nil
			}
		}
	}
	provision := cl.MaxNodeProvisionTime(g)
	need := len(batch) - cl.Rollout.MaxUnavailable
	if g.Name == cl.Autoscaler.NodeGroup {
		// The node CSR approver runs on this group's nodes: every
		// replacement is verified before a drain may evict it, or
		// nothing would be left to verify them.
		need = len(batch)
	}
	timeout := provision + 5*time.Minute
	if r.ReadyTimeout > 0 {
		timeout = r.ReadyTimeout
	}
	if err := r.waitReady(ctx, g, zone, batch, need, timeout); err != nil {
		if ctx.Err() != nil || !errors.Is(err, ErrStopped) {
			return err
		}
		// Replacements that never came up are removed: they would hold
		// the autoscaler's scale-ups (an upcoming node) and be recreated
		// by autohealing.
		return errors.Join(err, r.undoSurge(ctx, g, zone, replacements(batch)))
	}
	for _, s := range batch {
		if err := r.cordon(ctx, s.Name, r.Revisions[g.Name]); err != nil {
			return err
		}
		r.Progress.Step("%s: cordoned %s; draining it", where, s.Name)
		if err := r.drain(ctx, s.Name, drainTimeout); err != nil {
			if ctx.Err() != nil {
				// Interrupted: the node stays cordoned, and the next run
				// resumes its drain.
				return err
			}
			for _, t := range batch {
				if uerr := r.uncordon(ctx, t.Name); uerr != nil {
					err = errors.Join(err, uerr)
				}
			}
			return errors.Join(err, r.undoSurge(ctx, g, zone, replacements(batch)))
		}
		r.Progress.Step("%s: drained %s", where, s.Name)
	}
	r.Progress.Step("%s: deleting %s through MIG %s", where, names(batch), mig)
	var del []string
	for _, s := range batch {
		del = append(del, s.Name)
	}
	if err := r.Compute.DeleteInstances(ctx, project, zone, mig, del); err != nil {
		return err
	}
	if err := r.waitGone(ctx, where, zone, mig, del); err != nil {
		return err
	}
	for _, s := range batch {
		if err := r.release(ctx, s.Replacement); err != nil {
			return err
		}
	}
	return nil
}

// withinMax reads the MIG's target size again once the batch's
// replacements (created) are made. pickBatch read it before, and the
// autoscaler may have scaled the MIG up in between (Compute has no
// conditional createInstances: each adds to the target size as it is),
// taking it past the group's max, the autoscaler's --nodes bound. As many
// of the new replacements as it is past the max are removed again, before
// any old node is cordoned (none of them runs a pod yet), and their old
// nodes wait for a later batch; the autoscaler's own VMs are left alone.
// It returns the batch that is left.
func (r *Runner) withinMax(ctx context.Context, g *model.NodeGroup, zone string, batch []StaleNode, created []string) ([]StaleNode, error) {
	cl := &r.Src.Cluster
	mig := cl.MIGName(g, zone)
	m, err := r.Compute.GetMIG(ctx, cl.GCP.Project, zone, mig)
	if err != nil {
		return nil, err
	}
	over := m.TargetSize - g.Max
	if over <= 0 {
		return batch, nil
	}
	drop := created[max(0, len(created)-over):]
	r.Progress.Step("%s/%s: MIG %s has target size %d, past the group's max of %d: the autoscaler scaled it up while the replacements were being created; removing %s again", g.Name, zone, mig, m.TargetSize, g.Max, strings.Join(drop, ", "))
	if err := r.undoSurge(ctx, g, zone, drop); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(batch), func(s StaleNode) bool { return slices.Contains(drop, s.Replacement) }), nil
}

func replacements(batch []StaleNode) []string {
	var out []string
	for _, s := range batch {
		out = append(out, s.Replacement)
	}
	return out
}

func names(batch []StaleNode) string {
	var out []string
	for _, s := range batch {
		out = append(out, s.Name)
	}
	return strings.Join(out, ", ")
}

// usable reports whether a node is a usable node of the revision: Ready,
// schedulable, verified (it carries the labels the node CSR approver sets
// once it checked the VM, model.VerifiedLabels, which every placement
// nodegen renders for a cloud group and the docs' workloads select),
// without the group's startup taint, without the taints by which the
// autoscaler marks a node it removes or may remove, and without any
// NoSchedule or NoExecute taint but the group's own.
func usable(g *model.NodeGroup, n *corev1.Node, rev string) (bool, string) {
	if n.Labels[model.RevisionLabel] != rev {
		return false, "revision " + n.Labels[model.RevisionLabel]
	}
	verified := model.VerifiedLabels(g)
	for _, k := range model.SortedKeys(verified) {
		if v := verified[k]; n.Labels[k] != v {
			return false, "not yet verified: no label " + k + "=" + v + " from the node CSR approver"
		}
	}
	if n.Spec.Unschedulable {
		return false, "cordoned"
	}
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return false, "not Ready"
	}
	for _, t := range n.Spec.Taints {
		switch {
		case g.StartupTaint != nil && t.Key == g.StartupTaint.Key:
			return false, "startup taint " + t.Key + " still on"
		case t.Key == ToBeDeletedTaint || t.Key == DeletionCandidateTaint:
			return false, "tainted " + t.Key + " by the autoscaler"
		case t.Effect == corev1.TaintEffectPreferNoSchedule:
		case !slices.ContainsFunc(g.JoinTaints(), func(o model.Taint) bool { return o.Key == t.Key && o.Effect == string(t.Effect) }):
			return false, "tainted " + t.Key + ":" + string(t.Effect)
		}
	}
	return true, ""
}

// The taints by which the Cluster Autoscaler marks a node it is removing,
// or may remove soon (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// cluster-autoscaler/utils/taints/taints.go).
const (
	ToBeDeletedTaint       = "ToBeDeletedByClusterAutoscaler"
	DeletionCandidateTaint = "DeletionCandidateOfClusterAutoscaler"
)

// ScaleDownDisabledAnnotation keeps the Cluster Autoscaler from removing a
// node (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// cluster-autoscaler/core/scaledown/eligibility/eligibility.go). The
// rollout puts it on a batch's replacements and old nodes, and
// ProtectedAnnotation beside it to say it did, so that it removes only
// what it put.
const (
	ScaleDownDisabledAnnotation = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	ProtectedAnnotation         = "nodegen.dev/rollout-scale-down-disabled"
)

// waitReady waits until at least need of the batch's replacements are
// usable nodes of the group's revision.
func (r *Runner) waitReady(ctx context.Context, g *model.NodeGroup, zone string, batch []StaleNode, need int, timeout time.Duration) error {
	if need <= 0 {
		return nil
	}
	rev := r.Revisions[g.Name]
	deadline := time.Now().Add(timeout)
	start := time.Now()
	for {
		ok, waiting := 0, []string{}
		var unregistered []string
		for _, s := range batch {
			n, err := r.Kube.GetNode(ctx, s.Replacement)
			switch {
			case apierrors.IsNotFound(err):
				unregistered = append(unregistered, s.Replacement)
				waiting = append(waiting, s.Replacement+" (not registered)")
			case err != nil:
				return err
			default:
				if n.Annotations[ScaleDownDisabledAnnotation] == "" {
					if err := r.protect(ctx, n.Name); err != nil {
						return err
					}
				}
				if u, why := usable(g, n, rev); u {
					ok++
				} else {
					waiting = append(waiting, s.Replacement+" ("+why+")")
				}
			}
		}
		if ok >= need {
			r.Progress.Done()
			return nil
		}
		if len(unregistered) > 0 {
			// A VM the MIG cannot create (a quota exceeded, a zone out of
			// resources) says so in its last attempt at once; the MIG
			// keeps trying, and waiting for the ready timeout would only
			// hold the autoscaler's scale-ups that long.
			if failed, err := r.createErrors(ctx, zone, r.Src.Cluster.MIGName(g, zone), unregistered); err != nil {
				return err
			} else if failed != "" {
				r.Progress.Done()
				return fmt.Errorf("%w: %s: the MIG could not create %s; nothing was drained", ErrStopped, g.Name, failed)
			}
		}
		if time.Now().After(deadline) {
			r.Progress.Done()
			return fmt.Errorf("%w: %s: replacements not usable after %s: %s; nothing was drained", ErrStopped, g.Name, timeout, strings.Join(waiting, ", "))
		}
		r.Progress.Wait("%s: waiting %s for %s", g.Name, time.Since(start).Round(time.Second), strings.Join(waiting, ", "))
		if err := sleep(ctx, r.poll()); err != nil {
			return err
		}
	}
}

// createErrors names the instances among names that the MIG lists with
// errors from its last attempt to create them, with those errors ("" when
// none has any).
func (r *Runner) createErrors(ctx context.Context, zone, mig string, names []string) (string, error) {
	instances, err := r.Compute.ListManagedInstances(ctx, r.Src.Cluster.GCP.Project, zone, mig)
	if err != nil {
		return "", fmt.Errorf("listing the instances of MIG %s: %w", mig, err)
	}
	var failed []string
	for _, mi := range instances {
		if why := mi.CreateErrors(); why != "" && slices.Contains(names, mi.Name()) {
			failed = append(failed, mi.Name()+" ("+why+")")
		}
	}
	return strings.Join(failed, ", "), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

type nodePatch struct {
	Metadata struct {
		ResourceVersion string             `json:"resourceVersion,omitempty"`
		Annotations     map[string]*string `json:"annotations"`
	} `json:"metadata"`
	Spec *struct {
		Unschedulable bool `json:"unschedulable"`
	} `json:"spec,omitempty"`
}

// patchNode reads the node and merge-patches what edit asks of it (the
// annotations to set or, nil, to remove; the unschedulable field, or
// nil to leave it), on the condition that the node did not change since
// it was read; it tries again on a conflict. It returns the node as it
// was read; edit may return no change (ok false).
func (r *Runner) patchNode(ctx context.Context, name string, edit func(n *corev1.Node) (ann map[string]*string, unschedulable *bool, ok bool)) (*corev1.Node, error) {
	for try := 0; ; try++ {
		n, err := r.Kube.GetNode(ctx, name)
		if err != nil {
			return nil, err
		}
		ann, unsched, ok := edit(n)
		if !ok {
			return n, nil
		}
		var p nodePatch
		p.Metadata.ResourceVersion = n.ResourceVersion
		p.Metadata.Annotations = ann
		if unsched != nil {
			p.Spec = &struct {
				Unschedulable bool `json:"unschedulable"`
			}{*unsched}
		}
		b, _ := json.Marshal(p)
		_, err = r.Kube.MergePatchNode(ctx, name, b)
		if apierrors.IsConflict(err) && try < 5 {
			continue
		}
		return n, err
	}
}

func ptr[T any](v T) *T { return &v }

// protection is the annotations that keep the autoscaler from removing
// the node, unless it has them already (from someone else).
func protection(n *corev1.Node, ann map[string]*string) {
	if _, has := n.Annotations[ScaleDownDisabledAnnotation]; !has {
		ann[ScaleDownDisabledAnnotation], ann[ProtectedAnnotation] = ptr("true"), ptr("true")
	}
}

// cordon marks the node unschedulable, annotates it as draining, and
// protects it from the autoscaler's scale-down.
func (r *Runner) cordon(ctx context.Context, name, rev string) error {
	return r.cordonFor(ctx, name, rev, false)
}

// cordonFor cordons the node to drain it, or (undo) to remove it as an
// unused replacement. CordonedAnnotation records that the rollout made it
// unschedulable: a node someone else cordoned gets the other annotations
// only, and stays cordoned when the rollout lets it go.
func (r *Runner) cordonFor(ctx context.Context, name, rev string, undo bool) error {
	n, err := r.patchNode(ctx, name, func(n *corev1.Node) (map[string]*string, *bool, bool) {
		ann := map[string]*string{DrainingAnnotation: &rev}
		if !n.Spec.Unschedulable {
			ann[CordonedAnnotation] = ptr("true")
		}
		if undo {
			ann[UndoAnnotation] = ptr("true")
		} else {
			protection(n, ann)
		}
		return ann, ptr(true), true
	})
	if err != nil {
		return fmt.Errorf("cordoning %s: %w", name, err)
	}
	if n.Spec.Unschedulable && n.Annotations[CordonedAnnotation] == "" {
		r.Progress.Step("%s was already cordoned (not by the rollout): it stays cordoned whatever happens", name)
	}
	return nil
}

// uncordon lets a node go: it makes it schedulable again if the rollout
// cordoned it, and removes the rollout's annotations.
func (r *Runner) uncordon(ctx context.Context, name string) error {
	n, err := r.patchNode(ctx, name, func(n *corev1.Node) (map[string]*string, *bool, bool) {
		ann := map[string]*string{DrainingAnnotation: nil, UndoAnnotation: nil, CordonedAnnotation: nil}
		if n.Annotations[ProtectedAnnotation] != "" {
			ann[ScaleDownDisabledAnnotation], ann[ProtectedAnnotation] = nil, nil
		}
		var unsched *bool
		if n.Annotations[CordonedAnnotation] != "" {
			unsched = ptr(false)
		}
		return ann, unsched, true
	})
	if err != nil {
		return fmt.Errorf("making %s schedulable again: %w", name, err)
	}
	if n.Annotations[CordonedAnnotation] != "" {
		r.Progress.Step("%s is schedulable again", name)
	} else if n.Spec.Unschedulable {
		r.Progress.Step("%s stays cordoned: it was cordoned before the rollout", name)
	}
	return nil
}

// protect keeps the autoscaler from removing the node (a replacement)
// for the batch.
func (r *Runner) protect(ctx context.Context, name string) error {
	_, err := r.patchNode(ctx, name, func(n *corev1.Node) (map[string]*string, *bool, bool) {
		ann := map[string]*string{}
		protection(n, ann)
		return ann, nil, len(ann) > 0
	})
	if err != nil {
		return fmt.Errorf("protecting %s from scale-down: %w", name, err)
	}
	return nil
}

// release removes the scale-down protection the rollout put on the node.
func (r *Runner) release(ctx context.Context, name string) error {
	n, err := r.patchNode(ctx, name, func(n *corev1.Node) (map[string]*string, *bool, bool) {
		return map[string]*string{ScaleDownDisabledAnnotation: nil, ProtectedAnnotation: nil}, nil, n.Annotations[ProtectedAnnotation] != ""
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing %s from %s: %w", ScaleDownDisabledAnnotation, name, err)
	}
	if n.Annotations[ProtectedAnnotation] != "" {
		r.Progress.Step("%s: the autoscaler may scale it down again", name)
	}
	return nil
}

// releaseAll releases every node of the group's MIG in zone that the
// rollout protected and is not draining: what a batch, or a stopped run,
// left.
func (r *Runner) releaseAll(ctx context.Context, g *model.NodeGroup, zone string, nodes []corev1.Node) error {
	for _, n := range nodes {
		if n.Annotations[ProtectedAnnotation] == "" || n.Annotations[DrainingAnnotation] != "" || n.Labels[model.GroupLabel] != g.Name || n.Labels[model.ZoneLabel] != zone {
			continue
		}
		if err := r.release(ctx, n.Name); err != nil {
			return err
		}
	}
	return nil
}

// drain evicts the node's pods through the Eviction API until none is
// left, retrying an eviction a PodDisruptionBudget refuses until the
// timeout; pods it holds (classify) are never evicted, and stop the drain
// at the timeout. Each eviction asks for the pod's own grace period. When
// the timeout runs out with onDrainTimeout "force", the pods whose
// evictions are still refused are deleted, each with its own grace period,
// and the drain waits for the pods being deleted until their grace period
// is over (a pod still there after it, on a kubelet that does not answer,
// ends with its VM). Otherwise the drain stops, deleting nothing.
func (r *Runner) drain(ctx context.Context, node string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	start := time.Now()
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	refused := map[string]string{}
	forcing := false
	var local LocalClaims
	for first := true; ; first = false {
		list, err := r.Kube.ListPods(ctx, metav1.NamespaceAll, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return fmt.Errorf("listing the pods of %s: %w", node, err)
		}
		// The node is cordoned and a claim's binding does not change:
		// the claims are read at the drain's start.
		if first {
			if local, err = ReadLocalClaims(ctx, r.Kube, list.Items); err != nil {
				return err
			}
		}
		pods, held, _ := evictable(list.Items, r.Drain, local)
		var leaving, overdue []string
		waiting := 0
		for _, p := range pods {
			id := p.Namespace + "/" + p.Name
			if p.DeletionTimestamp != nil {
				// The API server sets the deletion timestamp to the end of
				// the grace period.
				if forcing && time.Now().After(p.DeletionTimestamp.Add(5*time.Second)) {
					overdue = append(overdue, id)
					continue
				}
				leaving = append(leaving, id)
				waiting++
				continue
			}
			waiting++
			if forcing {
				if err := r.Kube.DeletePod(ctx, p.Namespace, p.Name, p.UID); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting %s from %s (cluster.rollout.onDrainTimeout: force): %w", id, node, err)
				}
				r.Progress.Step("deleted %s from %s: its eviction was refused for %s (cluster.rollout.onDrainTimeout: force)", id, node, timeout)
				continue
			}
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
			err := r.Kube.EvictPod(ctx, ev)
			switch {
			case err == nil:
				delete(refused, id)
				r.Progress.Step("evicted %s from %s", id, node)
			case apierrors.IsNotFound(err):
			case apierrors.IsTooManyRequests(err):
				refused[id] = r.budgets(ctx, &p) + ": " + err.Error()
			default:
				return fmt.Errorf("evicting %s from %s: %w", id, node, err)
			}
		}
		if waiting == 0 && len(held) == 0 {
			r.Progress.Done()
			if len(overdue) > 0 {
				r.Progress.Step("%s: still terminating past their grace period, left to end with the VM: %s", node, strings.Join(overdue, ", "))
			}
			return nil
		}
		if time.Now().After(deadline) {
			if len(held) > 0 {
				r.Progress.Done()
				return fmt.Errorf("%w: the drain of %s did not finish in %s (cluster.rollout.drainTimeout): it holds pods the rollout does not evict: %s; nothing was deleted", ErrStopped, node, timeout, heldText(held))
			}
			if r.Src.Cluster.Rollout.OnDrainTimeout == model.OnDrainTimeoutForce {
				if !forcing {
					forcing = true
					continue
				}
			} else {
				r.Progress.Done()
				var why []string
				for _, id := range sortedKeys(refused) {
					why = append(why, id+" ("+refused[id]+")")
				}
				if len(why) == 0 {
					why = append(why, "pods still terminating: "+strings.Join(leaving, ", "))
				}
				return fmt.Errorf("%w: the drain of %s did not finish in %s (cluster.rollout.drainTimeout): the Eviction API refused %s; nothing was deleted", ErrStopped, node, timeout, strings.Join(why, "; "))
			}
		}
		r.Progress.Wait("draining %s for %s: %d pods left", node, time.Since(start).Round(time.Second), waiting+len(held))
		if err := sleep(ctx, r.poll()); err != nil {
			return err
		}
	}
}

// budgets names the PodDisruptionBudgets that select the pod, with the
// disruptions each allows now.
func (r *Runner) budgets(ctx context.Context, p *corev1.Pod) string {
	list, err := r.Kube.ListPodDisruptionBudgets(ctx, p.Namespace, metav1.ListOptions{})
	if err != nil {
		return "PodDisruptionBudget unknown"
	}
	var out []string
	for _, b := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, fmt.Sprintf("PodDisruptionBudget %s/%s allows %d disruptions", b.Namespace, b.Name, b.Status.DisruptionsAllowed))
	}
	if len(out) == 0 {
		return "no PodDisruptionBudget"
	}
	return strings.Join(out, ", ")
}

// waitGone waits until the deleted instances have left the MIG, then
// deletes their Node objects (a VM that no longer exists keeps its Node
// otherwise, without a cloud controller manager).
func (r *Runner) waitGone(ctx context.Context, where, zone, mig string, del []string) error {
	cl := &r.Src.Cluster
	for {
		instances, err := r.Compute.ListManagedInstances(ctx, cl.GCP.Project, zone, mig)
		if notFound(err) {
			// The MIG itself is gone (a deletion of it that a stopped
			// run asked for), and its instances with it.
			instances, err = nil, nil
		}
		if err != nil {
			return err
		}
		left := 0
		for _, mi := range instances {
			if slices.Contains(del, mi.Name()) {
				left++
			}
		}
		if left == 0 {
			break
		}
		r.Progress.Wait("%s: waiting for the MIG to delete %d instances", where, left)
		if err := sleep(ctx, r.poll()); err != nil {
			return err
		}
	}
	r.Progress.Done()
	for _, name := range del {
		if err := r.Kube.DeleteNode(ctx, name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the Node of %s: %w", name, err)
		}
		r.Progress.Step("%s: %s deleted", where, name)
	}
	return nil
}

// forgetDeleted finishes what a stopped run left after deleting a drained
// node's VM: the Node of a VM the MIG no longer has, that the rollout had
// cordoned, is deleted.
func (r *Runner) forgetDeleted(ctx context.Context, g *model.NodeGroup, zone string, nodes []corev1.Node) (bool, error) {
	var draining []string
	for _, n := range nodes {
		if n.Annotations[DrainingAnnotation] == "" || n.Labels[model.GroupLabel] != g.Name || n.Labels[model.ZoneLabel] != zone {
			continue
		}
		draining = append(draining, n.Name)
	}
	if len(draining) == 0 {
		return false, nil
	}
	cl := &r.Src.Cluster
	instances, err := r.Compute.ListManagedInstances(ctx, cl.GCP.Project, zone, cl.MIGName(g, zone))
	if err != nil {
		return false, err
	}
	forgot := false
	for _, name := range draining {
		if slices.ContainsFunc(instances, func(mi ManagedInstance) bool { return mi.Name() == name }) {
			continue
		}
		if err := r.Kube.DeleteNode(ctx, name); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting the Node of %s: %w", name, err)
		}
		forgot = true
		r.Progress.Step("%s/%s: %s replaced (its VM was already deleted)", g.Name, zone, name)
	}
	return forgot, nil
}

func sortedKeys(m map[string]string) []string { return model.SortedKeys(m) }

// undoSurge removes the given replacements of a batch none of whose old
// nodes was deleted, so that a stopped rollout leaves the cluster as it
// was: each is cordoned and marked (UndoAnnotation), and deleted through
// its MIG only if it runs no pod but DaemonSet and mirror pods (otherwise
// it stays, schedulable again, and is named). When the deletion fails (a
// transient Compute error), the mark stays and the next run finishes the
// undo (resume).
func (r *Runner) undoSurge(ctx context.Context, g *model.NodeGroup, zone string, replacements []string) error {
	cl := &r.Src.Cluster
	project, mig := cl.GCP.Project, cl.MIGName(g, zone)
	instances, err := r.Compute.ListManagedInstances(ctx, project, zone, mig)
	if err != nil {
		return err
	}
	var del []string
	for _, name := range replacements {
		_, err := r.Kube.GetNode(ctx, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		registered := err == nil
		if !slices.ContainsFunc(instances, func(mi ManagedInstance) bool { return mi.Name() == name }) {
			if registered {
				if err := r.Kube.DeleteNode(ctx, name); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting the Node of %s: %w", name, err)
				}
				r.Progress.Step("%s/%s: unused replacement %s removed (its VM was already deleted)", g.Name, zone, name)
			}
			continue
		}
		if registered {
			if err := r.cordonFor(ctx, name, r.Revisions[g.Name], true); err != nil {
				return err
			}
			list, err := r.Kube.ListPods(ctx, metav1.NamespaceAll, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String()})
			if err != nil {
				return err
			}
			if pods, held, _ := evictable(list.Items, DrainOptions{}, nil); len(pods)+len(held) > 0 {
				r.Progress.Step("%s/%s: replacement %s already runs %d pods: it stays", g.Name, zone, name, len(pods)+len(held))
				if err := r.uncordon(ctx, name); err != nil {
					return err
				}
				continue
			}
		}
		del = append(del, name)
	}
	if len(del) == 0 {
		return nil
	}
	r.Progress.Step("%s/%s: removing the unused replacements %s", g.Name, zone, strings.Join(del, ", "))
	if err := r.Compute.DeleteInstances(ctx, project, zone, mig, del); err != nil {
		return fmt.Errorf("removing the unused replacements %s (the next run tries again): %w", strings.Join(del, ", "), err)
	}
	return r.waitGone(ctx, g.Name+"/"+zone, zone, mig, del)
}

// resume finishes, before anything else, what an earlier run left on nodes
// the rollout no longer replaces: the scale-down protection of replacements
// is removed (a batch that resumes puts it back), the undo of a surge whose deletion failed
// (UndoAnnotation) is tried again, and a node the rollout cordoned to
// drain it that is no longer stale (the change reverted) or whose group is
// now excluded is made schedulable again, if the rollout cordoned it, and
// rid of the rollout's annotations.
func (r *Runner) resume(ctx context.Context) error {
	nodes, err := r.Kube.ListNodes(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	type mig struct{ group, zone string }
	undo := map[mig][]string{}
	var errs []error
	for _, n := range nodes.Items {
		if n.Annotations[DrainingAnnotation] == "" {
			// A replacement protected by a batch that did not finish:
			// the batch protects it again when it resumes.
			if n.Annotations[ProtectedAnnotation] != "" {
				if err := r.release(ctx, n.Name); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		g := r.Src.NodeGroups[n.Labels[model.GroupLabel]]
		if g == nil || !g.Cloud() {
			continue
		}
		excluded := slices.Contains(r.Src.Cluster.Rollout.Exclude, g.Name)
		if !excluded && !slices.Contains(g.Zones, n.Labels[model.ZoneLabel]) {
			continue // its zone left the source: runLeaving finishes it
		}
		switch {
		case n.Annotations[UndoAnnotation] != "":
			k := mig{g.Name, n.Labels[model.ZoneLabel]}
			undo[k] = append(undo[k], n.Name)
		case excluded || n.Labels[model.RevisionLabel] == r.Revisions[g.Name]:
			why := "at its group's revision again"
			if excluded {
				why = "its group is excluded (cluster.rollout.exclude)"
			}
			r.Progress.Step("%s: no longer replaced (%s)", n.Name, why)
			if err := r.uncordon(ctx, n.Name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(undo), func(a, b mig) int { return strings.Compare(a.group+"/"+a.zone, b.group+"/"+b.zone) }) {
		r.Progress.Step("%s/%s: finishing the removal of unused replacements an earlier run began: %s", k.group, k.zone, strings.Join(undo[k], ", "))
		if err := r.undoSurge(ctx, r.Src.NodeGroups[k.group], k.zone, undo[k]); err != nil {
			if ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runLeavingAll drains and deletes, before any group is rolled, the nodes
// of the MIGs that left the source (Plan.Leaving), and deletes those MIGs
// once empty; a MIG that cannot be finished is added to blocked and the
// others go on. Only an interruption (ctx) returns an error.
func (r *Runner) runLeavingAll(ctx context.Context, drainTimeout time.Duration, blocked *BlockedError) error {
	nodes, err := r.Kube.ListNodes(ctx, metav1.ListOptions{})
	if err != nil {
		blocked.Groups = append(blocked.Groups, BlockedGroup{Group: "the MIGs no longer in the source", Err: fmt.Errorf("listing nodes: %w", err)})
		return nil
	}
	done := map[string]bool{}
	for _, l := range MakePlan(r.Src, r.Revisions, nodes.Items).Leaving {
		done[l.Zone+"/"+l.Name] = true
		if l.Excluded {
			r.Progress.Step("%s/%s: %s, but the group is excluded (cluster.rollout.exclude): its %d nodes are left alone", l.Group, l.Zone, l.Why, len(l.Nodes))
			continue
		}
		if err := r.runLeaving(ctx, l, drainTimeout); err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.Progress.Step("%s/%s: blocked, going on with the others: %v", l.Group, l.Zone, err)
			blocked.Groups = append(blocked.Groups, BlockedGroup{Group: l.Group, Zone: l.Zone, Err: err})
		}
	}
	// The cluster's MIGs that left the source with no node: an autoscaled
	// group's at size 0, or one a stopped run emptied but did not delete.
	migs, err := r.Compute.ListMIGs(ctx, r.Src.Cluster.GCP.Project)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		blocked.Groups = append(blocked.Groups, BlockedGroup{Group: "the MIGs no longer in the source", Err: fmt.Errorf("listing the project's MIGs: %w", err)})
		return nil
	}
	for _, m := range migs {
		l := LeavingMIGOf(r.Src, m)
		if l == nil || done[m.Zone+"/"+m.Name] || l.Excluded {
			continue
		}
		where := l.Group + "/" + l.Zone
		// Only a MIG without any instance is deleted here: instances that
		// are no node of this cluster may be another's whose names
		// happen to match.
		instances, err := r.Compute.ListManagedInstances(ctx, r.Src.Cluster.GCP.Project, m.Zone, m.Name)
		if notFound(err) {
			continue // deleted since it was listed
		}
		if err != nil {
			err = fmt.Errorf("listing the instances of MIG %s: %w", m.Name, err)
		}
		if err == nil && len(instances) > 0 && allDeleting(instances) {
			// The MIG is deleting them: its deletion, asked for by a run
			// that stopped, or its own deleteInstances. Once they are
			// gone it is empty.
			var names []string
			for _, mi := range instances {
				names = append(names, mi.Name())
			}
			r.Progress.Step("%s: %s: MIG %s is deleting its instances %s; waiting for them", where, l.Why, m.Name, strings.Join(names, ", "))
			if err = r.waitGone(ctx, where, m.Zone, m.Name, names); err == nil {
				instances = nil
			}
		}
		if err == nil && len(instances) > 0 {
			var names []string
			for _, mi := range instances {
				names = append(names, mi.Name())
			}
			r.Progress.Step("%s: %s, but MIG %s has instances that are no node of this cluster (%s): left alone; delete them and the MIG yourself once you know what they are", where, l.Why, m.Name, strings.Join(names, ", "))
			continue
		}
		if err == nil {
			if err = r.checkAutoscalerLetGo(ctx, where, m.Zone, m.Name); err != nil {
				if ctx.Err() != nil {
					return err
				}
				r.Progress.Step("%s: blocked, going on with the others: %v", where, err)
				blocked.Groups = append(blocked.Groups, BlockedGroup{Group: l.Group, Zone: l.Zone, Err: err})
				continue
			}
			r.Progress.Step("%s: %s: MIG %s has no instance; deleting it", where, l.Why, m.Name)
			err = r.deleteMIG(ctx, where, m.Zone, m.Name)
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.Progress.Step("%s: blocked, going on with the others: %v", where, err)
			blocked.Groups = append(blocked.Groups, BlockedGroup{Group: l.Group, Zone: l.Zone, Err: err})
			continue
		}
		r.Progress.Step("%s: MIG %s deleted; terraform apply may go on", where, m.Name)
	}
	return nil
}

// runLeaving empties a MIG that left the source: each of its nodes, one
// at a time, is cordoned, drained as a stale node is (budgets respected,
// held pods never evicted) and deleted through the MIG (deleteInstances,
// which lowers its target size); then its instances that never became
// nodes are deleted the same way, and the empty MIG is deleted, so that
// terraform apply, which refuses to delete a MIG (deletion_policy
// "PREVENT"), finds it gone. No replacement is made: the pods go where
// the scheduler and the autoscaler put them.
func (r *Runner) runLeaving(ctx context.Context, l LeavingMIG, drainTimeout time.Duration) error {
	cl := &r.Src.Cluster
	project, where := cl.GCP.Project, l.Group+"/"+l.Zone
	r.Progress.Step("%s: %s: draining and deleting its %d %s, then MIG %s", where, l.Why, len(l.Nodes), plural(len(l.Nodes), "node", "nodes"), l.Name)
	// The autoscaler first: it must not scale the MIG up during the
	// drain, nor name it once it is gone.
	if err := r.checkAutoscalerLetGo(ctx, where, l.Zone, l.Name); err != nil {
		return err
	}
	instances, err := r.Compute.ListManagedInstances(ctx, project, l.Zone, l.Name)
	// gone: the MIG itself is not there (a run that stopped after
	// deleting it); an empty MIG is still to be deleted.
	gone := notFound(err)
	if gone {
		instances, err = nil, nil
	}
	if err != nil {
		return err
	}
	inMIG := func(name string) bool {
		return slices.ContainsFunc(instances, func(mi ManagedInstance) bool { return mi.Name() == name })
	}
	nodes := slices.Clone(l.Nodes)
	// Nodes a rollout began to drain go first.
	slices.SortStableFunc(nodes, func(a, b StaleNode) int {
		switch {
		case a.Draining == b.Draining:
			return 0
		case a.Draining:
			return -1
		}
		return 1
	})
	for _, s := range nodes {
		if !inMIG(s.Name) {
			if s.Draining {
				// Drained and deleted by a run that stopped before it
				// deleted the Node.
				if err := r.Kube.DeleteNode(ctx, s.Name); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting the Node of %s: %w", s.Name, err)
				}
				r.Progress.Step("%s: %s deleted (its VM was already deleted)", where, s.Name)
				continue
			}
			return fmt.Errorf("%w: %s: node %s is not an instance of MIG %s: drain it (kubectl drain) and delete its VM yourself; nothing was changed", ErrStopped, where, s.Name, l.Name)
		}
		list, err := r.Kube.ListPods(ctx, metav1.NamespaceAll, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", s.Name).String()})
		if err != nil {
			return fmt.Errorf("listing the pods of %s: %w", s.Name, err)
		}
		local, err := ReadLocalClaims(ctx, r.Kube, list.Items)
		if err != nil {
			return err
		}
		if _, held, _ := evictable(list.Items, r.Drain, local); len(held) > 0 {
			return fmt.Errorf("%w: %s: %s holds pods the rollout does not evict: %s; it was not drained", ErrStopped, where, s.Name, heldText(held))
		}
		if err := r.cordon(ctx, s.Name, LeavingRevision); err != nil {
			return err
		}
		r.Progress.Step("%s: cordoned %s; draining it", where, s.Name)
		if err := r.drain(ctx, s.Name, drainTimeout); err != nil {
			if ctx.Err() != nil {
				return err
			}
			return errors.Join(err, r.uncordon(ctx, s.Name))
		}
		r.Progress.Step("%s: drained %s; deleting it through MIG %s", where, s.Name, l.Name)
		if err := r.Compute.DeleteInstances(ctx, project, l.Zone, l.Name, []string{s.Name}); err != nil {
			return err
		}
		if err := r.waitGone(ctx, where, l.Zone, l.Name, []string{s.Name}); err != nil {
			return err
		}
	}
	if gone {
		r.Progress.Step("%s: MIG %s is already gone", where, l.Name)
		return nil
	}
	return r.deleteEmptyMIG(ctx, where, l.Zone, l.Name)
}

// deleteEmptyMIG deletes, through the MIG, the instances left in a MIG
// that left the source once its nodes are gone (VMs that never
// registered: nothing runs on them), then the MIG.
func (r *Runner) deleteEmptyMIG(ctx context.Context, where, zone, mig string) error {
	project := r.Src.Cluster.GCP.Project
	instances, err := r.Compute.ListManagedInstances(ctx, project, zone, mig)
	if notFound(err) {
		r.Progress.Step("%s: MIG %s is already gone", where, mig)
		return nil
	}
	if err != nil {
		return err
	}
	var left, deleting []string
	for _, mi := range instances {
		if mi.CurrentAction == "DELETING" {
			deleting = append(deleting, mi.Name())
			continue
		}
		left = append(left, mi.Name())
	}
	if len(deleting) > 0 {
		r.Progress.Step("%s: MIG %s is deleting %s; waiting for them", where, mig, strings.Join(deleting, ", "))
		if err := r.waitGone(ctx, where, zone, mig, deleting); err != nil {
			return err
		}
	}
	if len(left) > 0 {
		nodes, err := r.Kube.ListNodes(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing nodes: %w", err)
		}
		for _, n := range nodes.Items {
			if slices.Contains(left, n.Name) {
				return fmt.Errorf("%w: %s: MIG %s still has node %s, which the rollout did not drain: drain it (kubectl drain), then run the rollout again", ErrStopped, where, mig, n.Name)
			}
		}
		r.Progress.Step("%s: deleting %s through MIG %s (never registered as nodes)", where, strings.Join(left, ", "), mig)
		if err := r.Compute.DeleteInstances(ctx, project, zone, mig, left); err != nil {
			return err
		}
		if err := r.waitGone(ctx, where, zone, mig, left); err != nil {
			return err
		}
	}
	// Again: the autoscaler may have been rolled back since.
	if err := r.checkAutoscalerLetGo(ctx, where, zone, mig); err != nil {
		return err
	}
	if err := r.deleteMIG(ctx, where, zone, mig); err != nil {
		return err
	}
	r.Progress.Step("%s: MIG %s is empty and deleted; terraform apply may go on", where, mig)
	return nil
}

// MIGDeletionWait is how long deleteMIG waits for a MIG that Compute
// would not delete to go by itself.
const MIGDeletionWait = 2 * time.Minute

// deleteMIG deletes an empty MIG that left the source and waits for the
// operation. A run that stopped (killed) after asking for the deletion
// leaves a MIG that Compute goes on deleting: it may be gone by the time
// the next run asks again (404: done), or still there, when Compute
// refuses another operation on it; then deleteMIG waits, up to
// MIGDeletionWait, for the MIG to go. A MIG still there after that, or a
// refusal for want of rights, is the deletion's error.
func (r *Runner) deleteMIG(ctx context.Context, where, zone, mig string) error {
	project := r.Src.Cluster.GCP.Project
	err := r.Compute.DeleteMIG(ctx, project, zone, mig)
	if err == nil {
		return nil
	}
	if notFound(err) {
		r.Progress.Step("%s: MIG %s is already gone (deleted by an earlier run)", where, mig)
		return nil
	}
	var apiErr *APIError
	if ctx.Err() != nil || !errors.As(err, &apiErr) || apiErr.Code == http.StatusUnauthorized || apiErr.Code == http.StatusForbidden {
		return fmt.Errorf("deleting the empty MIG %s: %w", mig, err)
	}
	start := time.Now()
	for {
		_, gerr := r.Compute.GetMIG(ctx, project, zone, mig)
		if notFound(gerr) {
			r.Progress.Done()
			r.Progress.Step("%s: MIG %s was still being deleted (a deletion an earlier run asked for) and is gone now", where, mig)
			return nil
		}
		if time.Since(start) > MIGDeletionWait {
			r.Progress.Done()
			return fmt.Errorf("deleting the empty MIG %s: %w (and it was still there %s later)", mig, err, MIGDeletionWait)
		}
		r.Progress.Wait("%s: Compute refused to delete MIG %s (%s); waiting %s for a deletion already under way", where, mig, apiErr.Message, time.Since(start).Round(time.Second))
		if serr := sleep(ctx, r.poll()); serr != nil {
			return serr
		}
	}
}

// notFound reports whether err is the Compute API's 404.
func notFound(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.Code == http.StatusNotFound
}

// allDeleting reports whether the MIG is deleting each of the instances.
func allDeleting(instances []ManagedInstance) bool {
	for _, mi := range instances {
		if mi.CurrentAction != "DELETING" {
			return false
		}
	}
	return true
}
