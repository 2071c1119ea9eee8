package k8s

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

// Node garbage collector names.
const (
	// nodeLifecycleSchedule is how often the collector runs: every minute,
	// the CronJob controller's shortest period, so that a NotReady Node
	// whose VM is gone goes within two minutes.
	nodeLifecycleSchedule = "* * * * *"
	// nodeLifecycleActiveDeadline is the longest a pass may run, in
	// seconds. With concurrencyPolicy Forbid a pass still running at the
	// next minute delays it: a Node is deleted at most the schedule's
	// period plus this after its VM is gone while it is NotReady.
	nodeLifecycleActiveDeadline = 45
	// nodeLifecycleStartingDeadline is how late, in seconds, a pass may
	// start after its minute (a pass delayed by the one before it).
	nodeLifecycleStartingDeadline = 30
)

// notReadyGraceSeconds returns cluster.nodeLifecycle.notReadyGracePeriod in
// whole seconds.
func notReadyGraceSeconds(src *model.Source) (int64, error) {
	d := src.Cluster.NodeLifecycle.NotReadyGracePeriod.Duration()
	if d < model.MinNotReadyGracePeriod {
		return 0, fmt.Errorf("cluster.nodeLifecycle.notReadyGracePeriod %s is shorter than %s", d, model.MinNotReadyGracePeriod)
	}
	return int64(d / time.Second), nil
}

// nodeLifecycle is the node garbage collector's workload: a ClusterRole
// allowed only to get, list and delete nodes, and the
// ValidatingAdmissionPolicy that narrows what its ServiceAccount may
// delete down to Nodes of the source's cloud groups with a providerID in
// the source's project (nodeLifecyclePolicy).
func nodeLifecycle(src *model.Source) scriptWorkload {
	return scriptWorkload{
		Workload: model.NodeCollector, Script: "node-lifecycle.sh", ClusterWide: true,
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "delete", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
		},
		Policy: nodeLifecyclePolicy(src),
	}
}

// nodeLifecycleObjects returns the node garbage collector's objects
// (scriptWorkload.objects), with the CronJob that runs it every minute on
// the autoscaler's node.
func nodeLifecycleObjects(src *model.Source) ([]runtime.Object, error) {
	grace, err := notReadyGraceSeconds(src)
	if err != nil {
		return nil, err
	}
	home := src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]
	if home == nil {
		return nil, fmt.Errorf("cluster.autoscaler.nodeGroup: no node group %q", src.Cluster.Autoscaler.NodeGroup)
	}
	w := nodeLifecycle(src)
	startup, _ := src.MaxNodeStartupTime()
	pod := w.pod(src.Cluster.TaintRemover.Image, "node-lifecycle", home, []corev1.EnvVar{
		{Name: "PROJECT", Value: src.Cluster.GCP.Project},
		{Name: "NODE_GROUPS", Value: strings.Join(src.CloudGroupNames(), ",")},
		{Name: "GRACE_SECONDS", Value: strconv.FormatInt(grace, 10)},
		{Name: "STARTUP_SECONDS", Value: strconv.FormatInt(int64(startup/time.Second), 10)},
		{Name: "STUCK_GROUPS", Value: strings.Join(stuckGroups(src), ",")},
		{Name: "REMOVE_STUCK", Value: strconv.FormatBool(src.Cluster.NodeLifecycle.RemoveStuckGPUNodes)},
	})
	pod.TunnelLoss = manifest.TunnelLossTolerations(&src.Cluster)
	return w.objects(w.cronJob(cronSchedule{
		Schedule:          nodeLifecycleSchedule,
		StartingDeadline:  nodeLifecycleStartingDeadline,
		SuccessfulHistory: 1,
		FailedHistory:     3,
		BackoffLimit:      0,
		ActiveDeadline:    nodeLifecycleActiveDeadline,
	}, pod))
}

// stuckGroups are the collector's STUCK_GROUPS: for each autoscaled GPU
// group with a startup taint (whose MIG the autoscaler's VM service
// account may update), GROUP:MIG_BASE:GPUS:TAINT_KEY, the MIG of a zone
// being MIG_BASE-<zone> (Cluster.MIGName) and GPUS the nvidia.com/gpu a
// node with validated GPUs advertises (what the taint remover waits for).
func stuckGroups(src *model.Source) []string {
	var out []string
	for _, g := range src.GPUGroups() {
		if g.Autoscaled() {
			out = append(out, strings.Join([]string{g.Name, src.Cluster.BaseInstanceName(g), strconv.Itoa(g.AdvertisedGPUs()), g.StartupTaint.Key}, ":"))
		}
	}
	return out
}

