package render_test

import (
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/verify"
)

func TestJoinTokenRenewerPinnedToAutoscalerNode(t *testing.T) {
	src, files, nodes := exampleNodes(t)
	objs, err := k8sdecode.Objects(files[layout.JoinTokenRenewerPath])
	if err != nil {
		t.Fatal(err)
	}
	var cj *batchv1.CronJob
	var roles []*rbacv1.Role
	for _, o := range objs {
		switch o := o.(type) {
		case *batchv1.CronJob:
			cj = o
		case *rbacv1.Role:
			roles = append(roles, o)
		case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			t.Errorf("the renewer needs no cluster-wide grant, got %T", o)
		}
	}
	if cj == nil {
		t.Fatal("no CronJob")
	}
	spec := &cj.Spec.JobTemplate.Spec.Template.Spec
	home := src.Cluster.Autoscaler.NodeGroup
	for name, ns := range nodes {
		for _, node := range ns {
			ok, why := schedulable(spec, node)
			if name == home && !ok {
				t.Errorf("the renewer cannot run on the autoscaler's node %s: %s", node.Name, why)
			}
			if name != home && ok {
				t.Errorf("the renewer could run on %s (group %s)", node.Name, name)
			}
		}
	}
	// Exactly the group's taints are tolerated, nothing broader.
	if want := manifest.Tolerations(src.NodeGroups[home].Taints); !slices.Equal(spec.Tolerations, want) {
		t.Errorf("tolerations %v, want %v", spec.Tolerations, want)
	}
	if cj.Spec.Schedule != "0 */6 * * *" || cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent ||
		*cj.Spec.StartingDeadlineSeconds != 6*3600 || *cj.Spec.TimeZone != "Etc/UTC" {
		t.Errorf("schedule %q, concurrency %q, starting deadline %d, zone %q", cj.Spec.Schedule, cj.Spec.ConcurrencyPolicy,
			*cj.Spec.StartingDeadlineSeconds, *cj.Spec.TimeZone)
	}
	env := map[string]string{}
	for _, e := range spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	// ttl 24h; grace: gpu-t4's maxNodeProvisionTime 20m plus the 30m margin.
	if env["TOKEN_TTL_SECONDS"] != "86400" || env["GRACE_SECONDS"] != "3000" || env["SECRET_NAME"] != "kubeadm-join-token" ||
		env["PROJECT_ID"] != src.Cluster.GCP.Project || env["TOKEN_LABEL_KEY"] != model.JoinTokenLabelKey {
		t.Errorf("env = %v", env)
	}
	if spec.ServiceAccountName != model.JoinTokenRenewer.Name() || spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("service account %q, restart policy %q", spec.ServiceAccountName, spec.RestartPolicy)
	}
	if len(roles) != 1 || len(roles[0].Rules) != 1 || !slices.Equal(roles[0].Rules[0].Resources, []string{"secrets"}) ||
		!slices.Equal(roles[0].Rules[0].Verbs, []string{"create", "delete"}) || roles[0].Namespace != "kube-system" {
		t.Errorf("roles = %+v; want one Role in kube-system: create and delete secrets", roles)
	}
}

func TestNoJoinTokenRenewerForMetadataKey(t *testing.T) {
	src, _, _ := exampleNodes(t)
	src.Cluster.JoinToken.SecretManager = nil
	src.Cluster.JoinToken.MetadataKey = "kubeadm-join-token"
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	if files[layout.JoinTokenRenewerPath] != nil {
		t.Errorf("a renewer was rendered for a token in project metadata")
	}
	if err := verify.All(src, files); err != nil {
		t.Error(err)
	}
}
