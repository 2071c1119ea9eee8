package k8stest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render/k8s"
	"github.com/nodegen/nodegen/internal/testing/testcp"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// tenantNamespace is where the tenant of TestAutoscalerNodeAdmission may
// create pods, and nothing else.
const tenantNamespace = "tenant"

// TestAutoscalerNodeAdmission applies out/k8s/autoscaler-node.yaml, as
// rendered from the test source, to a production-mode control plane
// running the Deployment and ReplicaSet controllers, and tries to get a
// pod onto the autoscaler's nodes as a user who may only create pods in
// one namespace (one who may only create Deployments there, one who may
// only bind pods there): by spec.nodeName, by tolerating the group's taint
// (exactly, or every taint), through a Deployment (whose ReplicaSet's pods
// are refused), by adding a toleration to a pod, and by a binding. Each is
// refused. The chart's pods (its values' tolerations, nodeSelector and
// ServiceAccount, in its namespace), nodegen's workloads that run there
// (their rendered pod templates), kube-proxy and pods that tolerate the
// taint but are pinned to other nodes (a DaemonSet's pod for another
// node, a nodeSelector on another group) are admitted; nodegen's taint
// remover is admitted on GPU nodes and refused on the autoscaler's.
func TestAutoscalerNodeAdmission(t *testing.T) {
	src, files := testsrc.Render(t, testsrc.Dir())
	g := src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]
	burst := src.NodeGroups["cpu-burst"]
	if g == nil || burst == nil || len(g.Taints) == 0 {
		t.Fatal("the test source needs a tainted autoscaler group and the group cpu-burst")
	}
	taint := g.Taints[0]
	// Node names as a MIG gives them: the base instance name and four
	// characters.
	home := src.Cluster.BaseInstanceName(g) + "-x7k2"
	away := src.Cluster.BaseInstanceName(burst) + "-x7k2"

	cp := testcp.StartWith(t, testcp.Options{Production: true})
	cp.StartControllerManager(t, testcp.DeploymentController, testcp.ReplicaSetController)
	admin := cp.Admin()
	run := func(u *testcp.User, stdin string, args ...string) (string, error) {
		t.Helper()
		out, _, err := kubectl(t, u, stdin, args...)
		return out, err
	}
	must := func(t *testing.T, u *testcp.User, stdin string, args ...string) string {
		t.Helper()
		out, err := run(u, stdin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	must(t, admin, string(files[layout.AutoscalerNodePath]), "create", "--validate=strict", "-f", "-")
	must(t, admin, "", "create", "namespace", tenantNamespace)
	// The tenant may only create pods in its namespace, the deployer only
	// Deployments there, the binder only bind pods there.
	must(t, admin, "", "-n", tenantNamespace, "create", "role", "tenant", "--verb=create", "--resource=pods")
	must(t, admin, "", "-n", tenantNamespace, "create", "rolebinding", "tenant", "--role=tenant", "--user=tenant")
	must(t, admin, "", "-n", tenantNamespace, "create", "role", "deployer", "--verb=create", "--resource=deployments.apps")
	must(t, admin, "", "-n", tenantNamespace, "create", "rolebinding", "deployer", "--role=deployer", "--user=deployer")
	must(t, admin, "", "-n", tenantNamespace, "create", "role", "binder", "--verb=create", "--resource=pods/binding,bindings")
	must(t, admin, "", "-n", tenantNamespace, "create", "rolebinding", "binder", "--role=binder", "--user=binder")
	tenant := cp.Impersonate(t, "tenant")
	deployer := cp.Impersonate(t, "deployer")
	binder := cp.Impersonate(t, "binder")
	scheduler := cp.Impersonate(t, "system:kube-scheduler")

	denial := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request", k8s.AutoscalerNodePolicy, k8s.AutoscalerNodePolicy)
	podJSON := func(ns, name string, spec corev1.PodSpec) string {
		spec.Containers = []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}
		b, err := json.Marshal(corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// refused and admitted report on the (sub)test t they are given.
	refused := func(t *testing.T, what string, u *testcp.User, stdin string, args ...string) {
		t.Helper()
		_, stderr, err := kubectl(t, u, stdin, args...)
		if err == nil || !strings.Contains(stderr, denial) {
			t.Errorf("%s: not refused by the policy: err %v, %s", what, err, stderr)
		}
	}
	admitted := func(t *testing.T, what string, u *testcp.User, stdin string, args ...string) {
		t.Helper()
		if _, stderr, err := kubectl(t, u, stdin, args...); err != nil {
			t.Errorf("%s: refused: %v, %s", what, err, stderr)
		}
	}
	eventually(t, 30*time.Second, "the policy enforced", func() string {
		_, stderr, err := kubectl(t, tenant, podJSON(tenantNamespace, "probe", corev1.PodSpec{NodeName: home}), "create", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(stderr, denial) {
			return fmt.Sprintf("a pod with spec.nodeName %s: err %v, %s", home, err, stderr)
		}
		return ""
	})

	exact := corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: corev1.TaintEffect(taint.Effect)}
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}
	create := []string{"create", "-f", "-"}

	t.Run("TenantRefused", func(t *testing.T) {
		refused(t, "a pod with spec.nodeName on the autoscaler's node", tenant,
			podJSON(tenantNamespace, "by-name", corev1.PodSpec{NodeName: home}), create...)
		refused(t, "a pod tolerating the autoscaler group's taint", tenant,
			podJSON(tenantNamespace, "tolerating", corev1.PodSpec{Tolerations: []corev1.Toleration{exact}}), create...)
		refused(t, "a pod tolerating every taint", tenant,
			podJSON(tenantNamespace, "tolerating-all", corev1.PodSpec{Tolerations: []corev1.Toleration{everything}}), create...)
		refused(t, "a pod tolerating the taint's key with Exists", tenant,
			podJSON(tenantNamespace, "tolerating-key", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpExists}}}), create...)
		refused(t, "a pod tolerating the taint and selecting the autoscaler's group", tenant,
			podJSON(tenantNamespace, "selecting", corev1.PodSpec{Tolerations: []corev1.Toleration{exact},
				NodeSelector: map[string]string{model.VerifiedGroupLabel: g.Name}}), create...)
		refused(t, "a pod as a DaemonSet's pod for the autoscaler's node", tenant,
			podJSON(tenantNamespace, "ds-home", corev1.PodSpec{Tolerations: []corev1.Toleration{everything}, Affinity: pinnedTo(home)}), create...)
		refused(t, "a pod naming the autoscaler's node and the chart's ServiceAccount outside its namespace", tenant,
			podJSON(tenantNamespace, "by-name-sa", corev1.PodSpec{NodeName: home, ServiceAccountName: model.AutoscalerServiceAccount}), create...)
		if out, _ := run(admin, "", "-n", tenantNamespace, "get", "pods", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("pods in %s after the refusals: %s", tenantNamespace, out)
		}
	})

	t.Run("TenantAdmittedElsewhere", func(t *testing.T) {
		admitted(t, "a pod on a burst node", tenant, podJSON(tenantNamespace, "burst", corev1.PodSpec{NodeName: away}), create...)
		admitted(t, "a pod without tolerations", tenant, podJSON(tenantNamespace, "plain", corev1.PodSpec{}), create...)
		admitted(t, "a pod tolerating the taint with another value", tenant,
			podJSON(tenantNamespace, "other-value", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value + "x", Effect: corev1.TaintEffect(taint.Effect)}}}), create...)
		admitted(t, "a DaemonSet's pod tolerating every taint, for a burst node", tenant,
			podJSON(tenantNamespace, "ds-away", corev1.PodSpec{Tolerations: []corev1.Toleration{everything}, Affinity: pinnedTo(away)}), create...)
		admitted(t, "a pod tolerating every taint, selecting another group", tenant,
			podJSON(tenantNamespace, "select-away", corev1.PodSpec{Tolerations: []corev1.Toleration{everything},
				NodeSelector: map[string]string{model.VerifiedGroupLabel: burst.Name}}), create...)
	})

	t.Run("TolerationAdded", func(t *testing.T) {
		// A pod's tolerations may only be added to (k8s.io/kubernetes
		// v1.37.2, pkg/apis/core/validation ValidateTolerationsInPodUpdate),
		// and the server gave a pod without them DefaultTolerationSeconds'
		// two: the patch keeps those and appends. The update needs more
		// than the tenant's rights; the policy holds every user to it.
		appended := func(t *testing.T, pod string, add ...corev1.Toleration) string {
			t.Helper()
			var p corev1.Pod
			if err := json.Unmarshal([]byte(must(t, admin, "", "-n", tenantNamespace, "get", "pod", pod, "-o", "json")), &p); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(map[string]any{"spec": map[string]any{"tolerations": append(p.Spec.Tolerations, add...)}})
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		refused(t, "adding a toleration of every taint to a pod", admin, "", "-n", tenantNamespace, "patch", "pod", "plain", "--type=merge",
			"-p", appended(t, "plain", everything))
		refused(t, "adding a toleration of the group's taint to a pod", admin, "", "-n", tenantNamespace, "patch", "pod", "plain", "--type=merge",
			"-p", appended(t, "plain", exact))
		admitted(t, "adding a toleration of the group's taint to a pod selecting another group", admin, "", "-n", tenantNamespace, "patch", "pod", "select-away", "--type=merge",
			"-p", appended(t, "select-away", exact))
	})

	t.Run("Binding", func(t *testing.T) {
		binding := func(ns, pod, node string) string {
			b, _ := json.Marshal(corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
				ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}, Target: corev1.ObjectReference{Kind: "Node", Name: node}})
			return string(b)
		}
		must(t, tenant, podJSON(tenantNamespace, "unbound", corev1.PodSpec{}), create...)
		refused(t, "a tenant's binding of its pod to the autoscaler's node", binder, binding(tenantNamespace, "unbound", home),
			"create", "--raw", "/api/v1/namespaces/"+tenantNamespace+"/pods/unbound/binding", "-f", "-")
		refused(t, "a tenant's binding through the bindings resource", binder, binding(tenantNamespace, "unbound", home),
			"create", "--raw", "/api/v1/namespaces/"+tenantNamespace+"/bindings", "-f", "-")
		refused(t, "the scheduler's binding of a tenant's pod to the autoscaler's node", scheduler, binding(tenantNamespace, "unbound", home),
			"create", "--raw", "/api/v1/namespaces/"+tenantNamespace+"/pods/unbound/binding", "-f", "-")
		admitted(t, "the scheduler's binding of a tenant's pod to a burst node", scheduler, binding(tenantNamespace, "unbound", away),
			"create", "--raw", "/api/v1/namespaces/"+tenantNamespace+"/pods/unbound/binding", "-f", "-")

		chart := chartPod(t, src, files, "chart-unbound")
		must(t, admin, podJSON(chart.Namespace, chart.Name, chart.Spec), create...)
		refused(t, "the admin's binding of the chart's pod (not the scheduler)", admin, binding(chart.Namespace, chart.Name, home),
			"create", "--raw", "/api/v1/namespaces/"+chart.Namespace+"/pods/"+chart.Name+"/binding", "-f", "-")
		admitted(t, "the scheduler's binding of the chart's pod", scheduler, binding(chart.Namespace, chart.Name, home),
			"create", "--raw", "/api/v1/namespaces/"+chart.Namespace+"/pods/"+chart.Name+"/binding", "-f", "-")
	})

	t.Run("Deployment", func(t *testing.T) {
		replicas := int32(2)
		labels := map[string]string{"app": "squatter"}
		d := appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "squatter", Namespace: tenantNamespace},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					Tolerations: []corev1.Toleration{exact},
					Containers:  []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				}}}}
		b, _ := json.Marshal(d)
		must(t, deployer, string(b), create...)
		eventually(t, 60*time.Second, "the Deployment's ReplicaSet failing to create its pods", func() string {
			out, err := run(admin, "", "-n", tenantNamespace, "get", "replicasets", "-l", "app=squatter", "-o", "json")
			if err != nil {
				return err.Error()
			}
			var l appsv1.ReplicaSetList
			if err := json.Unmarshal([]byte(out), &l); err != nil {
				return err.Error()
			}
			if len(l.Items) != 1 {
				return fmt.Sprintf("%d ReplicaSets", len(l.Items))
			}
			for _, c := range l.Items[0].Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure && c.Reason == "FailedCreate" && strings.Contains(c.Message, denial) {
					return ""
				}
			}
			return fmt.Sprintf("ReplicaSet %s has the conditions %+v", l.Items[0].Name, l.Items[0].Status.Conditions)
		})
		if out := must(t, admin, "", "-n", tenantNamespace, "get", "pods", "-l", "app=squatter", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("the Deployment has pods: %s", out)
		}
	})

	t.Run("TheirOwnAdmitted", func(t *testing.T) {
		chart := chartPod(t, src, files, "chart")
		admitted(t, "the chart's pod as its values render it", admin, podJSON(chart.Namespace, chart.Name, chart.Spec), create...)
		chart.Spec.NodeName = home
		admitted(t, "the chart's pod on the autoscaler's node", admin, podJSON(chart.Namespace, chart.Name+"-bound", chart.Spec), create...)
		for _, p := range nodegenPods(t, files) {
			p.Spec.NodeName = home
			admitted(t, p.Spec.ServiceAccountName+"'s pod on the autoscaler's node", admin, podJSON(p.Namespace, p.Name, p.Spec), create...)
		}
		admitted(t, "kube-proxy's pod for the autoscaler's node", admin,
			podJSON("kube-system", "kube-proxy-home", corev1.PodSpec{ServiceAccountName: "kube-proxy", Tolerations: []corev1.Toleration{everything}, Affinity: pinnedTo(home)}), create...)
		refused(t, "another kube-system pod on the autoscaler's node", admin,
			podJSON("kube-system", "stranger", corev1.PodSpec{ServiceAccountName: "stranger", NodeName: home}), create...)
	})

	t.Run("TaintRemoverOnGPUNodesOnly", func(t *testing.T) {
		// nodegen's taint remover is no workload of the autoscaler's
		// node: each of its DaemonSets selects one GPU group by the
		// verified group label, and vet refuses a GPU group for the
		// autoscaler. Its pod for a GPU node, as the DaemonSet controller
		// makes it, is admitted; its pod named onto the autoscaler's node
		// is refused.
		var n int
		for _, o := range mustDecode(t, files[layout.TaintRemoverPath]) {
			ds, ok := o.(*appsv1.DaemonSet)
			if !ok {
				continue
			}
			n++
			gpu := src.NodeGroups[ds.Spec.Template.Spec.NodeSelector[model.VerifiedGroupLabel]]
			if gpu == nil || gpu.GPU == nil {
				t.Fatalf("DaemonSet %s selects %v, no GPU group", ds.Name, ds.Spec.Template.Spec.NodeSelector)
			}
			spec := *ds.Spec.Template.Spec.DeepCopy()
			spec.Affinity = pinnedTo(src.Cluster.BaseInstanceName(gpu) + "-x7k2")
			admitted(t, ds.Name+"'s pod for a node of "+gpu.Name, admin, podJSON(ds.Namespace, ds.Name+"-gpu", spec), create...)
			spec = *ds.Spec.Template.Spec.DeepCopy()
			spec.NodeName = home
			refused(t, ds.Name+"'s pod on the autoscaler's node", admin, podJSON(ds.Namespace, ds.Name+"-home", spec), create...)
		}
		if n == 0 {
			t.Fatal("the test source renders no taint-remover DaemonSet")
		}
	})
}

