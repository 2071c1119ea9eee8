package render_test

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestNodeCSRApproverManifest: the cloud join path's manifest, decoded
// strictly: the approver runs on the autoscaler's node only, with each
// cloud group's instance names, zones and provisioning time; its RBAC
// approves for the kubelet client signer only; its policy matches every
// resource for its ServiceAccount alone; the cloud group's RBAC is what
// kubeadm join needs and names that group only; the pattern the policy
// approves matches the groups' instance names and nothing like them.
func TestNodeCSRApproverManifest(t *testing.T) {
	src, files := testsrc.Spec{}.MustRender(t)
	objs, err := k8sdecode.Objects(files[layout.NodeCSRApproverPath])
	if err != nil {
		t.Fatal(err)
	}
	home := src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]
	var dep *appsv1.Deployment
	var policy *admissionv1.ValidatingAdmissionPolicy
	roles := map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			dep = o
		case *admissionv1.ValidatingAdmissionPolicy:
			policy = o
		case *rbacv1.ClusterRole:
			roles[o.Name] = o.Rules
		case *rbacv1.Role:
			roles[o.Namespace+"/"+o.Name] = o.Rules
		case *rbacv1.ClusterRoleBinding:
			want := model.CloudBootstrapGroup
			if o.Name == model.NodeCSRApprover.Name() {
				want = model.NodeCSRApprover.Name()
			}
			if len(o.Subjects) != 1 || o.Subjects[0].Name != want {
				t.Errorf("ClusterRoleBinding %s binds %v, want only %s", o.Name, o.Subjects, want)
			}
		case *rbacv1.RoleBinding:
			if len(o.Subjects) != 1 || o.Subjects[0].Kind != rbacv1.GroupKind || o.Subjects[0].Name != model.CloudBootstrapGroup {
				t.Errorf("RoleBinding %s/%s binds %v", o.Namespace, o.Name, o.Subjects)
			}
		}
	}
	if dep == nil || policy == nil {
		t.Fatal("no Deployment or no policy")
	}
	pod := dep.Spec.Template.Spec
	if pod.NodeSelector[model.VerifiedGroupLabel] != home.Name || len(pod.NodeSelector) != 1 {
		t.Errorf("the approver's nodeSelector is %v, want the autoscaler's group %s", pod.NodeSelector, home.Name)
	}
	if *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || pod.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("replicas %d, strategy %s, restart %s", *dep.Spec.Replicas, dep.Spec.Strategy.Type, pod.RestartPolicy)
	}
	env := map[string]string{}
	for _, v := range pod.Containers[0].Env {
		env[v.Name] = v.Value
	}
	groups := env["INSTANCE_GROUPS"]
	if env["CLOUD_BOOTSTRAP_GROUP"] != model.CloudBootstrapGroup || env["PROJECT"] != src.Cluster.GCP.Project {
		t.Errorf("environment %v", env)
	}
	lines := strings.Split(groups, "\n")
	if len(lines) != len(src.CloudGroups()) {
		t.Errorf("INSTANCE_GROUPS has %d lines for %d cloud groups", len(lines), len(src.CloudGroups()))
	}
	for i, g := range src.CloudGroups() {
		f := strings.Fields(lines[i])
		if f[0] != src.Cluster.BaseInstanceName(g) || f[1] != g.Name || f[2] != strconv.Itoa(int(src.Cluster.MaxNodeProvisionTime(g)/time.Second)) || !slices.Equal(f[3:], g.Zones) {
			t.Errorf("INSTANCE_GROUPS line %q for group %s", lines[i], g.Name)
		}
	}

	// TEMPLATES: each group's template prefix and labels; TEMPLATE_METADATA:
	// the keys of every group's instance template, a fixed value with it.
	tl := strings.Split(env["TEMPLATES"], "\n")
	if len(tl) != len(src.CloudGroups()) {
		t.Errorf("TEMPLATES has %d lines for %d cloud groups", len(tl), len(src.CloudGroups()))
	}
	wantMD := map[string]bool{}
	for i, g := range src.CloudGroups() {
		want := src.Cluster.BaseInstanceName(g) + " " + src.Cluster.TemplatePrefix(g) + " nodegen-cluster=" + src.Cluster.Name + " nodegen-node-group=" + g.Name
		if i < len(tl) && tl[i] != want {
			t.Errorf("TEMPLATES line %q for group %s, want %q", tl[i], g.Name, want)
		}
		for _, m := range src.InstanceTemplate(g).Properties.Metadata {
			if m.Rendered {
				wantMD[m.Key] = true
			} else {
				wantMD[m.Key+"="+m.Value] = true
			}
		}
	}
	if got := strings.Fields(env["TEMPLATE_METADATA"]); !slices.Equal(got, slices.Sorted(maps.Keys(wantMD))) || !slices.Contains(got, model.MetadataStartupScript) {
		t.Errorf("TEMPLATE_METADATA %q, want %v", env["TEMPLATE_METADATA"], slices.Sorted(maps.Keys(wantMD)))
	}

	approve := rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
		ResourceNames: []string{model.KubeletClientSigner}, Verbs: []string{"approve"}}
	if !slices.ContainsFunc(roles[model.NodeCSRApprover.Name()], func(r rbacv1.PolicyRule) bool { return equalRule(r, approve) }) {
		t.Errorf("the approver's ClusterRole lacks %v", approve)
	}
	for _, r := range roles[model.NodeCSRApprover.Name()] {
		if slices.Contains(r.Resources, "signers") && !equalRule(r, approve) {
			t.Errorf("the approver's ClusterRole has signer rule %v", r)
		}
		// patch on nodes only: the verified group label, which the policy
		// holds it to.
		patchesNodes := slices.Equal(r.Resources, []string{"nodes"}) && slices.Equal(r.Verbs, []string{"get", "list", "patch"})
		if slices.ContainsFunc(r.Verbs, func(v string) bool {
			return v == "*" || v == "create" || v == "delete" || (v == "patch" && !patchesNodes)
		}) {
			t.Errorf("the approver's ClusterRole grants %v", r)
		}
	}
	if got := roles["kube-system/"+cloudJoinRoleName]; len(got) != 1 || !slices.Equal(got[0].ResourceNames, []string{"kubeadm-config", "kubelet-config"}) || !slices.Equal(got[0].Verbs, []string{"get"}) {
		t.Errorf("the cloud group's kube-system Role %v", got)
	}
	if got := roles["kube-public/"+cloudJoinRoleName]; len(got) != 1 || !slices.Equal(got[0].ResourceNames, []string{"cluster-info"}) {
		t.Errorf("the cloud group's kube-public Role %v", got)
	}

	rules := policy.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 || !slices.Equal(rules[0].APIGroups, []string{"*"}) || !slices.Equal(rules[0].Resources, []string{"*/*"}) || rules[0].Operations[0] != admissionv1.OperationAll {
		t.Errorf("the policy matches %v; want every operation on every resource", rules)
	}
	if len(policy.Spec.MatchConditions) != 1 || !strings.Contains(policy.Spec.MatchConditions[0].Expression, `"`+model.NodeCSRApprover.User()+`"`) {
		t.Errorf("match conditions %v", policy.Spec.MatchConditions)
	}

	re := regexp.MustCompile(policyInstanceNamePattern(t, policy))
	for _, g := range src.CloudGroups() {
		base := src.Cluster.BaseInstanceName(g)
		if !re.MatchString(base + "-ab12") {
			t.Errorf("the pattern refuses %s-ab12", base)
		}
		for _, n := range []string{base + "-ab1", base + "-ab123", base + "-AB12", "x" + base + "-ab12", base + "-ab12\n"} {
			if re.MatchString(n) {
				t.Errorf("the pattern accepts %q", n)
			}
		}
	}
	for _, n := range []string{"onprem-gpu-1", "cp-1", src.Cluster.Name + "-ab12"} {
		if re.MatchString(n) {
			t.Errorf("the pattern accepts %q", n)
		}
	}
}

// cloudJoinRoleName names the cloud join path's Roles and bindings.
const cloudJoinRoleName = "nodegen:cloud-node-bootstrapper"

// policyInstanceNamePattern is the pattern of instance names the
// approver's policy approves CSRs for: the one pattern its validations
// match the CSR's node name against.
func policyInstanceNamePattern(t *testing.T, policy *admissionv1.ValidatingAdmissionPolicy) string {
	t.Helper()
	var found []string
	for _, v := range policy.Spec.Validations {
		for _, m := range nodeNameMatch.FindAllStringSubmatch(v.Expression, -1) {
			p, err := strconv.Unquote(m[1])
			if err != nil {
				t.Fatal(err)
			}
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the policy matches the node name against %d patterns, want 1: %q", len(found), found)
	}
	return found[0]
}

var nodeNameMatch = regexp.MustCompile(`variables\.node\.matches\(("(?:[^"\\]|\\.)*")\)`)

func equalRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.Verbs, b.Verbs)
}
