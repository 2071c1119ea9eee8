package k8sdecode_test

import (
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/k8sdecode"
)

func TestObjectsAdmissionPolicy(t *testing.T) {
	const policy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: p}
spec:
  validations: [{expression: "true"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: p}
spec: {policyName: p, validationActions: [Deny]}
`
	objs, err := k8sdecode.Objects([]byte(policy))
	if err != nil || len(objs) != 2 {
		t.Fatalf("Objects: %d objects, %v; want the policy and its binding", len(objs), err)
	}
	for _, bad := range []string{
		strings.Replace(policy, "validations:", "validation:", 1),
		strings.Replace(policy, "policyName:", "policy:", 1),
	} {
		if _, err := k8sdecode.Objects([]byte(bad)); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("Objects of a misspelt field: %v, want an unknown-field error", err)
		}
	}
}
