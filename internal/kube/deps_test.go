package kube_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryLinksNoTypedClientset holds the nodegen binary to the REST
// client: neither client-go's typed clientset (k8s.io/client-go/kubernetes)
// nor any of its packages (its scheme registers every API group, its typed
// clients are most of client-go) is among its dependencies. Tests may use
// the clientset; the binary may not.
func TestBinaryLinksNoTypedClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/nodegen/nodegen/cmd/nodegen").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"k8s.io/client-go/rest", "github.com/nodegen/nodegen/internal/kube"} {
		if !slices.Contains(deps, want) {
			t.Fatalf("go list -deps lists no %s among %d packages: not the binary's dependencies", want, len(deps))
		}
	}
	const clientset = "k8s.io/client-go/kubernetes"
	var bad []string
	for _, d := range deps {
		if d == clientset || strings.HasPrefix(d, clientset+"/") {
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		t.Errorf("the nodegen binary depends on %d packages of the typed clientset, among them %s (find who imports them with go list -f '{{.ImportPath}} {{.Imports}}' -deps ./cmd/nodegen)", len(bad), strings.Join(bad[:min(3, len(bad))], ", "))
	}
}
