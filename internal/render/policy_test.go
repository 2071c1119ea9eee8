package render_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// taintRemoverObjects decodes the example's taint-remover manifest.
func taintRemoverObjects(t *testing.T) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding,
	[]*appsv1.DaemonSet, *rbacv1.ClusterRoleBinding) {
	t.Helper()
	_, files := testsrc.Example(t)
	objs, err := k8sdecode.Objects(files[layout.TaintRemoverPath])
	if err != nil {
		t.Fatal(err)
	}
	var vap *admissionv1.ValidatingAdmissionPolicy
	var vapb *admissionv1.ValidatingAdmissionPolicyBinding
	var dss []*appsv1.DaemonSet
	var crb *rbacv1.ClusterRoleBinding
	for _, o := range objs {
		switch o := o.(type) {
		case *admissionv1.ValidatingAdmissionPolicy:
			vap = o
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			vapb = o
		case *appsv1.DaemonSet:
			dss = append(dss, o)
		case *rbacv1.ClusterRoleBinding:
			crb = o
		}
	}
	if vap == nil || vapb == nil || crb == nil || len(dss) == 0 {
		t.Fatalf("%s lacks the policy, its binding, the ClusterRoleBinding or a DaemonSet", layout.TaintRemoverPath)
	}
	return vap, vapb, dss, crb
}

// The policy's group→taint map must say what the DaemonSets do: each
// DaemonSet's node group (its nodeSelector) maps to the taint it removes
// and adds back.
func TestPolicyKeysMatchDaemonSets(t *testing.T) {
	vap, vapb, dss, crb := taintRemoverObjects(t)
	var keys map[string]map[string]string
	for _, v := range vap.Spec.Variables {
		if v.Name == "startupTaints" {
			if err := json.Unmarshal([]byte(v.Expression), &keys); err != nil {
				t.Fatalf("startupTaints %q is not a map of string maps: %v", v.Expression, err)
			}
		}
	}
	want := map[string]map[string]string{}
	for _, ds := range dss {
		c := ds.Spec.Template.Spec.Containers[0]
		taint := map[string]string{}
		for env, field := range map[string]string{"STARTUP_TAINT_KEY": "key", "STARTUP_TAINT_VALUE": "value", "STARTUP_TAINT_EFFECT": "effect"} {
			i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == env })
			if i < 0 {
				t.Fatalf("%s has no %s", ds.Name, env)
			}
			taint[field] = c.Env[i].Value
		}
		want[ds.Spec.Template.Spec.NodeSelector[model.VerifiedGroupLabel]] = taint
	}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("policy keys %v, DaemonSets remove %v", keys, want)
	}

	// It binds, and it matches the user the ClusterRoleBinding grants.
	if vapb.Spec.PolicyName != vap.Name || !slices.Equal(vapb.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
		t.Errorf("binding %+v does not enforce policy %s", vapb.Spec, vap.Name)
	}
	s := crb.Subjects[0]
	user := "system:serviceaccount:" + s.Namespace + ":" + s.Name
	if len(vap.Spec.MatchConditions) != 1 || !strings.Contains(vap.Spec.MatchConditions[0].Expression, `"`+user+`"`) {
		t.Errorf("policy matches %+v, want the remover's user %s", vap.Spec.MatchConditions, user)
	}
	if *vap.Spec.FailurePolicy != admissionv1.Fail {
		t.Errorf("failurePolicy %s, want Fail", *vap.Spec.FailurePolicy)
	}
}

// Every Node spec field but taints must be kept: a new field in k8s.io/api
// fails this test until the policy covers it.
func TestPolicyKeepsEveryOtherSpecField(t *testing.T) {
	var fields []string
	rt := reflect.TypeFor[corev1.NodeSpec]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "taints" {
			fields = append(fields, name)
		}
	}
	slices.Sort(fields)
	vap, _, _, _ := taintRemoverObjects(t)
	var all strings.Builder
	for _, v := range vap.Spec.Validations {
		all.WriteString(v.Expression + "\n")
	}
	for _, f := range fields {
		if !strings.Contains(all.String(), "object.spec.?"+f+" == oldObject.spec.?"+f) {
			t.Errorf("no validation keeps spec.%s", f)
		}
	}
	for _, f := range []string{"labels", "annotations", "finalizers", "ownerReferences"} {
		if !strings.Contains(all.String(), "object.metadata.?"+f) {
			t.Errorf("no validation keeps metadata.%s", f)
		}
	}
}
