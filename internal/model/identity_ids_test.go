package model

import (
	"regexp"
	"strings"
	"testing"
)

// IAM's rule for a service account's account_id (Google Cloud IAM API,
// projects.serviceAccounts.create: "must be 6-30 characters long, and match
// the regular expression [a-z]([-a-z0-9]*[a-z0-9])").
var iamAccountID = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])$`)

// TestServiceAccountIDWithinIAM: for every cluster name the schema accepts
// (a DNS label, up to 63 characters) and every role, the account ID nodegen
// names is one IAM accepts, and two clusters never share one.
func TestServiceAccountIDWithinIAM(t *testing.T) {
	seen := map[string]string{}
	for n := 1; n <= 63; n++ {
		for _, base := range []string{"a", "x-", "k8s-"} {
			name := strings.TrimRight(strings.Repeat(base, n)[:n], "-")
			if name == "" {
				continue
			}
			for _, role := range []string{RoleNodes, RoleAutoscaler} {
				id := ServiceAccountID(name, role)
				if len(id) < 6 || len(id) > 30 || !iamAccountID.MatchString(id) {
					t.Errorf("cluster %q, role %s: account ID %q is not one IAM accepts", name, role, id)
				}
				if other, ok := seen[id]; ok && other != name {
					t.Errorf("clusters %q and %q share the account ID %q", other, name, id)
				}
				seen[id] = name
			}
		}
	}
}
