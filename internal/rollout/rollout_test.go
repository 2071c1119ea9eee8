package rollout_test

import (
	"bufio"
	"bytes"
	"context"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/oauth2/google"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/kube"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/revision"
	"github.com/nodegen/nodegen/internal/rollout"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testcp"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// relabel is the source change the tests roll out: a label of gpu-t4.
const (
	oldPool = `"example.com/pool":     "gpu-burst"`
	newPool = `"example.com/pool":     "gpu-burst-2"`
)

// setup is a cluster whose gpu-t4 group has three nodes made from the
// tests' example, under a workload of three pods with a
// PodDisruptionBudget of maxUnavailable pdbMax, after gpu-t4's label
// changed in the source and terraform apply gave its MIGs the new
// template; cpu-burst has one node, already current.
type setup struct {
	cp       *testcp.ControlPlane
	admin    kubernetes.Interface
	compute  *fakeCompute
	world    *world
	obs      *observer
	dir      string // the changed source
	src      *model.Source
	old, cur map[string]string // revisions by group
	oldNodes []string
	creds    string
	user     *testcp.User // the rollout's identity
	// oldFiles and files are what gen rendered from the source before
	// and after the change.
	oldFiles, files layout.Files
}

func load(t *testing.T, dir string) (*model.Source, layout.Files) {
	t.Helper()
	l, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	return l.Fleet.Clusters[0], files
}

func revisionsOf(t *testing.T, src *model.Source, files layout.Files) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, g := range src.CloudGroups() {
		rev, ok, err := revision.FromKubeEnv(files[layout.KubeEnvPath(g.Name)])
		if err != nil || !ok {
			t.Fatalf("%s: no revision (%v)", g.Name, err)
		}
		out[g.Name] = rev
	}
	return out
}

func newSetup(t *testing.T, pdbMax int, extra map[string]string) *setup {
	return newSetupWith(t, pdbMax, extra, false)
}

// newSetupWith is newSetup; with autoscalerStale the autoscaler's own
// group changes too (a label), and its MIG in the first zone holds one
// node made before the change: a stale group the rollout takes last.
func newSetupWith(t *testing.T, pdbMax int, extra map[string]string, autoscalerStale bool) *setup {
	return newSetupOf(t, pdbMax, extra, autoscalerStale, relabel)
}

// sourceChange is the change of the source a setup's cluster is behind.
type sourceChange int

const (
	// relabel: a label of gpu-t4 changed (oldPool → newPool).
	relabel sourceChange = iota
	// zoneRemoved: gpu-t4's and cpu-burst's second zone removed.
	zoneRemoved
	// groupRenamed: gpu-t4 renamed renamedGPU.
	groupRenamed
)

// renamedGPU is gpu-t4's name after groupRenamed, and gpuName the line
// that names it in the tests' source.
const (
	renamedGPU = "gpu-t4-v2"
	gpuName    = `nodeGroups: "gpu-t4":`
)

// gpuZones and gpuZoneA are gpu-t4's zones in the tests' source, and the
// same without the second zone.
const (
	gpuZones = `zones: ["us-central1-a", "us-central1-b"]`
	gpuZoneA = `zones: ["us-central1-a"]`
)

