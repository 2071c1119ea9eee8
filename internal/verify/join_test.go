package verify

import (
	"strings"
	"testing"
)

// TestJoinTemplateOf: the JoinConfiguration is the body of the one heredoc
// with the quoted delimiter; an unquoted one (where bash would expand $)
// or a second one is not accepted.
func TestJoinTemplateOf(t *testing.T) {
	const doc = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n"
	quoted := "f() {\n\tcat <<'NODEGEN_JOIN_CONFIGURATION'\n" + doc + "NODEGEN_JOIN_CONFIGURATION\n}\n"
	got, err := JoinTemplateOf([]byte("#!/usr/bin/env bash\n" + quoted + "f\n"))
	if err != nil || string(got) != doc {
		t.Fatalf("got %q, %v; want %q", got, err, doc)
	}
	for name, script := range map[string]string{
		"none":     "echo hi\n",
		"unquoted": "cat <<NODEGEN_JOIN_CONFIGURATION\n" + doc + "NODEGEN_JOIN_CONFIGURATION\n",
		"two":      quoted + quoted,
	} {
		if _, err := JoinTemplateOf([]byte(script)); err == nil || !strings.Contains(err.Error(), "want 1") {
			t.Errorf("%s: got %v, want an error", name, err)
		}
	}
}
