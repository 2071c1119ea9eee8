package validate_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRulesOnly holds validate to rules about the source: it does not
// import the packages that render (render and render/*), verify or
// explain artifacts, nor the pipeline that calls them all (package
// pipeline).
func TestRulesOnly(t *testing.T) {
	const mod = "github.com/nodegen/nodegen/internal/"
	out, err := exec.Command("go", "list", "-deps", mod+"validate").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 {
		t.Fatalf("go list -deps printed %q: no dependencies", out)
	}
	for _, d := range deps {
		rel := strings.TrimPrefix(d, mod)
		switch {
		case rel == "render", strings.HasPrefix(rel, "render/"), rel == "explain", rel == "verify", rel == "pipeline":
			t.Errorf("validate depends on %s", d)
		}
	}
}