// nodeLifecyclePolicy holds the collector's ServiceAccount, with a
// pod-bound token whose pod is on one of the autoscaler's nodes (the token
// names its pod's node: a kubelet gets such a token for any pod bound to
// it, so a collector pod bound to another node gives that node's kubelet
// none that writes), to three requests:
//   - deleting a Node that carries the verified group label
//     (model.VerifiedGroupLabel, which no kubelet can set) of one of the
//     source's cloud groups and the providerID
//     gce://<project>/<zone>/<the node's name>, and whose one Ready
//     condition is False or Unknown (not Ready: a Ready Node's kubelet is
//     alive, whatever the Compute API says);
//   - updating such a Node's model.StuckAnnotation (set to a time, or
//     removed) and nothing else of it;
//   - creating, in the default namespace, a Warning Event with the reason
//     model.StuckReason about a Node whose name is an instance name of the
//     source's MIGs.
//
// Every other request that reaches admission (a status update, another
// field or annotation, a Node of no cloud group, an on-prem Node, another
// project's VM, an Event about anything else) is denied, whatever RBAC
// grants.
func nodeLifecyclePolicy(src *model.Source) admissionPolicy {
	rule := denyUnless
	var groups []string
	for _, g := range src.CloudGroupNames() {
		groups = append(groups, strconv.Quote(g))
	}
	prefix := strconv.Quote("gce://" + src.Cluster.GCP.Project + "/")
	home := strconv.Quote(autoscalerNodePattern(src, src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]))
	key := strconv.Quote(model.StuckAnnotation)
	onNode := func(e string) string { return "!(variables.delete || variables.annotate) || " + e }
	onAnnotate := func(e string) string { return "!variables.annotate || (" + e + ")" }
	onEvent := func(e string) string { return "!variables.event || (" + e + ")" }
	spec := []string{celSame("metadata.?labels.orValue({})"), celSame("metadata.?finalizers.orValue([])"), celSame("metadata.?ownerReferences.orValue([])"), celSame("spec.?taints")}
	for _, f := range nodeSpecFieldsKept {
		spec = append(spec, celSame("spec.?"+f))
	}
	noSub := `request.?subResource.orValue("") == ""`
	return admissionPolicy{
		Condition: "node-lifecycle",
		Match:     admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"nodes", "nodes/*", "events", "events/*"}},
		Variables: []admissionv1.Variable{
			{Name: "delete", Expression: `request.resource.resource == "nodes" && request.operation == "DELETE" && ` + noSub},
			{Name: "annotate", Expression: `request.resource.resource == "nodes" && request.operation == "UPDATE" && ` + noSub},
			{Name: "event", Expression: `request.resource.resource == "events" && request.operation == "CREATE" && ` + noSub},
			{Name: "cloudGroups", Expression: "[" + strings.Join(groups, ", ") + "]"},
			{Name: "group", Expression: `variables.delete || variables.annotate ? ` + celGroup + ` : ""`},
			{Name: "providerID", Expression: `variables.delete || variables.annotate ? oldObject.spec.?providerID.orValue("") : ""`},
			{Name: "boundNode", Expression: celBoundNode},
			// The Node's Ready condition as stored ("" without one).
			{Name: "ready", Expression: `oldObject.?status.?conditions.orValue([]).filter(c, c.type == "Ready").map(c, c.status).join(",")`},
			{Name: "oldAnnotations", Expression: `variables.annotate ? oldObject.metadata.?annotations.orValue({}) : {}`},
			{Name: "newAnnotations", Expression: `variables.annotate ? object.metadata.?annotations.orValue({}) : {}`},
		},
		Validations: []admissionv1.Validation{
			rule(`variables.delete || variables.annotate || variables.event`,
				`"the node garbage collector may only delete nodes, set or remove their annotation `+model.StuckAnnotation+` and create events about them, not " + request.operation + " " + request.resource.resource + `+
					`(request.?subResource.orValue("") == "" ? "" : "/" + request.subResource)`),
			rule(`variables.boundNode.size() > 0`,
				`"the node garbage collector may write only with a pod-bound token that names its node (`+nodeNameExtra+`); this request has none"`),
			rule(`variables.boundNode.all(n, n.matches(`+home+`))`,
				`"the node garbage collector may write only from a pod on the autoscaler's nodes, not from one on " + variables.boundNode.join(", ")`),
			rule(onNode(`variables.group in variables.cloudGroups`),
				`"node " + request.name + " is in no nodegen cloud node group (`+model.VerifiedGroupLabel+`=" + variables.group + ")"`),
			rule(onNode(`(variables.providerID.startsWith(`+prefix+`) && variables.providerID.endsWith("/" + request.name))`),
				`"node " + request.name + " has providerID " + variables.providerID + ", not " + `+prefix+` + "<zone>/" + request.name`),
			rule(`!variables.delete || variables.ready in ["False", "Unknown"]`,
				`"node " + request.name + " is " + (variables.ready == "True" ? "Ready" : (variables.ready == "" ? "without a Ready condition" : "Ready " + variables.ready)) + `+
					`": the node garbage collector may delete only a node whose Ready condition is False or Unknown"`),
			rule(onAnnotate(`variables.oldAnnotations.all(k, k == `+key+` || (k in variables.newAnnotations && variables.newAnnotations[k] == variables.oldAnnotations[k])) && `+
				`variables.newAnnotations.all(k, k == `+key+` || k in variables.oldAnnotations) && `+
				`variables.newAnnotations[?`+key+`].orValue("2006-01-02T15:04:05Z").matches("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$") && `+
				strings.Join(spec, " && ")),
				`"the node garbage collector may change only the annotation `+model.StuckAnnotation+` of node " + request.name + ", to a time or removed"`),
			rule(onEvent(`request.namespace == "default" && object.?type.orValue("") == "Warning" && object.?reason.orValue("") == "`+model.StuckReason+`" && `+
				`object.involvedObject.?kind.orValue("") == "Node" && object.involvedObject.?apiVersion.orValue("") == "v1" && object.involvedObject.?namespace.orValue("") == "" && `+
				`object.involvedObject.?name.orValue("").matches(`+strconv.Quote(instanceNamePattern(src))+`)`),
				`"the node garbage collector may create only Warning events with the reason `+model.StuckReason+` in the default namespace about a node of the cluster's MIGs"`),
		},
	}
}

// nodeLifecycleFile renders the node garbage collector's manifests.
func nodeLifecycleFile(src *model.Source, header string) ([]byte, error) {
	objs, err := nodeLifecycleObjects(src)
	if err != nil {
		return nil, err
	}
	return manifest.MarshalObjects(header, objs)
}
