package render_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/templates"
)

// lifecycleSource is a small source of its own: the autoscaler's group, a
// GPU group, a CPU group in another zone, an on-prem group, and a grace
// period that is not the default.
const lifecycleSource = `cluster: {
	name:                 "lc"
	kubernetesVersion:    "1.35.2"
	controlPlaneEndpoint: "10.0.0.1:6443"
	caCertHashes: ["sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d"]
	joinToken: metadataKey: "join-token"
	gcp: {project: "lc-project-1", region: "europe-west4"}
	autoscaler: {nodeGroup: "ca", singleZone: true}
	nodeLifecycle: notReadyGracePeriod: "45m"
}
nodeGroups: ca: {
	kind: "gce-static"
	zones: ["europe-west4-a"]
	machineType: "e2-standard-2"
	image: "projects/lc-project-1/global/images/family/node"
	min: 1
	max: 1
	taints: [{key: "example.com/ca", value: "only", effect: "NoSchedule"}, {key: "example.com/ca-x", effect: "NoExecute"}]
}
nodeGroups: gpu: {
	kind: "gce"
	zones: ["europe-west4-a"]
	machineType: "n1-standard-8"
	image: "projects/lc-project-1/global/images/family/node"
	min: 0
	max: 2
	gpu: {type: "nvidia-tesla-t4", count: 1}
}
nodeGroups: cpu: {
	kind: "gce"
	zones: ["europe-west4-b"]
	machineType: "n2-standard-8"
	image: "projects/lc-project-1/global/images/family/node"
	min: 0
	max: 3
}
nodeGroups: dc: {
	kind: "onprem"
	labels: "example.com/site": "dc1"
}
`

func TestNodeLifecycleManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "all.cue"), []byte(lifecycleSource), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := l.Fleet.Clusters[0]
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	// The collector deletes only Nodes with the verified group label: with
	// a project-metadata token too, the approver is there to set it.
	if files[layout.NodeCSRApproverPath] == nil {
		t.Errorf("a source with a project-metadata join token renders no %s: nothing would give its cloud Nodes %s", layout.NodeCSRApproverPath, model.VerifiedGroupLabel)
	}
	objs, err := k8sdecode.Objects(files[layout.NodeLifecyclePath])
	if err != nil {
		t.Fatal(err)
	}
	var cj *batchv1.CronJob
	var role *rbacv1.ClusterRole
	var crb *rbacv1.ClusterRoleBinding
	var vap *admissionv1.ValidatingAdmissionPolicy
	var cm *corev1.ConfigMap
	for _, o := range objs {
		switch o := o.(type) {
		case *batchv1.CronJob:
			cj = o
		case *rbacv1.ClusterRole:
			role = o
		case *rbacv1.ClusterRoleBinding:
			crb = o
		case *admissionv1.ValidatingAdmissionPolicy:
			vap = o
		case *corev1.ConfigMap:
			cm = o
		}
	}
	if cj == nil || role == nil || crb == nil || vap == nil || cm == nil {
		t.Fatalf("%s lacks the CronJob, ClusterRole, its binding, the policy or the ConfigMap", layout.NodeLifecyclePath)
	}
	if cm.Data["node-lifecycle.sh"] != string(shippedScript(t, "node-lifecycle.sh")) {
		t.Error("the ConfigMap does not hold templates/node-lifecycle.sh")
	}

	// It lands on the autoscaler's node and on no other.
	spec := &cj.Spec.JobTemplate.Spec.Template.Spec
	for _, g := range src.Groups() {
		if !g.Cloud() {
			continue
		}
		node := scripttest.InServiceNode(t, src, files, g, g.Zones[0])
		ok, why := schedulable(spec, node)
		if g.Name == "ca" && !ok {
			t.Errorf("the collector cannot run on the autoscaler's node: %s", why)
		}
		if g.Name != "ca" && ok {
			t.Errorf("the collector could run on a node of %s", g.Name)
		}
	}
	if len(spec.Tolerations) != 2 {
		t.Errorf("tolerations %v, want exactly the autoscaler group's two taints", spec.Tolerations)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || spec.ServiceAccountName != crb.Subjects[0].Name {
		t.Errorf("concurrencyPolicy %s, serviceAccount %s", cj.Spec.ConcurrencyPolicy, spec.ServiceAccountName)
	}
	env := map[string]string{}
	for _, e := range spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["PROJECT"] != "lc-project-1" || env["NODE_GROUPS"] != "ca,cpu,gpu" || env["GRACE_SECONDS"] != "2700" {
		t.Errorf("env %v; want the project, the cloud groups ca,cpu,gpu (not dc) and 2700 s", env)
	}

	// RBAC: get, list, delete and patch nodes (the policy narrows the
	// patch to the stuck-initialising annotation), create events, nothing
	// else.
	if len(role.Rules) != 2 || !slices.Equal(role.Rules[0].Resources, []string{"nodes"}) ||
		!slices.Equal(role.Rules[0].Verbs, []string{"get", "list", "delete", "patch"}) || !slices.Equal(role.Rules[0].APIGroups, []string{""}) ||
		!slices.Equal(role.Rules[1].Resources, []string{"events"}) || !slices.Equal(role.Rules[1].Verbs, []string{"create"}) || !slices.Equal(role.Rules[1].APIGroups, []string{""}) {
		t.Errorf("ClusterRole rules %+v; want get, list, delete and patch on nodes and create on core events only", role.Rules)
	}
	// The policy binds the ServiceAccount RBAC grants, and names the
	// cloud groups and the project.
	s := crb.Subjects[0]
	user := "system:serviceaccount:" + s.Namespace + ":" + s.Name
	if len(vap.Spec.MatchConditions) != 1 || !strings.Contains(vap.Spec.MatchConditions[0].Expression, `"`+user+`"`) {
		t.Errorf("policy matches %+v, want %s", vap.Spec.MatchConditions, user)
	}
	vars := map[string]string{}
	for _, v := range vap.Spec.Variables {
		vars[v.Name] = v.Expression
	}
	if vars["cloudGroups"] != `["ca", "cpu", "gpu"]` {
		t.Errorf("cloudGroups %s", vars["cloudGroups"])
	}
	var all strings.Builder
	for _, v := range vap.Spec.Validations {
		all.WriteString(v.Expression)
	}
	if !strings.Contains(all.String(), `startsWith("gce://lc-project-1/")`) || !strings.Contains(vars["group"], `"`+model.VerifiedGroupLabel+`"`) {
		t.Errorf("validations %s / group %s do not check the project's providerID and the verified group label", all.String(), vars["group"])
	}
}

// shippedScript is the script name of templates/, as nodegen embeds it.
func shippedScript(t *testing.T, name string) []byte {
	t.Helper()
	b, err := templates.FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
