package k8s

import (
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/nodegen/nodegen/internal/model"
)

// nodeNameExtra is the user-info extra key under which the API server puts
// the name of the node a pod-bound ServiceAccount token's pod runs on (the
// tokens the kubelet projects into pods, since Kubernetes 1.30; k8s.io/apiserver
// v0.37.2, pkg/authentication/serviceaccount/util.go NodeNameKey).
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// startupTaintsCEL is a CEL map literal from each GPU group's name (the
// value of its nodes' model.VerifiedGroupLabel) to its startup taint, a map with
// the keys key, value and effect, in group order. Every string is a
// Kubernetes label value, taint key, taint value or effect, quoted with
// strconv.Quote, so the literal is also valid JSON.
func startupTaintsCEL(src *model.Source) string {
	var pairs []string
	for _, g := range src.GPUGroups() {
		t := g.StartupTaint
		pairs = append(pairs, fmt.Sprintf("%s: {%q: %s, %q: %s, %q: %s}", strconv.Quote(g.Name),
			"key", strconv.Quote(t.Key), "value", strconv.Quote(t.Value), "effect", strconv.Quote(t.Effect)))
	}
	return "{" + strings.Join(pairs, ", ") + "}"
}

// nodeSpecFieldsKept are the Node spec fields the taint remover must leave
// as they are: every field of core/v1 NodeSpec except taints (a test keeps
// this list complete). Status needs no rule: an update of the node itself
// cannot change it.
var nodeSpecFieldsKept = []string{"configSource", "externalID", "podCIDR", "podCIDRs", "podPreemptionPolicy", "providerID", "unschedulable"}

// The policy's CEL. Optional fields are read with the optional syntax
// (x.?f, m[?k], orValue): a plain x.f on an absent field is a runtime
// error, which the API server turns into a denial of every request, and
// type errors are only reported at run time. Every rule but the first is
// true for anything but an update of a node itself, so a DELETE or a
// status update is denied by the first rule alone with its own message.
const (
	celUpdate          = `request.operation == "UPDATE" && request.?subResource.orValue("") == ""`
	celGroup           = `oldObject.metadata.?labels[?"` + model.VerifiedGroupLabel + `"].orValue("")`
	celStartupTaint    = `variables.startupTaints[?variables.group].orValue({})`
	celStartupTaintKey = `variables.startupTaint[?"key"].orValue("")`
	celBoundNode       = `request.userInfo.?extra[?"` + nodeNameExtra + `"].orValue([])`
	celOldTaints       = `oldObject.spec.?taints.orValue([])`
	celNewTaints       = `object.spec.?taints.orValue([])`
	// celAdded is true when the update adds exactly the group's startup
	// taint (key, value and effect, nothing else, no timeAdded) to a node
	// that had no taint with its key.
	celAdded = `variables.oldTaints.all(t, t.key != variables.startupTaintKey) && ` +
		`variables.newTaints.filter(t, t.key == variables.startupTaintKey).size() == 1 && ` +
		`variables.newTaints.exists(t, t.key == variables.startupTaintKey && t.?value.orValue("") == variables.startupTaint[?"value"].orValue("") && ` +
		`t.effect == variables.startupTaint[?"effect"].orValue("") && !has(t.timeAdded))`
	// celRemoved is true when every taint with the startup key the update
	// leaves was there before (it removed some or none).
	celRemoved = `variables.newTaints.all(t, t.key != variables.startupTaintKey || t in variables.oldTaints)`
)

// celSame is an expression true when field (a path below object. and
// oldObject., ending in an optional selection) is the same in both.
func celSame(field string) string { return "object." + field + " == oldObject." + field }

func taintRemoverValidations() []admissionv1.Validation {
	rule := denyUnless
	onUpdate := func(expr string) string { return "!variables.update || " + expr }
	var spec []string
	for _, f := range nodeSpecFieldsKept {
		spec = append(spec, celSame("spec.?"+f))
	}
	return []admissionv1.Validation{
		rule(`variables.update`,
			`"the taint remover may only update nodes, not " + request.operation + " " + request.resource.resource + `+
				`(request.?subResource.orValue("") == "" ? "" : "/" + request.subResource)`),
		rule(onUpdate(`variables.boundNode.size() > 0`),
			`"the taint remover may change a node only with a pod-bound token that names its node (`+nodeNameExtra+`); this request has none"`),
		rule(`variables.boundNode.all(n, n == request.name)`,
			`"the taint remover of node " + variables.boundNode.join(", ") + " may not change node " + request.name`),
		rule(onUpdate(`variables.startupTaintKey != ""`),
			`"node " + request.name + " is in no GPU node group with a startup taint (`+model.VerifiedGroupLabel+`=" + variables.group + ")"`),
		rule(onUpdate(`variables.newTaints.filter(t, t.key != variables.startupTaintKey) == variables.oldTaints.filter(t, t.key != variables.startupTaintKey) && `+
			`(`+celRemoved+` || `+celAdded+`)`),
			`"the taint remover may only remove the taint " + variables.startupTaintKey + " from node " + request.name + `+
				`", or add " + variables.startupTaintKey + "=" + variables.startupTaint[?"value"].orValue("") + ":" + variables.startupTaint[?"effect"].orValue("") + " to it when it has no taint with that key"`),
		rule(onUpdate(celSame(`metadata.?labels.orValue({})`)),
			`"the taint remover may not change the labels of node " + request.name`),
		rule(onUpdate(celSame(`metadata.?annotations.orValue({})`)),
			`"the taint remover may not change the annotations of node " + request.name`),
		rule(onUpdate(celSame(`metadata.?finalizers.orValue([])`)+" && "+celSame(`metadata.?ownerReferences.orValue([])`)),
			`"the taint remover may not change the finalizers or owner references of node " + request.name`),
		rule(onUpdate(strings.Join(spec, " && ")),
			`"the taint remover may not change the spec of node " + request.name + " other than removing or adding its startup taint"`),
	}
}

// taintRemoverPolicy holds the taint remover's ServiceAccount to its one
// job, whatever RBAC grants it: it may change a Node only by removing the
// startup-taint key of the node's group (looked up by
// model.VerifiedGroupLabel), or by adding exactly that startup taint (key,
// value, effect) to a node that has no taint with its key (a node
// re-registered under a reused name, or rebooted), leaving every other
// taint, the labels, annotations, finalizers, owner references and the
// rest of the spec as they were. It may change only its own node: the
// request must carry a pod-bound token, which names the pod's node in
// nodeNameExtra, and that node must be the one changed; a token without
// that claim (a legacy Secret token, `kubectl create token`) changes
// nothing. It may not create or delete nodes or write any node
// subresource.
func taintRemoverPolicy(src *model.Source) admissionPolicy {
	return admissionPolicy{
		Condition: "taint-remover",
		Match:     coreResource("nodes"),
		Variables: []admissionv1.Variable{
			{Name: "update", Expression: celUpdate},
			{Name: "startupTaints", Expression: startupTaintsCEL(src)},
			{Name: "group", Expression: celGroup},
			{Name: "startupTaint", Expression: celStartupTaint},
			{Name: "startupTaintKey", Expression: celStartupTaintKey},
			{Name: "boundNode", Expression: celBoundNode},
			{Name: "oldTaints", Expression: celOldTaints},
			{Name: "newTaints", Expression: celNewTaints},
		},
		Validations: taintRemoverValidations(),
	}
}
