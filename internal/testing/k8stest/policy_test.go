package k8stest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render/k8s"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// policyDenied starts the error of a request the generated policy denies.
var policyDenied = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ",
	model.TaintRemover.Name(), model.TaintRemover.Name())

// rbacDenied is the error of a request RBAC denies the remover.
func rbacDenied(verb, resource string) string {
	return fmt.Sprintf("User %q cannot %s resource %q in API group \"\" at the cluster scope", model.TaintRemover.User(), verb, resource)
}

// Identities a policy case acts as.
const (
	asOwnPod   = "own"   // token bound to a remover Pod on the node
	asOtherPod = "other" // token bound to a remover Pod on another node of the group
	asPlain    = "plain" // token of the ServiceAccount without a Pod (no node name): TokenRequest without boundObjectRef
	asBroad    = "broad" // the ServiceAccount impersonated in broadGroup (RBAC allows all on nodes)
)

type policyCase struct {
	name  string
	group string
	setup []string // admin kubectl args run before; NODE is the node's name
	as    string
	args  []string                  // the request; NODE is the node's name
	stdin func(*corev1.Node) string // built from the node before the request
	// created is true when the request creates the Node NODE-new, which
	// must not exist afterwards.
	created bool
	// Exactly one of these: the taints that go or the taint that is added
	// (allowed), the policy's message, or RBAC's.
	removes  func(corev1.Taint) bool
	adds     *corev1.Taint
	policy   string
	rbacVerb string
	rbacRes  string
}

