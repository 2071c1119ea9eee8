package k8s

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

// AutoscalerNodePolicy is the name of the autoscaler node's admission
// policy and of its binding.
const AutoscalerNodePolicy = "nodegen-autoscaler-node"

// schedulerUser is the user kubeadm's kube-scheduler authenticates as
// (kubernetes/kubernetes v1.37.2, cmd/kubeadm/app/constants/constants.go
// SchedulerUser): the one user that binds pods to the autoscaler's nodes.
const schedulerUser = "system:kube-scheduler"

// autoscalerNodePattern is the RE2 pattern of the names of the autoscaler
// group's Nodes: a cloud VM's Node is named after its instance, and a
// MIG names an instance after its base instance name, a hyphen and four
// random characters (Compute Engine API v1, instanceGroupManagers,
// baseInstanceName: "the MIG appends a hyphen and a random four-character
// string to the base instance name"); instances created with
// createInstances are named the same way by the autoscaler
// (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// cloudprovider/gce/autoscaling_gce_client.go generateInstanceName) and by
// nodegen rollout (ReplacementName). The names are the same in every zone
// of the group.
func autoscalerNodePattern(src *model.Source, g *model.NodeGroup) string {
	return "^" + regexp.QuoteMeta(src.Cluster.BaseInstanceName(g)) + "-[a-z0-9]{4}$"
}

// celTolerates is a CEL expression true when the toleration o (a CEL
// variable) tolerates taint t, read as the scheduler reads it
// (k8s.io/api v0.37.2, core/v1/toleration.go ToleratesTaint): its effect
// is empty or t's, its key empty or t's, and unless its operator is
// Exists, its value t's. An operator the policy does not know (a newer
// comparison operator) counts as tolerating, so that the policy errs
// towards refusing.
func celTolerates(o string, t model.Taint) string {
	return fmt.Sprintf(`(%[1]s.?effect.orValue("") in ["", %[2]s]) && (%[1]s.?key.orValue("") in ["", %[3]s]) && `+
		`!(%[1]s.?operator.orValue("") in ["", "Equal"] && %[1]s.?value.orValue("") != %[4]s)`,
		o, strconv.Quote(t.Effect), strconv.Quote(t.Key), strconv.Quote(t.Value))
}

// celLands is a CEL expression true when the pod obj (object or
// oldObject) may run on a node of the autoscaler's group g: its
// spec.nodeName is such a node's name (the kubelet then runs it whatever
// its tolerations), or it has no node yet, tolerates every taint of g
// that keeps pods off (NoSchedule, NoExecute), and nothing pins it to
// other nodes. Pinned are a pod whose nodeSelector asks for another value
// of model.VerifiedGroupLabel (which only the node CSR approver sets), and
// a pod whose every required node-affinity term has a requirement no node
// of g meets: a metadata.name In list without such a node's name (how a
// DaemonSet pins each of its pods to its node) or the verified group label
// In values without g, or NotIn values with g.
func celLands(obj string, src *model.Source, g *model.NodeGroup) string {
	pattern := strconv.Quote(autoscalerNodePattern(src, g))
	group := strconv.Quote(g.Name)
	label := strconv.Quote(model.VerifiedGroupLabel)
	var tolerates []string
	for _, t := range g.Taints {
		if t.Effect == string(corev1.TaintEffectNoSchedule) || t.Effect == string(corev1.TaintEffectNoExecute) {
			tolerates = append(tolerates, obj+`.spec.?tolerations.orValue([]).exists(o, `+celTolerates("o", t)+`)`)
		}
	}
	if len(tolerates) == 0 {
		tolerates = []string{"true"}
	}
	terms := obj + `.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])`
	excludes := `t.?matchFields.orValue([]).exists(f, f.key == "metadata.name" && f.operator == "In" && f.?values.orValue([]).all(v, !v.matches(` + pattern + `))) || ` +
		`t.?matchExpressions.orValue([]).exists(e, e.key == ` + label + ` && ((e.operator == "In" && !(` + group + ` in e.?values.orValue([]))) || (e.operator == "NotIn" && ` + group + ` in e.?values.orValue([]))))`
	pinned := `(` + obj + `.spec.?nodeSelector[?` + label + `].orValue(` + group + `) != ` + group + `) || ` +
		`(` + terms + `.size() > 0 && ` + terms + `.all(t, ` + excludes + `))`
	return `(` + obj + `.spec.?nodeName.orValue("") != "" ? ` + obj + `.spec.nodeName.matches(` + pattern + `) : ` +
		`(` + strings.Join(tolerates, " && ") + ` && !(` + pinned + `)))`
}

