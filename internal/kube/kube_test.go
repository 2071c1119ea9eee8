package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/kube"
	"github.com/nodegen/nodegen/internal/rollout"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

var (
	_ rollout.Cluster  = (*kube.Client)(nil)
	_ drift.NodeLister = (*kube.Client)(nil)
)

// request is what a client sent, as the API server received it.
type request struct {
	Method, Path, Query            string
	Accept, ContentType, UserAgent string
	Body                           string
}

// recorder records the requests of the clients whose transport it wraps.
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (rec *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		var body []byte
		if r.Body != nil {
			var err error
			if body, err = io.ReadAll(r.Body); err != nil {
				return nil, err
			}
			r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, request{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Accept: r.Header.Get("Accept"), ContentType: r.Header.Get("Content-Type"), UserAgent: r.Header.Get("User-Agent"),
			Body: strconv.Quote(string(body)),
		})
		rec.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (rec *recorder) take() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.reqs
	rec.reqs = nil
	return out
}

// fixture is a cluster of three nodes, a PodDisruptionBudget that allows
// no disruption now and selects pod shop/guarded, and pod shop/free that
// no budget selects, both running on node n1.
type fixture struct {
	t     *testing.T
	admin kubernetes.Interface
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// node makes sure node name exists and is schedulable.
func (f *fixture) node(name string) {
	f.t.Helper()
	ctx := context.Background()
	n, err := f.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = f.admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "a"}}}, metav1.CreateOptions{})
		f.must(err)
		return
	}
	f.must(err)
	if n.Spec.Unschedulable {
		n.Spec.Unschedulable = false
		_, err = f.admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		f.must(err)
	}
}

// pod makes sure pod shop/name exists, not terminating, running and Ready
// on node n1.
func (f *fixture) pod(name string, labels map[string]string) {
	f.t.Helper()
	ctx := context.Background()
	pods := f.admin.CoreV1().Pods("shop")
	zero := int64(0)
	if p, err := pods.Get(ctx, name, metav1.GetOptions{}); err == nil {
		if p.DeletionTimestamp == nil {
			return
		}
		f.must(pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	} else if !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
	p, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}},
	}, metav1.CreateOptions{})
	f.must(err)
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	f.must(err)
}

func newFixture(t *testing.T, cfg *rest.Config) *fixture {
	ctx := context.Background()
	f := &fixture{t: t, admin: kubernetes.NewForConfigOrDie(cfg)}
	_, err := f.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{})
	f.must(err)
	for _, n := range []string{"n1", "n2", "n3"} {
		f.node(n)
	}
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	_, err = f.admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/ssd0"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}},
	}, metav1.CreateOptions{})
	f.must(err)
	_, err = f.admin.CoreV1().PersistentVolumeClaims("shop").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv1",
			Resources: corev1.VolumeResourceRequirements{Requests: size}},
	}, metav1.CreateOptions{})
	f.must(err)
	f.pod("guarded", map[string]string{"app": "web"})
	f.pod("free", map[string]string{"app": "batch"})
	zero := intstr.FromInt32(0)
	pdb, err := f.admin.PolicyV1().PodDisruptionBudgets("shop").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{})
	f.must(err)
	// What the disruption controller would write: the budget is processed
	// and allows no disruption.
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	_, err = f.admin.PolicyV1().PodDisruptionBudgets("shop").UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	f.must(err)
	return f
}

// result is what a call gave: the names of the objects it returned, or
// its error's status.
type result struct {
	Names  []string
	Status *metav1.Status
	Err    string
}

func resultOf(names []string, err error) result {
	var se *apierrors.StatusError
	switch {
	case err == nil:
		return result{Names: names}
	case errors.As(err, &se):
		return result{Status: &se.ErrStatus}
	default:
		return result{Err: err.Error()}
	}
}

// The names of a list's items; the client returns nil with its errors,
// the typed clientset an empty list.
func nodeNames(l *corev1.NodeList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	return append(out, "continue="+l.Continue)
}

