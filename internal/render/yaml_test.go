package render

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/bench"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// oldMarshalObject is how the renderer marshalled objects before it used
// yamlout.
func oldMarshalObject(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	return yaml.Marshal(m)
}

// TestYAMLMatchesLibrary checks the kube-env's and the kubelet's values,
// of the example and of a synthetic fleet, against the way they were
// rendered with sigs.k8s.io/yaml (k8s's test of the same name checks the
// manifests' objects).
func TestYAMLMatchesLibrary(t *testing.T) {
	synthetic := filepath.Join(t.TempDir(), "nodegroups")
	if err := bench.Write(synthetic, 30); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"../testing/testsrc/testdata/nodegroups", synthetic} {
		l, err := source.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range l.Fleet.Clusters[0].Groups() {
			if !g.Cloud() {
				continue
			}
			for _, v := range []any{g.Kubelet, g.NodeLabels} {
				want, _ := yaml.Marshal(v)
				got, err := yamlout.Marshal(v)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %s: %+v differs:\n got  %s\n want %s", dir, g.Name, v, got, want)
				}
			}
		}
	}
}
