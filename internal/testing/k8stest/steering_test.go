package k8stest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// steeringManifests are the rendered manifests whose workloads and
// policies the steering test reads; steeringValues the Helm values files,
// whose nodeSelector maps it reads wherever they are.
var (
	steeringManifests = []string{layout.TaintRemoverPath, layout.NodeLifecyclePath, layout.JoinTokenRenewerPath, layout.NodeCSRApproverPath}
	steeringValues    = []string{layout.AutoscalerValuesPath, layout.GPUOperatorValuesPath}
)

// workload is a rendered pod template: where it comes from and its spec.
type workload struct {
	name string
	spec corev1.PodSpec
}

// policyLabelRE finds the label keys a policy's CEL reads from an object's
// labels (labels[?"key"] or labels["key"]).
var policyLabelRE = regexp.MustCompile(`labels\[\??("(?:[^"\\]|\\.)*")\]`)

// renderedPlacements returns every workload of the manifests, plus one
// per nodeSelector of the Helm values, and every label key the policies
// read.
func (e *env) renderedPlacements(t *testing.T) ([]workload, []string) {
	t.Helper()
	var ws []workload
	keys := map[string]bool{}
	for _, p := range steeringManifests {
		if e.files[p] == nil {
			t.Fatalf("the test source renders no %s", p)
		}
		for _, o := range mustDecode(t, e.files[p]) {
			switch o := o.(type) {
			case *appsv1.DaemonSet:
				ws = append(ws, workload{p + " DaemonSet " + o.Name, o.Spec.Template.Spec})
			case *appsv1.Deployment:
				ws = append(ws, workload{p + " Deployment " + o.Name, o.Spec.Template.Spec})
			case *batchv1.CronJob:
				ws = append(ws, workload{p + " CronJob " + o.Name, o.Spec.JobTemplate.Spec.Template.Spec})
			case *admissionv1.ValidatingAdmissionPolicy:
				if !matchesNodes(o) {
					continue // its labels are another kind's
				}
				var exprs []string
				for _, v := range o.Spec.Variables {
					exprs = append(exprs, v.Expression)
				}
				for _, v := range o.Spec.Validations {
					exprs = append(exprs, v.Expression)
				}
				for _, x := range exprs {
					for _, m := range policyLabelRE.FindAllStringSubmatch(x, -1) {
						var k string
						if err := json.Unmarshal([]byte(m[1]), &k); err != nil {
							t.Fatalf("policy %s reads label %s: %v", o.Name, m[1], err)
						}
						keys[k] = true
					}
				}
			}
		}
	}
	for _, p := range steeringValues {
		var v any
		if err := yaml.Unmarshal(e.files[p], &v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, c := range v {
					if sel, ok := c.(map[string]any); ok && k == "nodeSelector" {
						ns := map[string]string{}
						for sk, sv := range sel {
							ns[sk] = fmt.Sprint(sv)
						}
						ws = append(ws, workload{p + " " + path + ".nodeSelector", corev1.PodSpec{NodeSelector: ns}})
						continue
					}
					walk(path+"."+k, c)
				}
			case []any:
				for i, c := range v {
					walk(fmt.Sprintf("%s[%d]", path, i), c)
				}
			}
		}
		walk("", v)
	}
	return ws, slices.Sorted(maps.Keys(keys))
}

// matchesNodes reports whether the policy's resource rules match Nodes.
func matchesNodes(p *admissionv1.ValidatingAdmissionPolicy) bool {
	if p.Spec.MatchConstraints == nil {
		return false
	}
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		for _, res := range r.Resources {
			if (res == "nodes" || res == "*" || res == "*/*") && (slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, "*")) {
				return true
			}
		}
	}
	return false
}

// selectorLabels returns the label key=value pairs a pod spec requires of
// its node: its nodeSelector and the In terms of its required affinity.
func selectorLabels(spec corev1.PodSpec) map[string][]string {
	out := map[string][]string{}
	for k, v := range spec.NodeSelector {
		out[k] = append(out[k], v)
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range term.MatchExpressions {
				if r.Operator == corev1.NodeSelectorOpIn {
					out[r.Key] = append(out[r.Key], r.Values...)
				}
			}
		}
	}
	return out
}

// selects reports whether the pod spec's node selector and required
// affinity match node (taints aside: a burst node has fewer than the
// autoscaler's node, and the pods tolerate those).
func selects(t *testing.T, spec corev1.PodSpec, node *corev1.Node) bool {
	t.Helper()
	ok, err := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: spec}).Match(node)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// testSteering: a compromised burst node, with its own kubelet