func (e *env) testPolicy(t *testing.T) {
	t4, l4 := e.group(t, "gpu-t4"), e.group(t, "gpu-l4")
	k4, kl4 := t4.StartupTaint.Key, l4.StartupTaint.Key
	onlyKeyEffect := func(key string, effect corev1.TaintEffect) func(corev1.Taint) bool {
		return func(tn corev1.Taint) bool { return tn.Key == key && tn.Effect == effect }
	}
	taintMsg := func(key string) string {
		return "the taint remover may only remove the taint " + key + " from node NODE, or add " + key + "=true:NoSchedule to it when it has no taint with that key"
	}
	noClaim := "the taint remover may change a node only with a pod-bound token that names its node (" + nodeNameExtra + "); this request has none"
	st4 := &corev1.Taint{Key: k4, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	untaint4 := []string{"taint", "node", "NODE", k4 + "-"}
	statusPut := func(n *corev1.Node) string {
		n = withoutVolatile(n)
		gpus := corev1.ResourceList{model.GPUResource: resource.MustParse("8")}
		n.Status.Capacity, n.Status.Allocatable = gpus, gpus
		b, _ := json.Marshal(n)
		return string(b)
	}
	newNode := func(n *corev1.Node) string {
		n = withoutVolatile(n)
		n.Name += "-new"
		n.UID = ""
		n.CreationTimestamp.Reset()
		b, _ := json.Marshal(n)
		return string(b)
	}
	cases := []policyCase{
		// Allowed: the one job, on its own node with a pod-bound token.
		{name: "RemoveStartupTaint", group: "gpu-t4", as: asOwnPod, args: []string{"taint", "node", "NODE", k4 + "-"}, removes: hasKey(k4)},
		{name: "RemoveStartupTaintL4", group: "gpu-l4", as: asOwnPod, args: []string{"taint", "node", "NODE", kl4 + "-"}, removes: hasKey(kl4)},
		// And adding it back, exactly, to a node that lost it.
		{name: "AddStartupTaintBack", group: "gpu-t4", setup: untaint4, as: asOwnPod,
			args: []string{"taint", "node", "NODE", k4 + "=true:NoSchedule"}, adds: st4},

		// Denied: a token without a node claim (legacy, kubectl create token).
		{name: "RemoveStartupTaintNoNodeInToken", group: "gpu-l4", as: asPlain, args: []string{"taint", "node", "NODE", kl4 + "-"}, policy: noClaim},
		{name: "AddStartupTaintNoNodeInToken", group: "gpu-t4", setup: untaint4, as: asPlain,
			args: []string{"taint", "node", "NODE", k4 + "=true:NoSchedule"}, policy: noClaim},

		// Denied: every other addition.
		{name: "AddStartupTaintOtherValue", group: "gpu-t4", setup: untaint4, as: asOwnPod,
			args: []string{"taint", "node", "NODE", k4 + "=false:NoSchedule"}, policy: taintMsg(k4)},
		{name: "AddStartupTaintOtherEffect", group: "gpu-t4", setup: untaint4, as: asOwnPod,
			args: []string{"taint", "node", "NODE", k4 + "=true:NoExecute"}, policy: taintMsg(k4)},
		{name: "AddStartupTaintTwice", group: "gpu-t4", setup: untaint4, as: asOwnPod,
			args:   []string{"patch", "node", "NODE", "--type=json", "-p", `[{"op":"add","path":"/spec/taints/-","value":{"key":"` + k4 + `","value":"true","effect":"NoSchedule"}},{"op":"add","path":"/spec/taints/-","value":{"key":"` + k4 + `","value":"true","effect":"NoExecute"}}]`},
			policy: taintMsg(k4)},
		{name: "AddStartupTaintAndAnother", group: "gpu-t4", setup: untaint4, as: asOwnPod,
			args: []string{"taint", "node", "NODE", k4 + "=true:NoSchedule", "example.com/extra=x:NoSchedule"}, policy: taintMsg(k4)},
		{name: "AddStartupTaintWithTimeAdded", group: "gpu-t4", setup: untaint4, as: asOwnPod,
			args:   []string{"patch", "node", "NODE", "--type=json", "-p", `[{"op":"add","path":"/spec/taints/-","value":{"key":"` + k4 + `","value":"true","effect":"NoSchedule","timeAdded":"2026-01-01T00:00:00Z"}}]`},
			policy: taintMsg(k4)},
		{name: "AddAnotherGroupsStartupTaint", group: "gpu-l4", setup: []string{"taint", "node", "NODE", kl4 + "-"}, as: asOwnPod,
			args: []string{"taint", "node", "NODE", k4 + "=true:NoSchedule"}, policy: taintMsg(kl4)},
		{name: "AddStartupTaintOnAnotherNode", group: "gpu-t4", setup: untaint4, as: asOtherPod,
			args: []string{"taint", "node", "NODE", k4 + "=true:NoSchedule"}, policy: "the taint remover of node OTHER may not change node NODE"},
		{name: "AddStartupTaintToCPUNode", group: "cpu-burst", as: asOwnPod,
			args:   []string{"taint", "node", "NODE", k4 + "=true:NoSchedule"},
			policy: "node NODE is in no GPU node group with a startup taint (" + model.VerifiedGroupLabel + "=cpu-burst)"},
		{name: "RemoveOneOfTwoStartupTaints", group: "gpu-t4", setup: []string{"taint", "node", "NODE", k4 + "=true:NoExecute"},
			as: asOwnPod, args: []string{"taint", "node", "NODE", k4 + ":NoExecute-"}, removes: onlyKeyEffect(k4, corev1.TaintEffectNoExecute)},

		// Denied by the policy: every other change of its own node.
		{name: "RemoveAnotherTaint", group: "gpu-t4", as: asOwnPod, args: []string{"taint", "node", "NODE", "nvidia.com/gpu-"}, policy: taintMsg(k4)},
		{name: "RemoveNotReadyTaint", group: "gpu-t4", as: asOwnPod, args: []string{"taint", "node", "NODE", corev1.TaintNodeNotReady + "-"}, policy: taintMsg(k4)},
		{name: "RemoveStartupAndAnotherTaint", group: "gpu-t4", as: asOwnPod, args: []string{"taint", "node", "NODE", k4 + "-", "nvidia.com/gpu-"}, policy: taintMsg(k4)},
		{name: "AddTaint", group: "gpu-t4", as: asOwnPod, args: []string{"taint", "node", "NODE", "example.com/extra=x:NoSchedule"}, policy: taintMsg(k4)},
		{name: "AddStartupKeyWithAnotherEffect", group: "gpu-t4", as: asOwnPod, args: []string{"taint", "node", "NODE", k4 + "=true:NoExecute"}, policy: taintMsg(k4)},
		{name: "ChangeLabel", group: "gpu-t4", as: asOwnPod, args: []string{"label", "node", "NODE", "example.com/pool=hijacked", "--overwrite"},
			policy: "the taint remover may not change the labels of node NODE"},
		{name: "RemoveGroupLabel", group: "gpu-t4", as: asOwnPod, args: []string{"label", "node", "NODE", model.GroupLabel + "-"},
			policy: "the taint remover may not change the labels of node NODE"},
		{name: "RemoveVerifiedGroupLabel", group: "gpu-t4", as: asOwnPod, args: []string{"label", "node", "NODE", model.VerifiedGroupLabel + "-"},
			policy: "the taint remover may not change the labels of node NODE"},
		{name: "Annotate", group: "gpu-t4", as: asOwnPod, args: []string{"annotate", "node", "NODE", "example.com/note=x"},
			policy: "the taint remover may not change the annotations of node NODE"},
		{name: "AddFinalizer", group: "gpu-t4", as: asOwnPod, args: []string{"patch", "node", "NODE", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/keep"]}}`},
			policy: "the taint remover may not change the finalizers or owner references of node NODE"},
		{name: "Cordon", group: "gpu-t4", as: asOwnPod, args: []string{"patch", "node", "NODE", "-p", `{"spec":{"unschedulable":true}}`},
			policy: "the taint remover may not change the spec of node NODE other than removing or adding its startup taint"},
		{name: "Uncordon", group: "gpu-t4", setup: []string{"cordon", "NODE"},
			as: asOwnPod, args: []string{"patch", "node", "NODE", "-p", `{"spec":{"unschedulable":null}}`},
			policy: "the taint remover may not change the spec of node NODE other than removing or adding its startup taint"},

		// Denied by the policy: other nodes.
		{name: "AnotherNodeOfTheGroup", group: "gpu-t4", as: asOtherPod, args: []string{"taint", "node", "NODE", k4 + "-"},
			policy: "the taint remover of node OTHER may not change node NODE"},
		{name: "CPUGroupNode", group: "cpu-burst", as: asOwnPod, args: []string{"taint", "node", "NODE", corev1.TaintNodeNotReady + "-"},
			policy: "node NODE is in no GPU node group with a startup taint (" + model.VerifiedGroupLabel + "=cpu-burst)"},
		{name: "AnotherGPUGroupsKey", group: "gpu-l4", setup: []string{"taint", "node", "NODE", k4 + "=true:NoSchedule"},
			as: asOwnPod, args: []string{"taint", "node", "NODE", k4 + "-"}, policy: taintMsg(kl4)},

		// Denied by RBAC before admission.
		{name: "DeleteNode", group: "gpu-t4", as: asOwnPod, args: []string{"delete", "node", "NODE"}, rbacVerb: "delete", rbacRes: "nodes"},
		{name: "UpdateStatus", group: "gpu-t4", as: asOwnPod, args: []string{"replace", "--raw", "/api/v1/nodes/NODE/status", "-f", "-"}, stdin: statusPut,
			rbacVerb: "update", rbacRes: "nodes/status"},
		{name: "CreateNode", group: "gpu-t4", as: asPlain, args: []string{"create", "-f", "-"}, stdin: newNode, created: true,
			rbacVerb: "create", rbacRes: "nodes"},

		// Denied by the policy where RBAC would allow it.
		{name: "BroadenedRBACDeleteNode", group: "gpu-t4", as: asBroad, args: []string{"delete", "node", "NODE"},
			policy: "the taint remover may only update nodes, not DELETE nodes"},
		{name: "BroadenedRBACUpdateStatus", group: "gpu-t4", as: asBroad, args: []string{"replace", "--raw", "/api/v1/nodes/NODE/status", "-f", "-"}, stdin: statusPut,
			policy: "the taint remover may only update nodes, not UPDATE nodes/status"},
		{name: "BroadenedRBACCreateNode", group: "gpu-t4", as: asBroad, args: []string{"create", "-f", "-"}, stdin: newNode, created: true,
			policy: "the taint remover may only update nodes, not CREATE nodes"},
	}

	var mu sync.Mutex
	var denials []string // the policy's messages seen
	t.Cleanup(func() {
		if !t.Failed() {
			e.checkEveryRuleDenied(t, denials)
		}
	})
	t.Run("PodBoundTokenCarriesNodeName", func(t *testing.T) {
		t.Parallel()
		node := e.newNode(t, "gpu-t4")
		var review authenticationv1.SelfSubjectReview
		out, _, err := kubectl(t, e.podIdentity(t, "gpu-t4", node), "", "auth", "whoami", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &review); err != nil {
			t.Fatal(err)
		}
		u := review.Status.UserInfo
		if u.Username != model.TaintRemover.User() || !slices.Equal(u.Extra[nodeNameExtra], []string{node}) {
			t.Errorf("pod-bound token: user %q extra %v; want %s with %s=[%s]", u.Username, u.Extra, model.TaintRemover.User(), nodeNameExtra, node)
		}
	})
	t.Run("NoRemoverPodOnAutoscalerNode", func(t *testing.T) {
		// No token of the remover names the autoscaler's node: a pod
		// there, which such a token would be bound to, is refused by the
		// autoscaler node's admission policy (out/k8s/autoscaler-node.yaml)
		// before this policy is asked. Its DaemonSets select GPU groups
		// only, and the autoscaler's group has no GPU.
		t.Parallel()
		node := e.newNode(t, e.src.Cluster.Autoscaler.NodeGroup)
		ds := e.daemonSets["gpu-t4"]
		pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + node, Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels},
			Spec:       *ds.Spec.Template.Spec.DeepCopy()}
		pod.Spec.NodeName = node
		b, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%[1]s' denied request: pods of %s/%s may not run on the autoscaler's nodes",
			k8s.AutoscalerNodePolicy, ds.Namespace, model.TaintRemover.Name())
		if _, stderr, err := kubectl(t, e.cp.Admin(), string(b), "create", "-f", "-"); err == nil || !strings.Contains(stderr, want) {
			t.Fatalf("the remover's pod on the autoscaler's node %s: err %v, %s; want %q", node, err, stderr, want)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			node := e.newNode(t, c.group)
			// As the node IPAM controller does: the allowed cases then
			// compare these fields set, not only absent.
			cidr := fmt.Sprintf("10.%d.%d.0/24", rand.IntN(256), rand.IntN(256))
			if _, err := e.client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType,
				fmt.Appendf(nil, `{"spec":{"podCIDR":%q,"podCIDRs":[%[1]q]}}`, cidr), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				e.admin(t, "", subst(c.setup, node, "")...)
			}
			var u *testcp.User
			other := ""
			switch c.as {
			case asOwnPod:
				u = e.podIdentity(t, removerGroup(e, c.group), node)
			case asOtherPod:
				other = e.newNode(t, c.group)
				u = e.podIdentity(t, removerGroup(e, c.group), other)
			case asPlain:
				u = e.cp.ServiceAccount(t, model.WorkloadNamespace, model.TaintRemover.Name())
			case asBroad:
				u = e.broad(t)
			}
			before := e.node(t, node)
			stdin := ""
			if c.stdin != nil {
				stdin = c.stdin(before)
			}
			_, stderr, err := kubectl(t, u, stdin, subst(c.args, node, other)...)
			after := e.node(t, node)
			switch {
			case c.removes != nil:
				if err != nil {
					t.Fatalf("denied: %v", err)
				}
				sameNode(t, "after the allowed change", after, withoutTaints(before, c.removes), true)
				return
			case c.adds != nil:
				if err != nil {
					t.Fatalf("denied: %v", err)
				}
				// kubectl taint puts a new taint first: compare the
				// node without it, then the taint itself.
				sameNode(t, "after the allowed addition, without the added taint", withoutTaints(after, hasKey(c.adds.Key)), before, true)
				if got := slices.DeleteFunc(slices.Clone(after.Spec.Taints), func(tn corev1.Taint) bool { return tn.Key != c.adds.Key }); len(got) != 1 || !got[0].MatchTaint(c.adds) || got[0].Value != c.adds.Value || got[0].TimeAdded != nil {
					t.Errorf("taints with key %s after the addition: %v, want exactly %v", c.adds.Key, got, *c.adds)
				}
				return
			case c.policy != "":
				want := policyDenied + strings.NewReplacer("NODE", node, "OTHER", other).Replace(c.policy)
				if err == nil || !strings.Contains(stderr, want) {
					t.Fatalf("err %v, stderr %q; want a denial by the policy: %q", err, stderr, want)
				}
				msg := stderr[strings.Index(stderr, policyDenied)+len(policyDenied):]
				mu.Lock()
				denials = append(denials, strings.TrimSpace(msg))
				mu.Unlock()
			default:
				want := rbacDenied(c.rbacVerb, c.rbacRes)
				if err == nil || !strings.Contains(stderr, want) || strings.Contains(stderr, "ValidatingAdmissionPolicy") {
					t.Fatalf("err %v, stderr %q; want a denial by RBAC: %q", err, stderr, want)
				}
			}
			sameNode(t, "after the denied request", after, before, false) // not even written
			if c.created {
				if _, stderr, err := kubectl(t, e.cp.Admin(), "", "get", "node", node+"-new"); err == nil || !strings.Contains(stderr, "NotFound") {
					t.Errorf("node %s-new: err %v %s; want NotFound", node, err, stderr)
				}
			}
		})
	}
}