func podNames(l *corev1.PodList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, p := range l.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func budgetNames(l *policyv1.PodDisruptionBudgetList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, b := range l.Items {
		out = append(out, b.Namespace+"/"+b.Name)
	}
	return out
}

// TestSameRequestsAsClientset makes every call of the client and the same
// call of client-go's typed clientset against a real API server, each
// from the same state, and compares the requests they sent (verb, path,
// query, Accept, Content-Type, user agent, body) and what they gave (the
// objects, or the API error with its status).
func TestSameRequestsAsClientset(t *testing.T) {
	cp := testcp.Start(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, cfg)

	rec := &recorder{}
	recorded := rest.CopyConfig(cfg)
	recorded.WrapTransport = rec.wrap
	typed, err := kubernetes.NewForConfig(recorded)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kube.NewForConfig(recorded)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	onN1 := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "n1").String()}
	cordon := []byte(`{"metadata":{"annotations":{"nodegen.dev/draining":"r1"}},"spec":{"unschedulable":true}}`)
	evict := func(name string) *policyv1.Eviction {
		return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}}
	}

	type call func() result
	for _, c := range []struct {
		name         string
		setup        func()
		typed, kube  call
		method, path string
		contentType  string
		want         func(r result) bool
		// ownObject: each run updates a lease of its own (made anew by
		// the call), whose uid, resourceVersion, creation time and
		// managed fields the request's body carries; those are left out
		// of the comparison (leaseBodies), the rest of the body is not.
		ownObject bool
	}{
		{
			name: "list nodes",
			typed: func() result {
				l, err := typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
				return resultOf(nodeNames(l), err)
			},
			kube: func() result {
				l, err := client.ListNodes(ctx, metav1.ListOptions{})
				return resultOf(nodeNames(l), err)
			},
			method: "GET", path: "/api/v1/nodes",
			want: func(r result) bool { return reflect.DeepEqual(r.Names, []string{"n1", "n2", "n3", "continue="}) },
		},
		{
			name: "list nodes, a page",
			typed: func() result {
				l, err := typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 2, LabelSelector: "pool=a"})
				return resultOf(nodeNames(l), err)
			},
			kube: func() result {
				l, err := client.ListNodes(ctx, metav1.ListOptions{Limit: 2, LabelSelector: "pool=a"})
				return resultOf(nodeNames(l), err)
			},
			method: "GET", path: "/api/v1/nodes",
			want: func(r result) bool { return len(r.Names) == 3 && r.Names[2] != "continue=" },
		},
		{
			name: "get node",
			typed: func() result {
				n, err := typed.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
				return resultOf([]string{n.Name}, err)
			},
			kube:   func() result { n, err := client.GetNode(ctx, "n2"); return resultOf(namesOfNode(n), err) },
			method: "GET", path: "/api/v1/nodes/n2",
			want: func(r result) bool { return reflect.DeepEqual(r.Names, []string{"n2"}) },
		},
		{
			name: "get a missing node",
			typed: func() result {
				_, err := typed.CoreV1().Nodes().Get(ctx, "nowhere", metav1.GetOptions{})
				return resultOf(nil, err)
			},
			kube:   func() result { n, err := client.GetNode(ctx, "nowhere"); return resultOf(namesOfNode(n), err) },
			method: "GET", path: "/api/v1/nodes/nowhere",
			want: func(r result) bool { return isStatus(r, apierrors.IsNotFound) },
		},
		{
			name:  "merge-patch a node",
			setup: func() { f.node("n2") },
			typed: func() result {
				n, err := typed.CoreV1().Nodes().Patch(ctx, "n2", types.MergePatchType, cordon, metav1.PatchOptions{})
				return resultOf([]string{n.Name, n.Annotations["nodegen.dev/draining"], boolName(n.Spec.Unschedulable)}, err)
			},
			kube: func() result {
				n, err := client.MergePatchNode(ctx, "n2", cordon)
				if err != nil {
					return resultOf(nil, err)
				}
				return resultOf([]string{n.Name, n.Annotations["nodegen.dev/draining"], boolName(n.Spec.Unschedulable)}, err)
			},
			method: "PATCH", path: "/api/v1/nodes/n2", contentType: "application/merge-patch+json",
			want: func(r result) bool { return reflect.DeepEqual(r.Names, []string{"n2", "r1", "unschedulable"}) },
		},
		{
			name:   "delete a node",
			setup:  func() { f.node("n3") },
			typed:  func() result { return resultOf(nil, typed.CoreV1().Nodes().Delete(ctx, "n3", metav1.DeleteOptions{})) },
			kube:   func() result { return resultOf(nil, client.DeleteNode(ctx, "n3")) },
			method: "DELETE", path: "/api/v1/nodes/n3", contentType: "application/vnd.kubernetes.protobuf",
			want: func(r result) bool { return r.Status == nil && r.Err == "" },
		},
		{
			name: "delete a missing node",
			typed: func() result {
				return resultOf(nil, typed.CoreV1().Nodes().Delete(ctx, "nowhere", metav1.DeleteOptions{}))
			},
			kube:   func() result { return resultOf(nil, client.DeleteNode(ctx, "nowhere")) },
			method: "DELETE", path: "/api/v1/nodes/nowhere",
			want: func(r result) bool { return isStatus(r, apierrors.IsNotFound) },
		},
		{
			name:  "list the pods of a node",
			setup: func() { f.pod("free", map[string]string{"app": "batch"}) },
			typed: func() result {
				l, err := typed.CoreV1().Pods(metav1.NamespaceAll).List(ctx, onN1)
				return resultOf(podNames(l), err)
			},
			kube: func() result {
				l, err := client.ListPods(ctx, metav1.NamespaceAll, onN1)
				return resultOf(podNames(l), err)
			},
			method: "GET", path: "/api/v1/pods",
			want: func(r result) bool { return reflect.DeepEqual(r.Names, []string{"shop/free", "shop/guarded"}) },
		},
		{
			name:   "evict a pod a budget protects",
			typed:  func() result { return resultOf(nil, typed.CoreV1().Pods("shop").EvictV1(ctx, evict("guarded"))) },
			kube:   func() result { return resultOf(nil, client.EvictPod(ctx, evict("guarded"))) },
			method: "POST", path: "/api/v1/namespaces/shop/pods/guarded/eviction", contentType: "application/json",
			want: func(r result) bool { return isStatus(r, apierrors.IsTooManyRequests) },
		},
		{
			name:   "evict a pod",
			setup:  func() { f.pod("free", map[string]string{"app": "batch"}) },
			typed:  func() result { return resultOf(nil, typed.CoreV1().Pods("shop").EvictV1(ctx, evict("free"))) },
			kube:   func() result { return resultOf(nil, client.EvictPod(ctx, evict("free"))) },
			method: "POST", path: "/api/v1/namespaces/shop/pods/free/eviction", contentType: "application/json",
			want: func(r result) bool { return r.Status == nil && r.Err == "" },
		},
		{
			name:   "evict a missing pod",
			typed:  func() result { return resultOf(nil, typed.CoreV1().Pods("shop").EvictV1(ctx, evict("nobody"))) },
			kube:   func() result { return resultOf(nil, client.EvictPod(ctx, evict("nobody"))) },
			method: "POST", path: "/api/v1/namespaces/shop/pods/nobody/eviction",
			want: func(r result) bool { return isStatus(r, apierrors.IsNotFound) },
		},
		{
			// shop/free is the pod the eviction above left terminating: both
			// delete that pod, of one uid.
			name: "delete a pod",
			typed: func() result {
				uid := podUID(f, "free")
				return resultOf(nil, typed.CoreV1().Pods("shop").Delete(ctx, "free", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
			},
			kube:   func() result { return resultOf(nil, client.DeletePod(ctx, "shop", "free", podUID(f, "free"))) },
			method: "DELETE", path: "/api/v1/namespaces/shop/pods/free", contentType: "application/vnd.kubernetes.protobuf",
			want: func(r result) bool { return r.Status == nil && r.Err == "" },
		},
		{
			name:  "delete a pod of another uid",
			setup: func() { f.pod("free", map[string]string{"app": "batch"}) },
			typed: func() result {
				return resultOf(nil, typed.CoreV1().Pods("shop").Delete(ctx, "free", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrUID("0000")}}))
			},
			kube:   func() result { return resultOf(nil, client.DeletePod(ctx, "shop", "free", "0000")) },
			method: "DELETE", path: "/api/v1/namespaces/shop/pods/free",
			want: func(r result) bool { return isStatus(r, apierrors.IsConflict) },
		},
		{
			name: "list budgets",
			typed: func() result {
				l, err := typed.PolicyV1().PodDisruptionBudgets("shop").List(ctx, metav1.ListOptions{})
				return resultOf(budgetNames(l), err)
			},
			kube: func() result {
				l, err := client.ListPodDisruptionBudgets(ctx, "shop", metav1.ListOptions{})
				return resultOf(budgetNames(l), err)
			},
			method: "GET", path: "/apis/policy/v1/namespaces/shop/poddisruptionbudgets",
			want: func(r result) bool { return reflect.DeepEqual(r.Names, []string{"shop/web"}) },
		},
		{
			name: "list claims",
			typed: func() result {
				l, err := typed.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
				return resultOf(claimNames(l), err)
			},
			kube: func() result {
				l, err := client.ListPersistentVolumeClaims(ctx, metav1.NamespaceAll, metav1.ListOptions{})
				return resultOf(claimNames(l), err)
			},
			method: "GET", path: "/api/v1/persistentvolumeclaims",
			want: func(r result) bool { return reflect.DeepEqual(r.Names, []string{"shop/data pv1"}) },
		},
		{
			name: "list persistent volumes",
			typed: func() result {
				l, err := typed.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
				return resultOf(volumeNames(l), err)
			},
			kube: func() result {
				l, err := client.ListPersistentVolumes(ctx, metav1.ListOptions{})
				return resultOf(volumeNames(l), err)
			},
			method: "GET", path: "/api/v1/persistentvolumes",
			want: func(r result) bool { return reflect.DeepEqual(r.Names, []string{"pv1 /mnt/disks/ssd0"}) },
		},
		{
			name:  "get a missing lease",
			setup: func() { f.noLease() },
			typed: func() result {
				l, err := typed.CoordinationV1().Leases("kube-system").Get(ctx, "lock", metav1.GetOptions{})
				return resultOf(leaseNames(l), err)
			},
			kube: func() result {
				l, err := client.GetLease(ctx, "kube-system", "lock")
				return resultOf(leaseNames(l), err)
			},
			method: "GET", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/lock",
			want: func(r result) bool { return isStatus(r, apierrors.IsNotFound) },
		},
		{
			name:  "create a lease",
			setup: func() { f.noLease() },
			typed: func() result {
				l, err := typed.CoordinationV1().Leases("kube-system").Create(ctx, newLease("a"), metav1.CreateOptions{})
				return resultOf(leaseNames(l), err)
			},
			kube: func() result {
				l, err := client.CreateLease(ctx, newLease("a"))
				return resultOf(leaseNames(l), err)
			},
			method: "POST", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", contentType: "application/vnd.kubernetes.protobuf",
			want: func(r result) bool { return reflect.DeepEqual(r.Names, []string{"kube-system/lock a"}) },
		},
		{
			name:  "create a lease that exists",
			setup: func() { f.lease("a") },
			typed: func() result {
				l, err := typed.CoordinationV1().Leases("kube-system").Create(ctx, newLease("b"), metav1.CreateOptions{})
				return resultOf(leaseNames(l), err)
			},
			kube: func() result {
				l, err := client.CreateLease(ctx, newLease("b"))
				return resultOf(leaseNames(l), err)
			},
			method: "POST", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
			want: func(r result) bool { return isStatus(r, apierrors.IsAlreadyExists) },
		},
		{
			name:  "get a lease",
			setup: func() { f.lease("a") },
			typed: func() result {
				l, err := typed.CoordinationV1().Leases("kube-system").Get(ctx, "lock", metav1.GetOptions{})
				return resultOf(leaseNames(l), err)
			},
			kube: func() result {
				l, err := client.GetLease(ctx, "kube-system", "lock")
				return resultOf(leaseNames(l), err)
			},
			method: "GET", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/lock",
			want: func(r result) bool { return reflect.DeepEqual(r.Names, []string{"kube-system/lock a"}) },
		},
		{
			// Each update is of the lease as the setup left it, at its
			// resourceVersion.
			name:  "update a lease",
			setup: func() { f.lease("a") },
			typed: func() result {
				l := f.lease("a")
				l.Spec.HolderIdentity = ptrString("b")
				l, err := typed.CoordinationV1().Leases("kube-system").Update(ctx, l, metav1.UpdateOptions{})
				return resultOf(leaseNames(l), err)
			},
			kube: func() result {
				l := f.lease("a")
				l.Spec.HolderIdentity = ptrString("b")
				l, err := client.UpdateLease(ctx, l)
				return resultOf(leaseNames(l), err)
			},
			method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/lock", contentType: "application/vnd.kubernetes.protobuf",
			ownObject: true,
			want:      func(r result) bool { return reflect.DeepEqual(r.Names, []string{"kube-system/lock b"}) },
		},
		{
			name:  "update a lease changed since it was read",
			setup: func() { f.lease("a") },
			typed: func() result {
				l := f.lease("a")
				l.ResourceVersion = "1"
				l, err := typed.CoordinationV1().Leases("kube-system").Update(ctx, l, metav1.UpdateOptions{})
				return resultOf(leaseNames(l), err)
			},
			kube: func() result {
				l := f.lease("a")
				l.ResourceVersion = "1"
				l, err := client.UpdateLease(ctx, l)
				return resultOf(leaseNames(l), err)
			},
			method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/lock",
			ownObject: true,
			want:      func(r result) bool { return isStatus(r, apierrors.IsConflict) },
		},
		{
			name:  "get a missing deployment",
			setup: func() { f.noDeployment() },
			typed: func() result {
				d, err := typed.AppsV1().Deployments("kube-system").Get(ctx, "cluster-autoscaler", metav1.GetOptions{})
				return resultOf(deploymentArgs(d), err)
			},
			kube: func() result {
				d, err := client.GetDeployment(ctx, "kube-system", "cluster-autoscaler")
				return resultOf(deploymentArgs(d), err)
			},
			method: "GET", path: "/apis/apps/v1/namespaces/kube-system/deployments/cluster-autoscaler",
			want: func(r result) bool { return isStatus(r, apierrors.IsNotFound) },
		},
		{
			name: "get a deployment",
			setup: func() {
				f.deployment("--nodes=0:4:https://www.googleapis.com/compute/v1/projects/p/zones/z/instanceGroups/m")
			},
			typed: func() result {
				d, err := typed.AppsV1().Deployments("kube-system").Get(ctx, "cluster-autoscaler", metav1.GetOptions{})
				return resultOf(deploymentArgs(d), err)
			},
			kube: func() result {
				d, err := client.GetDeployment(ctx, "kube-system", "cluster-autoscaler")
				return resultOf(deploymentArgs(d), err)
			},
			method: "GET", path: "/apis/apps/v1/namespaces/kube-system/deployments/cluster-autoscaler",
			want: func(r result) bool {
				return reflect.DeepEqual(r.Names, []string{"kube-system/cluster-autoscaler --nodes=0:4:https://www.googleapis.com/compute/v1/projects/p/zones/z/instanceGroups/m"})
			},
		},
		{
			name: "a cancelled context",
			typed: func() result {
				_, err := typed.CoreV1().Nodes().List(cancelled, metav1.ListOptions{})
				return resultOf(nil, err)
			},
			kube: func() result {
				_, err := client.ListNodes(cancelled, metav1.ListOptions{})
				if !errors.Is(err, context.Canceled) {
					t.Errorf("a list with a cancelled context: %v, want context.Canceled", err)
				}
				return resultOf(nil, err)
			},
			want: func(r result) bool { return r.Err != "" },
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup()
			}
			rec.take()
			wantRes := c.typed()
			want := rec.take()
			if c.setup != nil {
				c.setup()
			}
			rec.take()
			gotRes := c.kube()
			got := rec.take()
			if c.ownObject {
				got, want = leaseBodies(t, got), leaseBodies(t, want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("requests:\n got %+v\nwant %+v (the typed clientset's)", got, want)
			}
			if !reflect.DeepEqual(gotRes, wantRes) {
				t.Errorf("result: got %+v, want %+v (the typed clientset's)", gotRes, wantRes)
			}
			if !c.want(gotRes) {
				t.Errorf("result %+v is not what the call should give", gotRes)
			}
			if c.method == "" {
				if len(got) != 0 {
					t.Errorf("requests %+v sent, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("requests %+v, want one", got)
			}
			r := got[0]
			if r.Method != c.method || r.Path != c.path || (c.contentType != "" && r.ContentType != c.contentType) {
				t.Errorf("request %s %s (%s), want %s %s (%s)", r.Method, r.Path, r.ContentType, c.method, c.path, c.contentType)
			}
			if r.UserAgent != rest.DefaultKubernetesUserAgent() {
				t.Errorf("user agent %q, want client-go's default %q", r.UserAgent, rest.DefaultKubernetesUserAgent())
			}
		})
	}

	// A user agent the config sets is kept.
	own := rest.CopyConfig(recorded)
	own.UserAgent = "nodegen-test/1"
	c2, err := kube.NewForConfig(own)
	if err != nil {
		t.Fatal(err)
	}
	rec.take()
	if _, err := c2.GetNode(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 1 || got[0].UserAgent != "nodegen-test/1" {
		t.Errorf("requests %+v, want one with the config's user agent nodegen-test/1", got)
	}
}