// newSetupOf is newSetupWith with the source's change: relabel, or
// zoneRemoved: gpu-t4's second zone removed (its label stays), gpu-t4
// has one node in the first zone and two, s.oldNodes, in the second,
// which its MIG there still holds (terraform apply did not delete it); or
// groupRenamed: gpu-t4 is renamedGPU, the old group's MIGs still hold
// its three nodes, s.oldNodes (two in the first zone, one in the
// second), and the new group's MIGs, which terraform apply made, one node
// in the first zone at its revision, where the workload's pods may go
// too.
func newSetupOf(t *testing.T, pdbMax int, extra map[string]string, autoscalerStale bool, change sourceChange) *setup {
	removeZone, renamed := change == zoneRemoved, change == groupRenamed
	// Each test has its own control plane and fake Compute API, and
	// mostly waits (drain timeouts, polls): they run side by side
	// (TestMain).
	t.Parallel()
	cp := testcp.Start(t)
	s := &setup{cp: cp}
	oldSrc, oldFiles := load(t, testsrc.Copy(t, extra))
	b, err := os.ReadFile(filepath.Join(testsrc.Dir(), "gpu-t4.cue"))
	if err != nil {
		t.Fatal(err)
	}
	edits := map[string]string{"gpu-t4.cue": strings.Replace(string(b), oldPool, newPool, 1)}
	if removeZone {
		if !strings.Contains(string(b), gpuZones) {
			t.Fatalf("gpu-t4.cue lacks %s", gpuZones)
		}
		edits["gpu-t4.cue"] = strings.Replace(string(b), gpuZones, gpuZoneA, 1)
		// cpu-burst loses its second zone too, whose MIG has no node.
		cb, err := os.ReadFile(filepath.Join(testsrc.Dir(), "cpu-burst.cue"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(cb), gpuZones) {
			t.Fatalf("cpu-burst.cue lacks %s", gpuZones)
		}
		edits["cpu-burst.cue"] = strings.Replace(string(cb), gpuZones, gpuZoneA, 1)
	}
	if renamed {
		if !strings.Contains(string(b), gpuName) {
			t.Fatalf("gpu-t4.cue lacks %s", gpuName)
		}
		edits["gpu-t4.cue"] = strings.Replace(string(b), gpuName, `nodeGroups: "`+renamedGPU+`":`, 1)
	}
	if autoscalerStale {
		b, err := os.ReadFile(filepath.Join(testsrc.Dir(), "autoscaler.cue"))
		if err != nil {
			t.Fatal(err)
		}
		edits["autoscaler.cue"] = strings.Replace(string(b), `"cluster-autoscaler"`+"\n", `"cluster-autoscaler-2"`+"\n", 1)
	}
	for k, v := range extra {
		edits[k] = v
	}
	s.dir = testsrc.Copy(t, edits)
	var files layout.Files
	s.src, files = load(t, s.dir)
	s.oldFiles, s.files = oldFiles, files
	s.old, s.cur = revisionsOf(t, oldSrc, oldFiles), revisionsOf(t, s.src, files)
	switch {
	case removeZone:
		if !maps.Equal(s.old, s.cur) {
			t.Fatalf("removing a zone should change no revision: %v → %v", s.old, s.cur)
		}
	case renamed:
		if _, has := s.cur["gpu-t4"]; has || s.cur[renamedGPU] == "" || s.old["cpu-burst"] != s.cur["cpu-burst"] {
			t.Fatalf("the rename should take gpu-t4 out and add %s, cpu-burst unchanged: %v → %v", renamedGPU, s.old, s.cur)
		}
	case s.old["gpu-t4"] == s.cur["gpu-t4"] || s.old["cpu-burst"] != s.cur["cpu-burst"] || (s.old["autoscaler"] == s.cur["autoscaler"]) == autoscalerStale:
		t.Fatalf("the label change should change gpu-t4's revision (and the autoscaler's: %v) alone: %v → %v", autoscalerStale, s.old, s.cur)
	}

	cl := &s.src.Cluster
	s.compute = newFakeCompute(t, cl.GCP.Project, cl.GCP.Region)
	s.creds = sharedCredentials
	scripts := map[string]string{}
	groups := map[string]*model.NodeGroup{}
	names := []string{"gpu-t4", "cpu-burst"}
	if autoscalerStale {
		names = append(names, "autoscaler")
	}
	if renamed {
		names = append(names, renamedGPU)
	}
	for _, name := range names {
		g := s.src.NodeGroups[name]
		tags := map[string]layout.Files{"old": oldFiles, "new": files}
		switch {
		case renamed && name == "gpu-t4":
			g, tags = oldSrc.NodeGroups[name], map[string]layout.Files{"old": oldFiles}
		case renamed && name == renamedGPU:
			tags = map[string]layout.Files{"new": files}
		}
		groups[name] = g
		for tag, f := range tags {
			tmpl := cl.Name + "-" + name + "-" + tag
			md := map[string]string{"kube-env": string(f[layout.KubeEnvPath(name)]), "startup-script": string(f[layout.StartupScriptPath(name)])}
			s.compute.addTemplate(tmpl, md)
			scripts[tmpl] = md["startup-script"]
		}
	}
	gpu, cpu := groups["gpu-t4"], groups["cpu-burst"]
	a, bz := oldSrc.NodeGroups["gpu-t4"].Zones[0], oldSrc.NodeGroups["gpu-t4"].Zones[1]
	switch {
	case renamed:
		// The old group's MIGs, which terraform apply did not delete, and
		// the new group's, which it made.
		s.oldNodes = []string{cl.BaseInstanceName(gpu) + "-old1", cl.BaseInstanceName(gpu) + "-old2", cl.BaseInstanceName(gpu) + "-old3"}
		s.compute.addMIG(a, cl.MIGName(gpu, a), cl.BaseInstanceName(gpu), cl.Name+"-gpu-t4-old", s.oldNodes[:2]...)
		s.compute.addMIG(bz, cl.MIGName(gpu, bz), cl.BaseInstanceName(gpu), cl.Name+"-gpu-t4-old", s.oldNodes[2])
		v2 := groups[renamedGPU]
		s.compute.addMIG(a, cl.MIGName(v2, a), cl.BaseInstanceName(v2), cl.Name+"-"+renamedGPU+"-new", cl.BaseInstanceName(v2)+"-ab01")
		s.compute.addMIG(bz, cl.MIGName(v2, bz), cl.BaseInstanceName(v2), cl.Name+"-"+renamedGPU+"-new")
	case removeZone:
		// The world plays the VMs of every MIG of before, the removed
		// zone's included.
		groups["gpu-t4"] = oldSrc.NodeGroups["gpu-t4"]
		s.oldNodes = []string{cl.BaseInstanceName(gpu) + "-gb01", cl.BaseInstanceName(gpu) + "-gb02"}
		s.compute.addMIG(a, cl.MIGName(gpu, a), cl.BaseInstanceName(gpu), cl.Name+"-gpu-t4-new", cl.BaseInstanceName(gpu)+"-ga01")
		s.compute.addMIG(bz, cl.MIGName(gpu, bz), cl.BaseInstanceName(gpu), cl.Name+"-gpu-t4-old", s.oldNodes...)
	default:
		s.oldNodes = []string{cl.BaseInstanceName(gpu) + "-old1", cl.BaseInstanceName(gpu) + "-old2", cl.BaseInstanceName(gpu) + "-old3"}
		s.compute.addMIG(a, cl.MIGName(gpu, a), cl.BaseInstanceName(gpu), cl.Name+"-gpu-t4-old", s.oldNodes...)
		s.compute.addMIG(bz, cl.MIGName(gpu, bz), cl.BaseInstanceName(gpu), cl.Name+"-gpu-t4-new")
	}
	s.compute.addMIG(a, cl.MIGName(cpu, a), cl.BaseInstanceName(cpu), cl.Name+"-cpu-burst-new", cl.BaseInstanceName(cpu)+"-cur1")
	s.compute.addMIG(bz, cl.MIGName(cpu, bz), cl.BaseInstanceName(cpu), cl.Name+"-cpu-burst-new")
	if removeZone {
		groups["cpu-burst"] = oldSrc.NodeGroups["cpu-burst"]
		// Empty MIGs in the removed zone that are not the cluster's own:
		// another cluster's, and one named like the cluster's whose base
		// instance name is not.
		s.compute.addMIG(bz, "other-cpu-burst-"+bz, "other-cpu-burst", cl.Name+"-cpu-burst-new")
		s.compute.addMIG(bz, cl.Name+"-legacy-"+bz, "legacy", cl.Name+"-cpu-burst-new")
		// A MIG named as the cluster's would be for a zone spot-gpu-t4
		// does not have, holding a VM that is no node of the cluster
		// (the world plays no VM of spot-gpu-t4).
		spot := s.src.NodeGroups["spot-gpu-t4"]
		if slices.Contains(spot.Zones, "us-central1-d") {
			t.Fatal("spot-gpu-t4 has us-central1-d")
		}
		s.compute.addMIG("us-central1-d", cl.MIGName(spot, "us-central1-d"), cl.BaseInstanceName(spot), cl.Name+"-cpu-burst-new", cl.BaseInstanceName(spot)+"-xc01")
	}
	// Terraform made every other MIG of the source, empty.
	s.compute.addMissing(s.src, func(g *model.NodeGroup) string { return cl.Name + "-" + g.Name + "-new" }, func(g *model.NodeGroup) map[string]string {
		return map[string]string{"kube-env": string(files[layout.KubeEnvPath(g.Name)]), "startup-script": string(files[layout.StartupScriptPath(g.Name)])}
	})
	settled := 4
	if renamed {
		settled++
	}
	if autoscalerStale {
		as := groups["autoscaler"]
		s.compute.addMIG(a, cl.MIGName(as, a), cl.BaseInstanceName(as), cl.Name+"-autoscaler-old", cl.BaseInstanceName(as)+"-old1")
		s.compute.addMIG(bz, cl.MIGName(as, bz), cl.BaseInstanceName(as), cl.Name+"-autoscaler-new")
		settled++
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	s.admin = kubernetes.NewForConfigOrDie(cfg)
	s.world = &world{t: t, kube: s.admin, compute: s.compute, src: s.src, group: gpu, ns: "shop", app: "web", replicas: 3, scripts: scripts, stopped: map[string]bool{}, dead: map[string]bool{}, marked: map[string][]corev1.Taint{}, unverified: map[string]bool{}}
	if renamed {
		s.world.also = renamedGPU
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := s.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.world.newReplicaSet(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.world.newPDB(ctx, pdbMax); err != nil {
		t.Fatal(err)
	}
	s.obs = &observer{t: t, w: s.world, pods: map[string]*corev1.Pod{}, firstGrace: map[string]int64{}, nodes: map[string]*corev1.Node{}, cordons: map[string]int{},
		cordonedAt: map[string]time.Time{}, protected: map[string]bool{}, cordonedSeq: map[string]int{}, untaintedSeq: map[string]int{}}
	if err := s.obs.watch(ctx); err != nil {
		t.Fatal(err)
	}
	// terraform apply: the old VMs were made from the old template; the
	// MIG now makes new ones from the new.
	go s.world.run(ctx, groups)
	s.waitSettled(t, settled)
	if change == relabel {
		s.compute.setTemplate(a, cl.MIGName(gpu, a), cl.Name+"-gpu-t4-new")
	}
	if autoscalerStale {
		s.compute.setTemplate(a, cl.MIGName(groups["autoscaler"], a), cl.Name+"-autoscaler-new")
	}
	s.obs.mu.Lock()
	s.obs.minUsable = 3
	s.obs.mu.Unlock()
	s.user = s.rolloutUser(t)
	return s
}

// waitSettled waits until the cluster has its nodes and the workload
// its Ready pods, with the budget's status up to date.
func (s *setup) waitSettled(t *testing.T, nodes int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ns, _ := s.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		pods, _ := s.admin.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
		readyPods := 0
		for i := range pods.Items {
			if podReady(&pods.Items[i]) && pods.Items[i].DeletionTimestamp == nil {
				readyPods++
			}
		}
		if ns != nil && len(ns.Items) == nodes && readyPods == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not settle: %d nodes, %d Ready pods", len(ns.Items), readyPods)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rolloutUser is the identity the rollout runs as: RBAC allows it what a
// rollout needs and no more; in particular it may not delete pods, so a
// forced deletion could not even be tried.
func (s *setup) rolloutUser(t *testing.T) *testcp.User {
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "nodegen-rollout"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "persistentvolumes"}, Verbs: []string{"list"}},
	}}
	if _, err := s.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nodegen-rollout"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "nodegen-rollout"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "nodegen-rollout"}}}
	if _, err := s.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The lock: its Lease in kube-system alone (docs/rollout.md's Role).
	lockRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "nodegen-rollout", Namespace: rollout.LockNamespace}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{rollout.LockName}, Verbs: []string{"get", "update"}},
		// The autoscaler's Deployment, read before a MIG leaving the
		// source is drained or deleted (docs/rollout.md's Role).
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{model.AutoscalerFullname}, Verbs: []string{"get"}},
	}}
	if _, err := s.admin.RbacV1().Roles(rollout.LockNamespace).Create(ctx, lockRole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lockBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nodegen-rollout", Namespace: rollout.LockNamespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "nodegen-rollout"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "nodegen-rollout"}}}
	if _, err := s.admin.RbacV1().RoleBindings(rollout.LockNamespace).Create(ctx, lockBinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC's authorizer reads Roles through an informer: a request made
	// right after the create can still be refused. Wait until it sees the
	// last rule written (the lock's), as a SubjectAccessReview answers.
	awaitAllowed(t, s.admin, "nodegen-rollout", authorizationv1.ResourceAttributes{
		Namespace: rollout.LockNamespace, Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Name: rollout.LockName})
	return s.cp.Impersonate(t, "nodegen-rollout")
}

// awaitAllowed waits up to 30 s for the API server's authorizer to allow
// user attrs.
func awaitAllowed(t *testing.T, admin kubernetes.Interface, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		if err == nil && got.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("RBAC does not allow %s %+v after 30s (last answer %+v, error %v)", user, attrs, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runner is a rollout of the test's source as the rollout's user, against
// the fake Compute API, polling every 100 ms and waiting readyTimeout for
// a replacement; its progress is written to the buffer.
func (s *setup) runner(t *testing.T, readyTimeout time.Duration) (*rollout.Runner, *bytes.Buffer) {
	t.Helper()
	k, err := kube.FromKubeconfig(s.user.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := google.DefaultClient(context.Background(), rollout.ComputeScope)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	return &rollout.Runner{Src: s.src, Revisions: s.cur, Kube: k,
		Compute:  &rollout.Compute{Endpoint: s.compute.Endpoint(), HTTP: httpClient},
		Progress: &rollout.Progress{W: &progress}, Poll: 100 * time.Millisecond, ReadyTimeout: readyTimeout}, &progress
}

func (s *setup) args(extra ...string) []string {
	return append([]string{"rollout", "--source", s.dir, "--kubeconfig", s.user.Kubeconfig, "--compute-endpoint", s.compute.Endpoint(), "--poll", "100ms"}, extra...)
}

// checkDone checks the end state of a finished rollout: gpu-t4's MIG holds
// exactly the three replacements, Ready at the new revision; each old node
// was deleted once, through the MIG, its Node gone; cpu-burst untouched;
// the budget never exceeded; no pod deleted by force; no node cordoned
// twice, and never fewer than three usable gpu-t4 nodes.
func (s *setup) checkDone(t *testing.T) {
	t.Helper()
	cl := &s.src.Cluster
	gpu, cpu := s.src.NodeGroups["gpu-t4"], s.src.NodeGroups["cpu-burst"]
	a := gpu.Zones[0]
	var want []string
	for _, o := range s.oldNodes {
		want = append(want, rolloutReplacement(cl, gpu, o, s.cur["gpu-t4"]))
	}
	slices.Sort(want)
	if got := sortedKeys(s.compute.instances(a, cl.MIGName(gpu, a))); !slices.Equal(got, want) {
		t.Errorf("gpu-t4's MIG holds %v, want the replacements %v", got, want)
	}
	created, deleted := s.compute.record()
	slices.Sort(created)
	slices.Sort(deleted)
	if !slices.Equal(created, want) {
		t.Errorf("created %v, want each replacement once: %v", created, want)
	}
	if !slices.Equal(deleted, s.oldNodes) {
		t.Errorf("deleted %v, want each old node once: %v", deleted, s.oldNodes)
	}
	if got := joinNames(s.compute.instances(a, cl.MIGName(cpu, a))); got != cl.BaseInstanceName(cpu)+"-cur1" {
		t.Errorf("cpu-burst's MIG holds %s", got)
	}
	ctx := context.Background()
	nodes, err := s.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if slices.Contains(s.oldNodes, n.Name) {
			t.Errorf("the Node of deleted VM %s is still there", n.Name)
			continue
		}
		for _, k := range []string{"cluster-autoscaler.kubernetes.io/scale-down-disabled", "nodegen.dev/rollout-scale-down-disabled"} {
			if _, has := n.Annotations[k]; has {
				t.Errorf("node %s still has annotation %s after the rollout", n.Name, k)
			}
		}
		if n.Labels[model.RevisionLabel] != s.cur[n.Labels[model.GroupLabel]] || n.Spec.Unschedulable || !ready(&n) || n.Annotations["nodegen.dev/rollout-draining"] != "" {
			t.Errorf("node %s: revision %s (want %s), unschedulable %v, ready %v, annotations %v", n.Name, n.Labels[model.RevisionLabel], s.cur[n.Labels[model.GroupLabel]], n.Spec.Unschedulable, ready(&n), n.Annotations)
		}
	}
	if len(nodes.Items) != 4 {
		t.Errorf("%d nodes, want 4 (3 of gpu-t4, 1 of cpu-burst)", len(nodes.Items))
	}
	pods, _ := s.admin.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		if !slices.Contains(want, p.Spec.NodeName) {
			t.Errorf("pod %s runs on %s, not on a replacement", p.Name, p.Spec.NodeName)
		}
	}
	time.Sleep(300 * time.Millisecond) // the last watch events
	worstPods, worstNodes, forced, cordons, events := s.obs.report()
	t.Logf("observed %d events: at worst %d of 3 pods unavailable, %d usable gpu-t4 nodes; cordons %v", events, worstPods, worstNodes, cordons)
	if worstPods > 1 {
		t.Errorf("%d pods were unavailable at once: the budget allows 1", worstPods)
	}
	if worstPods < 1 {
		t.Errorf("no pod was ever unavailable: the drains did not evict anything")
	}
	if worstNodes < 3 {
		t.Errorf("only %d usable gpu-t4 nodes at one point: the surge came too late", worstNodes)
	}
	if len(forced) > 0 {
		t.Errorf("pods deleted without a graceful deletion first: %v", forced)
	}
	for n, c := range cordons {
		if c > 1 || !slices.Contains(s.oldNodes, n) {
			t.Errorf("node %s cordoned %d times", n, c)
		}
	}
	// The autoscaler could not scale down a batch's nodes: each old node
	// and each replacement carried scale-down-disabled during its batch.
	s.obs.mu.Lock()
	defer s.obs.mu.Unlock()
	for _, n := range append(slices.Clone(s.oldNodes), want...) {
		if !s.obs.protected[n] {
			t.Errorf("node %s never carried cluster-autoscaler.kubernetes.io/scale-down-disabled: \"true\"", n)
		}
	}
}

// A rollout of a 3-node group under a PodDisruptionBudget of
// maxUnavailable 1 replaces every node, within the budget at every step,
// and leaves the up-to-date group alone.
func TestRolloutReplacesWithinBudget(t *testing.T) {
	s := newSetup(t, 1, nil)
	var stdout, stderr bytes.Buffer
	if code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("rollout exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("rollout:\n%s", stdout.String())
	for _, want := range []string{
		"2. gpu-t4 (gce): 3 stale nodes → revision " + s.cur["gpu-t4"],
		"change: label example.com/pool: gpu-burst → gpu-burst-2",
		"1. cpu-burst (gce): up to date at revision " + s.cur["cpu-burst"] + " (1 node), untouched",
		"rollout: cpu-burst/us-central1-a: up to date",
		"rollout done",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	s.checkDone(t)

	// Run again: nothing to do, nothing touched.
	created, deleted := s.compute.record()
	stdout.Reset()
	if code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("second rollout exit %d: %s", code, stderr.String())
	}
	if c2, d2 := s.compute.record(); len(c2) != len(created) || len(d2) != len(deleted) {
		t.Errorf("a second rollout changed the MIGs: created %v, deleted %v", c2, d2)
	}
	if !strings.Contains(stdout.String(), "nothing to do") {
		t.Errorf("second run:\n%s", stdout.String())
	}
}

// A PodDisruptionBudget that never allows an eviction stops the rollout
// with a message naming it, and leaves the cluster as it was.
func TestRolloutBlockedByBudget(t *testing.T) {
	s := newSetup(t, 0, map[string]string{"rollout.cue": "cluster: rollout: drainTimeout: \"30s\"\n"})
	ctx := context.Background()
	before, _ := s.admin.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	var stdout, stderr bytes.Buffer
	code := cli.Main(s.args("--yes"), strings.NewReader(""), &stdout, &stderr)
	t.Logf("rollout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != cli.ExitFindings {
		t.Fatalf("exit %d, want %d", code, cli.ExitFindings)
	}
	for _, want := range []string{"rollout stopped", "did not finish in 30s", "PodDisruptionBudget shop/web allows 0 disruptions", "nothing was deleted"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	cl := &s.src.Cluster
	gpu := s.src.NodeGroups["gpu-t4"]
	if got := sortedKeys(s.compute.instances(gpu.Zones[0], cl.MIGName(gpu, gpu.Zones[0]))); !slices.Equal(got, s.oldNodes) {
		t.Errorf("gpu-t4's MIG holds %v, want the old nodes alone %v", got, s.oldNodes)
	}
	nodes, _ := s.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable || n.Annotations["nodegen.dev/rollout-draining"] != "" {
			t.Errorf("node %s left cordoned (%v)", n.Name, n.Annotations)
		}
	}
	if len(nodes.Items) != 4 {
		t.Errorf("%d nodes, want the 4 of before", len(nodes.Items))
	}
	after, _ := s.admin.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	var b, a []string
	for _, p := range before.Items {
		b = append(b, p.Name+"@"+p.Spec.NodeName)
	}
	for _, p := range after.Items {
		a = append(a, p.Name+"@"+p.Spec.NodeName)
		if p.DeletionTimestamp != nil {
			t.Errorf("pod %s is being deleted", p.Name)
		}
	}
	if !slices.Equal(b, a) {
		t.Errorf("pods before %v, after %v", b, a)
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// nodegenBinary builds cmd/nodegen once.
func nodegenBinary(t *testing.T) string {
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nodegen-rollout-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "nodegen")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/nodegen")
		cmd.Dir = testsrc.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("go build ./cmd/nodegen: %v\n%s", binErr, binPath)
	}
	return binPath
}

// Killed with SIGKILL at a random step (twice) and run again, the real
// binary finishes the rollout: no node lost, none drained twice, no pod
// deleted by force.
func TestRolloutKilledAndResumed(t *testing.T) {
	bin := nodegenBinary(t)
	s := newSetup(t, 1, nil)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	run := func(killAfter int) (bool, string) { return s.runBinary(t, bin, killAfter) }
	for i := 0; i < 2; i++ {
		k := 3 + rng.IntN(20)
		killed, out := run(k)
		t.Logf("run %d, SIGKILL after step %d (killed: %v):\n%s", i+1, k, killed, out)
	}
	_, out := run(0)
	t.Logf("last run:\n%s", out)
	if !strings.Contains(out, "rollout done") {
		t.Errorf("the last run did not finish")
	}
	s.checkDone(t)
}

// runBinary runs the nodegen binary's rollout --yes against the setup,
// killed with SIGKILL after its killAfter-th progress step (0: never),
// and returns whether it was killed and its output. A run not killed
// must succeed.
func (s *setup) runBinary(t *testing.T, bin string, killAfter int) (killed bool, out string) {
	// A run killed before holds the lock until it expires: wait for it.
	cmd := exec.Command(bin, s.args("--yes", "--wait", "1m")...)
	cmd.Env = append(os.Environ(), "GOOGLE_APPLICATION_CREDENTIALS="+s.creds)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stdout)
	steps := 0
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "rollout: ") {
			steps++
			if killAfter > 0 && steps == killAfter {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
				break
			}
		}
	}
	err = cmd.Wait()
	out = strings.Join(lines, "\n")
	if !killed && err != nil {
		t.Fatalf("rollout: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	return killed, out
}