// pinnedTo is the node affinity the DaemonSet controller gives its pod
// for node (kubernetes/kubernetes v1.37.2, pkg/controller/daemon/util
// ReplaceDaemonSetPodNodeNameNodeAffinity).
func pinnedTo(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
}

// chartPod is a pod of the Cluster Autoscaler chart as its rendered values
// make it: in the autoscaler's namespace (helm --namespace, as the day-0
// steps run it), as the ServiceAccount rbac.serviceAccount.name, with the
// values' nodeSelector and tolerations (the chart copies them into the
// pod spec).
func chartPod(t *testing.T, src *model.Source, files map[string][]byte, name string) corev1.Pod {
	t.Helper()
	var v struct {
		RBAC struct {
			ServiceAccount struct {
				Name string `json:"name"`
			} `json:"serviceAccount"`
		} `json:"rbac"`
		NodeSelector map[string]string   `json:"nodeSelector"`
		Tolerations  []corev1.Toleration `json:"tolerations"`
	}
	if err := yaml.Unmarshal(files[layout.AutoscalerValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	if v.RBAC.ServiceAccount.Name == "" || len(v.Tolerations) == 0 || len(v.NodeSelector) == 0 {
		t.Fatalf("the chart's values lack rbac.serviceAccount.name, tolerations or nodeSelector: %+v", v)
	}
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: src.Cluster.Autoscaler.Namespace},
		Spec: corev1.PodSpec{ServiceAccountName: v.RBAC.ServiceAccount.Name, NodeSelector: v.NodeSelector, Tolerations: v.Tolerations}}
}

// nodegenPods are the pods of nodegen's workloads on the autoscaler's node
// (the node CSR approver's Deployment, the collector's and the renewer's
// CronJobs) from their rendered templates.
func nodegenPods(t *testing.T, files map[string][]byte) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	for _, p := range []string{layout.NodeCSRApproverPath, layout.NodeLifecyclePath, layout.JoinTokenRenewerPath} {
		for _, o := range mustDecode(t, files[p]) {
			var tmpl corev1.PodTemplateSpec
			var meta metav1.ObjectMeta
			switch o := o.(type) {
			case *appsv1.Deployment:
				tmpl, meta = o.Spec.Template, o.ObjectMeta
			case *batchv1.CronJob:
				tmpl, meta = o.Spec.JobTemplate.Spec.Template, o.ObjectMeta
			default:
				continue
			}
			pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: meta.Name + "-pod", Namespace: meta.Namespace}, Spec: tmpl.Spec})
		}
	}
	if len(pods) != 3 {
		t.Fatalf("%d pods of nodegen's workloads on the autoscaler's node, want 3", len(pods))
	}
	return pods
}
