package k8stest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testcp"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestAPIServer runs every test of the package against one control plane
// (starting one takes about 3 s and 300 MB), in this order:
//
//  0. OnpremProviderID: the nodes outside the MIGs, before any other test
//     creates Nodes (it maps every Node on the server).
//  1. Manifests: the committed out/ as a user applies it.
//  2. Apply: the test source's rendering (the example plus a second GPU
//     group) applied over it, as after adding a group; the policy is then
//     enforced with both groups.
//  3. LifecycleApply: the same for the node garbage collector.
//  4. Steering (a burst node's kubelet relabelling itself), Remover,
//     Policy and Lifecycle (the collector and its policy), in parallel,
//     each on Nodes of its own.
func TestAPIServer(t *testing.T) {
	cp := testcp.StartWith(t, testcp.Options{Production: true})
	e := newEnv(t, cp)
	if !t.Run("OnpremProviderID", e.testOnpremProviderID) {
		return
	}
	if !t.Run("Manifests", e.testManifests) || !t.Run("Apply", e.testApply) || !t.Run("LifecycleApply", e.testLifecycleApply) {
		return // the rest needs the objects on the server
	}
	t.Run("Live", func(t *testing.T) {
		t.Run("Steering", func(t *testing.T) { t.Parallel(); e.testSteering(t) })
		t.Run("Remover", func(t *testing.T) { t.Parallel(); e.testRemover(t) })
		t.Run("Policy", func(t *testing.T) { t.Parallel(); e.testPolicy(t) })
		t.Run("Lifecycle", func(t *testing.T) { t.Parallel(); e.testLifecycle(t) })
	})
}

// l4Group adds a second GPU group to the example: another startup-taint
// key, two GPUs per node, so that the policy's group→key map has two
// entries and "allocatable below the count" differs from zero.
const l4Group = `nodeGroups: "gpu-l4": {
	kind:        "gce"
	description: "Test-only L4 group with its own startup taint"
	zones: ["us-central1-a"]
	machineType: "g2-standard-24"
	image:       "projects/acme-hybrid-ai/global/images/family/k8s-node-gpu-1-35"
	min:         0
	max:         2
	gpu: {type: "nvidia-l4", count: 2}
	labels: "example.com/pool": "gpu-l4"
	taints: [{key: "nvidia.com/gpu", value: "present", effect: "NoSchedule"}]
	startupTaint: {key: "example.com/l4-not-ready", value: "true", effect: "NoSchedule"}
}
`

// env is the shared state of the tests.
type env struct {
	cp *testcp.ControlPlane
	// client is the admin's, for the tests' own reads and writes; what a
	// user, a pod or a script does goes through kubectl.
	client kubernetes.Interface
	root   string        // the repository
	dir    string        // a temporary folder for the whole test
	src    *model.Source // the test source: the example plus gpu-l4
	files  layout.Files  // its rendering
	// joined holds, per group name, the Node its startup script registers
	// (in its first zone) once the node CSR approver labelled it, as
	// scripttest.InServiceNode returns it.
	joined map[string]*corev1.Node
	seq    atomic.Int64

	// Set by testApply.
	script     string                       // the ConfigMap's script, written to a file
	daemonSets map[string]*appsv1.DaemonSet // live, by group name

	// Set by testLifecycleApply.
	gcScript string           // the collector's ConfigMap script, written to a file
	cronJob  *batchv1.CronJob // live
	gcNode   string           // a Node of the autoscaler's group, where the collector runs
}

