package validate

import (
	"strings"
	"testing"

	"istio.io/istio/pkg/config/validation/agent"
)

// gatewayHostProblem agrees with Istio's own validation of a Gateway
// server's host (agent.ValidateNamespaceSlashWildcardHostname, as
// validateServer calls it for a Gateway), host by host.
func TestGatewayHostAgreesWithIstio(t *testing.T) {
	hosts := []string{
		"*", "results.acme.example", "*.acme.example", "apps/results.acme.example", "*/results.acme.example",
		"./*.acme.example", "10.30.1.10", "example.com.", "A.Example.COM",
		"results.acme.example:8443", "10.30.1.10:443", "https://results.acme.example", "http://x.example/path",
		"*.*", "*.example.*", "foo*.example.com", "*foo.example.com", "example.*.com", "results",
		"results.123", "-bad.example.com", "bad-.example.com", "a..example.com", "/results.acme.example",
		"apps/", "Bad_NS/results.acme.example", "apps/results", "::1", "2001:db8::1",
		strings.Repeat("a", 64) + ".example.com", strings.Repeat("abcdefghi.", 26) + "com",
	}
	for _, h := range hosts {
		istio := agent.ValidateNamespaceSlashWildcardHostname(h, true, false) == nil
		ours := gatewayHostProblem(h) == ""
		if istio != ours {
			t.Errorf("host %q: Istio accepts %v, nodegen %v (%s)", h, istio, ours, gatewayHostProblem(h))
		}
	}
}