// certificate on an API server configured as kubeadm's (Node authorizer,
// NodeRestriction), tries to take the jobs of other groups' nodes. It
// registers its Node with the join's labels (allowed: the join sets no
// label NodeRestriction refuses), then sets on it, one by one, every label
// a rendered workload selects (with the value it selects) and every label
// a rendered policy reads (with every other cloud group's name): each is
// refused by NodeRestriction, and afterwards no rendered workload meant
// for another group selects the Node. A pod of the node garbage collector
// bound to that node gives its kubelet the collector's token
// (TokenRequest); the token cannot delete a Ready Node of the autoscaler's
// group, nor a NotReady Node of a cloud group: its pod is not on the
// autoscaler's node.
func (e *env) testSteering(t *testing.T) {
	burst := e.group(t, "cpu-burst")
	ws, policyKeys := e.renderedPlacements(t)
	if len(ws) < 5 || len(policyKeys) == 0 {
		t.Fatalf("found %d workloads and policy label keys %v in the rendering; want the autoscaler's, the approver's, the collector's, the renewer's, the taint removers' and the policies' keys", len(ws), policyKeys)
	}

	// The Node as the kubelet registers it: the join's labels only.
	name := fmt.Sprintf("%s-s%03d", e.src.Cluster.BaseInstanceName(burst), e.seq.Add(1))
	n := e.joined[burst.Name].DeepCopy()
	for k := range model.VerifiedLabels(burst) {
		delete(n.Labels, k)
	}
	n.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
	n.Spec.ProviderID = strings.TrimSuffix(n.Spec.ProviderID, n.Name) + name
	n.Name = name
	n.Labels[corev1.LabelHostname] = name
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	kubelet := e.cp.Node(t, name)
	if _, stderr, err := kubectl(t, kubelet, string(b), "create", "-f", "-"); err != nil {
		t.Fatalf("the kubelet registering its Node with the join's labels: %v %s", err, stderr)
	}
	legit := e.node(t, name)
	for k, v := range model.VerifiedLabels(burst) {
		legit.Labels[k] = v // as the approver labels it
	}

	// Every (key, value) to try.
	tries := map[string]map[string]bool{}
	add := func(k, v string) {
		if tries[k] == nil {
			tries[k] = map[string]bool{}
		}
		tries[k][v] = true
	}
	for _, w := range ws {
		if selects(t, w.spec, legit) {
			continue // meant for the burst group's nodes
		}
		for k, vs := range selectorLabels(w.spec) {
			for _, v := range vs {
				add(k, v)
			}
		}
	}
	for _, k := range policyKeys {
		for _, g := range e.src.CloudGroupNames() {
			if g != burst.Name {
				add(k, g)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(tries)) {
		for _, v := range slices.Sorted(maps.Keys(tries[k])) {
			_, stderr, err := kubectl(t, kubelet, "", "label", "node", name, k+"="+v, "--overwrite")
			if err == nil {
				var took []string
				now := e.node(t, name)
				for _, w := range ws {
					if !selects(t, w.spec, legit) && selects(t, w.spec, now) {
						took = append(took, w.name)
					}
				}
				t.Errorf("the burst node's kubelet set %s=%s on its own Node; then selecting it: %v", k, v, took)
			} else if !strings.Contains(stderr, "is not allowed to modify labels: "+k) {
				t.Errorf("the kubelet setting %s=%s: %v %s; want NodeRestriction's refusal", k, v, err, stderr)
			}
		}
	}
	after := e.node(t, name)
	for _, w := range ws {
		if !selects(t, w.spec, legit) && selects(t, w.spec, after) {
			t.Errorf("%s now selects the burst node %s (labels %v)", w.name, name, after.Labels)
		}
	}

	// A collector pod bound to the burst node: its kubelet gets the
	// collector's token, which deletes no Ready Node.
	victim := e.newNode(t, e.src.Cluster.Autoscaler.NodeGroup)
	e.setReady(t, victim, corev1.ConditionTrue, time.Minute)
	// The pod mounts a token for the API server's audience (the issuer),
	// as the ServiceAccount admission plugin's kube-api-access volume
	// does: the Node authorizer lets a kubelet request tokens only for
	// the audiences its pods mount.
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "stolen-" + name, Namespace: model.WorkloadNamespace},
		Spec: corev1.PodSpec{NodeName: name, ServiceAccountName: model.NodeCollector.Name(),
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/tokens"}}}},
			Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: e.cp.URL, Path: "token"}}}}}}}},
	}
	b, _ = json.Marshal(pod)
	e.admin(t, string(b), "create", "-f", "-")
	uid := strings.TrimSpace(e.admin(t, "", "get", "pod", pod.Name, "-n", pod.Namespace, "-o", "jsonpath={.metadata.uid}"))
	token, stderr, err := kubectl(t, kubelet, "", "create", "token", model.NodeCollector.Name(), "-n", model.WorkloadNamespace,
		"--audience="+e.cp.URL, "--bound-object-kind=Pod", "--bound-object-name="+pod.Name, "--bound-object-uid="+uid)
	if err != nil {
		t.Fatalf("the kubelet requesting the collector's token for its pod: %v %s", err, stderr)
	}
	stolen := e.cp.TokenUser(t, "the collector's token, from the burst node", strings.TrimSpace(token))
	for _, target := range []string{victim, name} {
		_, stderr, err := kubectl(t, stolen, "", "delete", "node", target)
		if err == nil {
			t.Errorf("the stolen collector token deleted Node %s", target)
		} else if !strings.Contains(stderr, "ValidatingAdmissionPolicy '"+model.NodeCollector.Name()+"'") {
			t.Errorf("deleting Node %s with the stolen token: %v %s; want the collector's policy's denial", target, err, stderr)
		}
	}
	if e.node(t, victim).Name != victim {
		t.Errorf("Node %s is gone", victim)
	}
	// Nor a NotReady cloud Node, which the collector's own token, from its
	// pod on the autoscaler's node, may delete: the token's pod is on the
	// burst node.
	notReady := e.newNode(t, burst.Name)
	e.setReady(t, notReady, corev1.ConditionUnknown, time.Hour)
	if _, stderr, err := kubectl(t, stolen, "", "delete", "node", notReady); err == nil {
		t.Errorf("the stolen collector token deleted the NotReady Node %s", notReady)
	} else if !strings.Contains(stderr, "may write only from a pod on the autoscaler's nodes, not from one on "+name) {
		t.Errorf("deleting the NotReady Node %s with the stolen token: %v %s; want the collector's policy's denial for the token's node", notReady, err, stderr)
	}
	if e.node(t, notReady).Name != notReady {
		t.Errorf("Node %s is gone", notReady)
	}
}
