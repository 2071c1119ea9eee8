package verify_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/verify"
)

// TestAllChecksOnpremJoins: an onprem group's join script that registers
// other taints, labels or a providerID than the source's, names another
// control plane or other nodes, sets a label the kubelet may not set,
// holds a placeholder the substitution could break, or is missing, fails
// All, naming what is wrong.
func TestAllChecksOnpremJoins(t *testing.T) {
	src, files := verifiedExample(t)
	p := layout.OnpremJoinPath("onprem-gpu")
	for _, c := range []struct{ name, old, new, want string }{
		{"taint", "    value: present\nNODEGEN_JOIN_CONFIGURATION", "    value: absent\nNODEGEN_JOIN_CONFIGURATION", "taints differ"},
		{"label", "nodegen.dev/node-group=onprem-gpu", "nodegen.dev/node-group=onprem-gpx", "labels differ"},
		{"restricted label", "value: example.com/location=", "value: node-restriction.kubernetes.io/x=y,example.com/location=", "may not set on its own Node"},
		{"provider-id", "gce://onprem.invalid/onprem/@NODEGEN_INSTANCE_NAME@", "gce://onprem.invalid/other/@NODEGEN_INSTANCE_NAME@", "provider-id"},
		{"endpoint", "readonly API_SERVER_ENDPOINT='10.20.0.10:6443'", "readonly API_SERVER_ENDPOINT='10.20.0.11:6443'", "API_SERVER_ENDPOINT"},
		{"discovery", "    apiServerEndpoint: 10.20.0.10:6443", "    apiServerEndpoint: 10.20.0.11:6443", "apiServerEndpoint"},
		{"declared nodes", "readonly -a DECLARED_NODES=()", "readonly -a DECLARED_NODES=('x')", "DECLARED_NODES"},
		{"placeholder", "  name: '@NODEGEN_INSTANCE_NAME@'", "  name: x@NODEGEN_INSTANCE_NAME@", "placeholder in"},
		{"syntax", "main \"$@\"", "main \"$@", p + ":"},
	} {
		t.Run(c.name, func(t *testing.T) { allFails(t, src, files, p, c.old, c.new, c.want, p) })
	}
	t.Run("missing", func(t *testing.T) {
		bad := maps.Clone(files)
		delete(bad, p)
		if err := verify.All(src, bad); err == nil || !strings.Contains(err.Error(), p+": missing") {
			t.Errorf("All without %s: %v", p, err)
		}
	})
}
