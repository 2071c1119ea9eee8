package verify_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestReadsNoRenderer holds verify to re-reading artifacts: it depends on
// no package that renders them, so that a check cannot borrow the
// renderer's own code for what it checks.
func TestReadsNoRenderer(t *testing.T) {
	const mod = "github.com/nodegen/nodegen/internal/"
	out, err := exec.Command("go", "list", "-deps", mod+"verify").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 {
		t.Fatalf("go list -deps printed %q: no dependencies", out)
	}
	for _, d := range deps {
		if p := strings.TrimPrefix(d, mod); p == "render" || strings.HasPrefix(p, "render/") {
			t.Errorf("verify depends on %s", d)
		}
	}
}