// removerGroup is the group whose DaemonSet's pod stands for the remover
// on a node of group g: its own, or gpu-t4's for a group without one (as
// if a remover pod ran there).
func removerGroup(e *env, g string) string {
	if e.daemonSets[g] != nil {
		return g
	}
	return "gpu-t4"
}

func subst(args []string, node, other string) []string {
	out := make([]string, len(args))
	r := strings.NewReplacer("NODE", node, "OTHER", other)
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// checkEveryRuleDenied checks that each validation of the policy on the
// server denied at least one request: each message seen must start with
// the string literal that starts exactly one validation's
// messageExpression. With the allowed cases, where every validation
// evaluated to true, this shows that every CEL rule evaluates (the server
// reports type errors only at run time).
func (e *env) checkEveryRuleDenied(t *testing.T, denials []string) {
	t.Helper()
	var vap admissionv1.ValidatingAdmissionPolicy
	if err := json.Unmarshal([]byte(e.admin(t, "", "get", "validatingadmissionpolicy", model.TaintRemover.Name(), "-o", "json")), &vap); err != nil {
		t.Fatal(err)
	}
	prefixes := make([]string, len(vap.Spec.Validations))
	for i, v := range vap.Spec.Validations {
		lit, ok := strings.CutPrefix(v.MessageExpression, `"`)
		if end := strings.Index(lit, `"`); ok && end > 0 {
			prefixes[i] = lit[:end]
		} else {
			t.Fatalf("validation %d: messageExpression %q does not start with a string literal", i, v.MessageExpression)
		}
	}
	denied := make([]int, len(prefixes))
	for _, msg := range denials {
		var matched []int
		for i, p := range prefixes {
			if strings.HasPrefix(msg, p) {
				matched = append(matched, i)
			}
		}
		if len(matched) != 1 {
			t.Errorf("denial %q matches validations %v, want exactly one", msg, matched)
			continue
		}
		denied[matched[0]]++
	}
	for i, n := range denied {
		if n == 0 {
			t.Errorf("no request was denied by validation %d (%s)", i, vap.Spec.Validations[i].Expression)
		}
	}
	t.Logf("denials per validation: %v", denied)
}

// nodeNameExtra is the user-info extra key under which the API server
// puts the name of the node a pod-bound ServiceAccount token's pod runs on
// (k8s.io/apiserver v0.37.2, pkg/authentication/serviceaccount/util.go
// NodeNameKey).
const nodeNameExtra = "authentication.kubernetes.io/node-name"