func newEnv(t *testing.T, cp *testcp.ControlPlane) *env {
	e := &env{cp: cp, root: testsrc.RepoRoot(), joined: map[string]*corev1.Node{}}
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Admin().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if e.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	e.dir = t.TempDir()
	dir := filepath.Join(e.dir, "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(testsrc.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		if b, err := os.ReadFile(filepath.Join(testsrc.Dir(), de.Name())); err != nil {
			t.Fatal(err)
		} else if err := os.WriteFile(filepath.Join(dir, de.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "gpu-l4.cue"), []byte(l4Group), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := source.Load(dir)
	if err != nil {
		t.Fatalf("loading the test source: %v", err)
	}
	e.src = l.Fleet.Clusters[0]
	if e.files, err = render.All(e.src); err != nil {
		t.Fatalf("rendering the test source: %v", err)
	}
	if n := len(e.src.GPUGroups()); n != 3 {
		t.Fatalf("the test source has %d GPU groups, want 3 (the example's gpu-t4 and spot-gpu-t4, and gpu-l4)", n)
	}
	for _, g := range e.src.Groups() {
		if g.Cloud() {
			e.joined[g.Name] = scripttest.InServiceNode(t, e.src, e.files, g, g.Zones[0])
		}
	}
	return e
}

func (e *env) group(t *testing.T, name string) *model.NodeGroup {
	t.Helper()
	g := e.src.NodeGroups[name]
	if g == nil {
		t.Fatalf("no group %s in the test source", name)
	}
	return g
}

// clients holds clientOf's clientsets, by user.
var clients sync.Map // *testcp.User → kubernetes.Interface

// clientOf returns a client-go clientset with u's credentials, for the
// tests' own setup and reads, which need not start a kubectl process (about
// 150 ms of CPU each) while they poll; what a user, a pod or a script does
// still goes through kubectl. Any error fails the test.
func clientOf(t testing.TB, u *testcp.User) kubernetes.Interface {
	t.Helper()
	if c, ok := clients.Load(u); ok {
		return c.(kubernetes.Interface)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", u.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The tests poll several objects at once: client-go's default limit
	// (5 requests a second) would slow the polls, not the server.
	cfg.QPS, cfg.Burst = 100, 100
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := clients.LoadOrStore(u, c)
	return got.(kubernetes.Interface)
}

// kubectl runs kubectl as u with stdin (if not empty).
func kubectl(t *testing.T, u *testcp.User, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := u.KubectlCmd(t, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	t.Logf("kubectl %s (as %s)", strings.Join(args, " "), u.Name)
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), errb.String(), err
}

// admin runs kubectl as the admin and fails the test on error.
func (e *env) admin(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, _, err := kubectl(t, e.cp.Admin(), stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newNode creates a Node of group g the way the kubelet registers it from
// the JoinConfiguration its startup script writes, with the verified group
// label the node CSR approver then adds: that Node's labels, taints and
// providerID, under a fresh name (hostname label and providerID follow). It checks that the server added only the not-ready taint
// (TaintNodesByCondition), and returns the name.
func (e *env) newNode(t *testing.T, group string) string {
	t.Helper()
	tmpl := e.joined[group]
	if tmpl == nil {
		t.Fatalf("no joined node for group %s", group)
	}
	n := tmpl.DeepCopy()
	name := fmt.Sprintf("%s-%s-n%03d", e.src.Cluster.Name, group, e.seq.Add(1))
	n.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
	n.Spec.ProviderID = strings.TrimSuffix(n.Spec.ProviderID, n.Name) + name
	n.Name = name
	n.Labels[corev1.LabelHostname] = name
	if _, err := e.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := e.node(t, name)
	want := append(slices.Clone(n.Spec.Taints), corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	if !equality.Semantic.DeepEqual(got.Spec.Taints, want) || !equality.Semantic.DeepEqual(got.Labels, n.Labels) ||
		got.Spec.ProviderID != n.Spec.ProviderID {
		t.Fatalf("registered node %s: taints %v labels %v providerID %q; want the join's plus %s:NoSchedule: %v %v %q",
			name, got.Spec.Taints, got.Labels, got.Spec.ProviderID, corev1.TaintNodeNotReady, want, n.Labels, n.Spec.ProviderID)
	}
	return name
}

// node reads a Node as the admin.
func (e *env) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := e.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// As kubectl's JSON has them, which the comparisons take as written.
	n.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
	return n
}

// patchStatus merges patch into the Node's status as the admin.
func (e *env) patchStatus(t *testing.T, node, patch string) {
	t.Helper()
	if _, err := e.client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}

// setGPUs sets the node's nvidia.com/gpu capacity and allocatable, as the
// device plugin (through the kubelet) does.
func (e *env) setGPUs(t *testing.T, node, count string) {
	t.Helper()
	patch := fmt.Sprintf(`{"status":{"capacity":{%[1]q:%[2]q},"allocatable":{%[1]q:%[2]q}}}`, model.GPUResource, count)
	e.patchStatus(t, node, patch)
}

// withoutVolatile returns a copy without what every write changes.
func withoutVolatile(n *corev1.Node) *corev1.Node {
	c := n.DeepCopy()
	c.ResourceVersion = ""
	c.ManagedFields = nil
	return c
}

// withoutTaints returns a copy of n without the taints drop selects.
func withoutTaints(n *corev1.Node, drop func(corev1.Taint) bool) *corev1.Node {
	c := n.DeepCopy()
	c.Spec.Taints = nil
	for _, tn := range n.Spec.Taints {
		if !drop(tn) {
			c.Spec.Taints = append(c.Spec.Taints, tn)
		}
	}
	return c
}

func hasKey(key string) func(corev1.Taint) bool {
	return func(tn corev1.Taint) bool { return tn.Key == key }
}

// sameNode fails the test if got differs from want, everything compared
// (resourceVersion and managedFields too, unless volatile).
func sameNode(t *testing.T, what string, got, want *corev1.Node, volatile bool) {
	t.Helper()
	if volatile {
		got, want = withoutVolatile(got), withoutVolatile(want)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s: node %s is not as expected (- want + got):\n%s", what, want.Name, diff.Diff(want, got))
	}
}

// eventually polls f every 200ms until it returns "" or timeout passes,
// then fails the test with f's last answer, which must say what is
// missing (and so never be empty while it is).
func eventually(t *testing.T, timeout time.Duration, what string, f func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s", what, timeout, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
