package k8s

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
)

// TestAutoscalerNodePolicyCEL evaluates the autoscaler node's policy, as
// rendered for the test source, with the Kubernetes API server's own CEL
// environment (k8s.io/apiserver pkg/cel/environment, the base of
// ValidatingAdmissionPolicy's), objects given as their JSON: every
// expression compiles, none errs on any request below, and each request
// is admitted or refused as the policy promises. The production-mode API
// server runs the same requests in TestAutoscalerNodeAdmission
// (internal/testing/k8stest).
func TestAutoscalerNodePolicyCEL(t *testing.T) {
	l, err := source.Load("../../testing/testsrc/testdata/nodegroups")
	if err != nil {
		t.Fatal(err)
	}
	src := l.Fleet.Clusters[0]
	policy, err := autoscalerNodePolicy(src)
	if err != nil {
		t.Fatal(err)
	}
	g := src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]
	home, away := src.Cluster.BaseInstanceName(g)+"-x7k2", src.Cluster.BaseInstanceName(src.NodeGroups["cpu-burst"])+"-x7k2"
	taint := g.Taints[0]
	base, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Env(environment.StoredExpressions)
	if err != nil {
		t.Fatal(err)
	}
	env, err := base.Extend(cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		t.Fatal(err)
	}
	compile := func(expr string) cel.Program {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", expr, iss.Err())
		}
		p, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	asMap := func(v any) any {
		if v == nil {
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	pod := func(spec corev1.PodSpec) *corev1.Pod {
		spec.Containers = []corev1.Container{{Name: "c", Image: "i"}}
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: spec}
	}
	binding := func(node string) *corev1.Binding {
		return &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"}, ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	}
	request := func(ns, op, user, resource, sub string) map[string]any {
		r := map[string]any{"operation": op, "namespace": ns, "name": "p", "userInfo": map[string]any{"username": user},
			"resource": map[string]any{"group": "", "version": "v1", "resource": resource}}
		if sub != "" {
			r["subResource"] = sub
		}
		return r
	}
	exact := corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: corev1.TaintEffect(taint.Effect)}
	all := corev1.Toleration{Operator: corev1.TolerationOpExists}
	pinned := func(node string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	}
	groupIs := func(op corev1.NodeSelectorOperator, group string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: model.VerifiedGroupLabel, Operator: op, Values: []string{group}}}}}}}}
	}
	const tenant = "tenant"
	ks := model.WorkloadNamespace
	for _, c := range []struct {
		name      string
		refused   bool
		object    any
		oldObject any
		request   map[string]any
	}{
		{"spec.nodeName on the autoscaler's node", true, pod(corev1.PodSpec{NodeName: home}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"spec.nodeName on a burst node", false, pod(corev1.PodSpec{NodeName: away}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"no toleration", false, pod(corev1.PodSpec{}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"tolerating the taint", true, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{exact}}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"tolerating every taint", true, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{all}}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"tolerating the taint's key", true, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpExists}}}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"tolerating another value", false, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: taint.Key, Value: taint.Value + "x", Effect: corev1.TaintEffect(taint.Effect)}}}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"tolerating every NoExecute taint only", false, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"a DaemonSet's pod for a burst node", false, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{all}, Affinity: pinned(away)}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"a DaemonSet's pod for the autoscaler's node", true, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{all}, Affinity: pinned(home)}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"selecting another group", false, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{all}, NodeSelector: map[string]string{model.VerifiedGroupLabel: "cpu-burst"}}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"selecting the autoscaler's group", true, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{all}, NodeSelector: map[string]string{model.VerifiedGroupLabel: g.Name}}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"affinity In another group", false, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{all}, Affinity: groupIs(corev1.NodeSelectorOpIn, "gpu-t4")}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"affinity NotIn the autoscaler's group", false, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{all}, Affinity: groupIs(corev1.NodeSelectorOpNotIn, g.Name)}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"affinity In the autoscaler's group", true, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{all}, Affinity: groupIs(corev1.NodeSelectorOpIn, g.Name)}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"the chart's pod", false, pod(corev1.PodSpec{ServiceAccountName: model.AutoscalerServiceAccount, Tolerations: []corev1.Toleration{exact}, NodeSelector: map[string]string{model.VerifiedGroupLabel: g.Name}}), nil, request(src.Cluster.Autoscaler.Namespace, "CREATE", "admin", "pods", "")},
		{"the chart's ServiceAccount name in another namespace", true, pod(corev1.PodSpec{ServiceAccountName: model.AutoscalerServiceAccount, NodeName: home}), nil, request(tenant, "CREATE", tenant, "pods", "")},
		{"the approver's pod", false, pod(corev1.PodSpec{ServiceAccountName: model.NodeCSRApprover.Name(), NodeName: home}), nil, request(ks, "CREATE", "admin", "pods", "")},
		{"kube-proxy's pod", false, pod(corev1.PodSpec{ServiceAccountName: "kube-proxy", Tolerations: []corev1.Toleration{all}, Affinity: pinned(home)}), nil, request(ks, "CREATE", "admin", "pods", "")},
		{"another kube-system pod", true, pod(corev1.PodSpec{ServiceAccountName: "stranger", NodeName: home}), nil, request(ks, "CREATE", "admin", "pods", "")},
		{"a toleration added", true, pod(corev1.PodSpec{Tolerations: []corev1.Toleration{all}}), pod(corev1.PodSpec{}), request(tenant, "UPDATE", "admin", "pods", "")},
		{"an update of a pod that landed before", false, pod(corev1.PodSpec{NodeName: home}), pod(corev1.PodSpec{NodeName: home}), request(tenant, "UPDATE", "admin", "pods", "")},
		{"a tenant's binding", true, binding(home), nil, request(tenant, "CREATE", "binder", "pods", "binding")},
		{"a tenant's bindings resource", true, binding(home), nil, request(tenant, "CREATE", "binder", "bindings", "")},
		{"the scheduler's binding of a tenant's pod", true, binding(home), nil, request(tenant, "CREATE", schedulerUser, "pods", "binding")},
		{"the scheduler's binding to a burst node", false, binding(away), nil, request(tenant, "CREATE", schedulerUser, "pods", "binding")},
		{"the scheduler's binding in kube-system", false, binding(home), nil, request(ks, "CREATE", schedulerUser, "pods", "binding")},
		{"the admin's binding in kube-system", true, binding(home), nil, request(ks, "CREATE", "admin", "pods", "binding")},
	} {
		vars := map[string]any{}
		act := map[string]any{"object": asMap(c.object), "oldObject": asMap(c.oldObject), "request": c.request, "variables": vars}
		for _, v := range policy.Spec.Variables {
			out, _, err := compile(v.Expression).Eval(act)
			if err != nil {
				t.Fatalf("%s: variable %s: %v", c.name, v.Name, err)
			}
			vars[v.Name] = out.Value()
		}
		refused := ""
		for _, v := range policy.Spec.Validations {
			out, _, err := compile(v.Expression).Eval(act)
			if err != nil {
				t.Fatalf("%s: %s: %v", c.name, v.Expression, err)
			}
			if out.Value() != true {
				msg, _, err := compile(v.MessageExpression).Eval(act)
				if err != nil {
					t.Fatalf("%s: message: %v", c.name, err)
				}
				refused = msg.Value().(string)
				break
			}
		}
		if (refused != "") != c.refused {
			t.Errorf("%s: refused %v (%q), want refused %v", c.name, refused != "", refused, c.refused)
		}
		if refused != "" && !strings.Contains(refused, "autoscaler's node") {
			t.Errorf("%s: message %q does not say why", c.name, refused)
		}
	}
}