// autoscalerNodePolicy keeps off the autoscaler's nodes every pod but the
// ones nodegen places there (model.Cluster.AutoscalerNodePods: the chart's,
// nodegen's workloads there, the source's node agents), whoever creates
// it: every pod on those nodes can take the autoscaler's Google account
// from the metadata server. On every user's requests it refuses
//   - a pod created with spec.nodeName on one of those nodes, or one that
//     tolerates the group's taints and is not pinned elsewhere (celLands),
//     unless its namespace and ServiceAccount are one of those pods';
//   - an update that makes a pod land there (tolerations may be added to
//     a pod), unless it is one of them;
//   - a binding (pods/binding, or the bindings resource) to one of those
//     nodes, unless the scheduler makes it in one of those pods'
//     namespaces: a binding does not show the pod's ServiceAccount, and
//     the scheduler binds only pods that tolerate the taints, which the
//     first rule has checked.
//
// A static pod's mirror pod there has no ServiceAccount and is refused;
// the kubelet runs the static pod all the same (nodegen's join writes
// none).
func autoscalerNodePolicy(src *model.Source) (*admissionv1.ValidatingAdmissionPolicy, error) {
	g := src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]
	if g == nil {
		return nil, fmt.Errorf("no node group %q for the autoscaler", src.Cluster.Autoscaler.NodeGroup)
	}
	var pods, namespaces []string
	seen := map[string]bool{}
	for _, p := range src.Cluster.AutoscalerNodePods() {
		pods = append(pods, strconv.Quote(p.Namespace+"/"+p.ServiceAccount))
		if !seen[p.Namespace] {
			seen[p.Namespace] = true
			namespaces = append(namespaces, strconv.Quote(p.Namespace))
		}
	}
	pattern := strconv.Quote(autoscalerNodePattern(src, g))
	nodes := src.Cluster.BaseInstanceName(g) + "-xxxx"
	fail := admissionv1.Fail
	forbidden := metav1.StatusReasonForbidden
	deny := func(expr, msg string) admissionv1.Validation {
		return admissionv1.Validation{Expression: expr, MessageExpression: msg, Reason: &forbidden}
	}
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: autoscalerNodeMeta(),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
						Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
							Resources: []string{"pods", "pods/binding", "bindings"}},
					},
				}},
			},
			Variables: []admissionv1.Variable{
				{Name: "binding", Expression: `request.resource.resource == "bindings" || request.?subResource.orValue("") == "binding"`},
				{Name: "pod", Expression: `request.resource.resource == "pods" && request.?subResource.orValue("") == ""`},
				{Name: "serviceAccount", Expression: `variables.pod ? object.spec.?serviceAccountName.orValue("") : ""`},
				{Name: "admitted", Expression: `(request.namespace + "/" + variables.serviceAccount) in [` + strings.Join(pods, ", ") + `]`},
				{Name: "lands", Expression: `variables.pod && ` + celLands("object", src, g)},
				{Name: "landed", Expression: `variables.pod && request.operation == "UPDATE" && ` + celLands("oldObject", src, g)},
				{Name: "target", Expression: `variables.binding ? object.?target.?name.orValue("") : ""`},
			},
			Validations: []admissionv1.Validation{
				deny(`!variables.lands || variables.landed || variables.admitted`,
					`"pods of " + request.namespace + "/" + variables.serviceAccount + " may not run on the autoscaler's nodes (`+nodes+`): `+
						`it names one in spec.nodeName or tolerates their taints; only the pods of the ServiceAccounts `+strings.Join(unquote(pods), ", ")+` may run there"`),
				deny(`!variables.binding || !variables.target.matches(`+pattern+`) || (request.userInfo.username == "`+schedulerUser+`" && request.namespace in [`+strings.Join(namespaces, ", ")+`])`,
					`"only the scheduler binds pods to the autoscaler's node " + variables.target + ", and only in `+strings.Join(unquote(namespaces), ", ")+`: not " + request.userInfo.username + " in " + request.namespace`),
			},
		},
	}, nil
}

// unquote turns Go-quoted strings back into their text, for a message.
func unquote(qs []string) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		s, err := strconv.Unquote(q)
		if err != nil {
			panic(err)
		}
		out[i] = s
	}
	return out
}

func autoscalerNodeMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: AutoscalerNodePolicy, Labels: map[string]string{"app.kubernetes.io/name": AutoscalerNodePolicy, "app.kubernetes.io/managed-by": "nodegen"}}
}

// autoscalerNodeFile renders the autoscaler node's admission policy and
// its binding.
func autoscalerNodeFile(src *model.Source, header string) ([]byte, error) {
	policy, err := autoscalerNodePolicy(src)
	if err != nil {
		return nil, err
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: autoscalerNodeMeta(),
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        AutoscalerNodePolicy,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return manifest.MarshalObjects(header, []runtime.Object{policy, binding})
}