func isStatus(r result, is func(error) bool) bool {
	return r.Status != nil && is(&apierrors.StatusError{ErrStatus: *r.Status})
}

func boolName(unschedulable bool) string {
	if unschedulable {
		return "unschedulable"
	}
	return "schedulable"
}

// namesOfNode is the node's name; the client returns nil with its errors.
func namesOfNode(n *corev1.Node) []string {
	if n == nil {
		return nil
	}
	return []string{n.Name}
}

// podUID reads the uid of pod shop/name as the admin (a request the
// recorder does not see).
func podUID(f *fixture, name string) types.UID {
	p, err := f.admin.CoreV1().Pods("shop").Get(context.Background(), name, metav1.GetOptions{})
	f.must(err)
	return p.UID
}

func ptrUID(s string) *types.UID { u := types.UID(s); return &u }

// noLease makes sure lease kube-system/lock does not exist.
func (f *fixture) noLease() {
	f.t.Helper()
	err := f.admin.CoordinationV1().Leases("kube-system").Delete(context.Background(), "lock", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
}

// lease makes lease kube-system/lock anew, held by holder, and returns it.
func (f *fixture) lease(holder string) *coordinationv1.Lease {
	f.t.Helper()
	f.noLease()
	l, err := f.admin.CoordinationV1().Leases("kube-system").Create(context.Background(), newLease(holder), metav1.CreateOptions{})
	f.must(err)
	return l
}

// leaseBodies returns reqs with each body, a Lease in protobuf, decoded and
// written again without its uid, resourceVersion, creation time and
// managed fields.
func leaseBodies(t *testing.T, reqs []request) []request {
	t.Helper()
	out := slices.Clone(reqs)
	for i, r := range out {
		body, err := strconv.Unquote(r.Body)
		if err != nil {
			t.Fatalf("request body: %v", err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(body), nil, nil)
		if err != nil {
			t.Fatalf("request body: %v", err)
		}
		l, ok := obj.(*coordinationv1.Lease)
		if !ok {
			t.Fatalf("request body: a %T, want a Lease", obj)
		}
		l.UID, l.ResourceVersion, l.CreationTimestamp, l.ManagedFields = "", "", metav1.Time{}, nil
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		out[i].Body = string(b)
	}
	return out
}

// noDeployment makes sure deployment kube-system/cluster-autoscaler does
// not exist.
func (f *fixture) noDeployment() {
	f.t.Helper()
	err := f.admin.AppsV1().Deployments("kube-system").Delete(context.Background(), "cluster-autoscaler", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
}

// deployment makes deployment kube-system/cluster-autoscaler anew, its
// one container run with args.
func (f *fixture) deployment(args ...string) {
	f.t.Helper()
	f.noDeployment()
	sel := map[string]string{"app": "cluster-autoscaler"}
	_, err := f.admin.AppsV1().Deployments("kube-system").Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-autoscaler", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cluster-autoscaler", Image: "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2", Args: args}}}}},
	}, metav1.CreateOptions{})
	f.must(err)
}

// deploymentArgs is the deployment's namespace/name and its containers'
// args; the client returns nil with its errors.
func deploymentArgs(d *appsv1.Deployment) []string {
	if d == nil || d.Name == "" {
		return nil
	}
	out := []string{d.Namespace + "/" + d.Name}
	for _, c := range d.Spec.Template.Spec.Containers {
		out[0] += " " + strings.Join(c.Args, " ")
	}
	return out
}

func newLease(holder string) *coordinationv1.Lease {
	secs := int32(15)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lock", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs}}
}

func ptrString(s string) *string { return &s }

// leaseNames is the lease's namespace/name and holder; the client returns
// nil with its errors.
func leaseNames(l *coordinationv1.Lease) []string {
	if l == nil || l.Name == "" {
		return nil
	}
	return []string{l.Namespace + "/" + l.Name + " " + *l.Spec.HolderIdentity}
}

func claimNames(l *corev1.PersistentVolumeClaimList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, c := range l.Items {
		out = append(out, c.Namespace+"/"+c.Name+" "+c.Spec.VolumeName)
	}
	return out
}

func volumeNames(l *corev1.PersistentVolumeList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, v := range l.Items {
		out = append(out, v.Name+" "+v.Spec.Local.Path)
	}
	return out
}
