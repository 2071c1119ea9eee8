package validate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestIstioTableDocumented holds docs/mesh.md's table of Istio releases to
// the table vet judges istioVersion by (model.IstioReleases): the same
// lines, newest patches and Kubernetes ranges, in the same order.
func TestIstioTableDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testsrc.RepoRoot(), "docs", "mesh.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| Istio | newest patch read | Kubernetes |\n|---|---|---|\n")
	if !ok {
		t.Fatal("docs/mesh.md: no table of Istio releases")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var want []string
	for _, m := range model.IstioReleases {
		want = append(want, fmt.Sprintf("| 1.%d | 1.%d.%d | 1.%d to 1.%d |", m.Minor, m.Minor, m.LastPatch, m.OldestKubernetes, m.NewestKubernetes))
	}
	if got := strings.Split(strings.TrimSpace(table), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/mesh.md's table of Istio releases:\n%s\nwant (model.IstioReleases):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
