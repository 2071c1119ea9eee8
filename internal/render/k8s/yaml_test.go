package k8s

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
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

// TestYAMLMatchesLibrary checks the taint remover's objects and the GPU
// Operator values' tolerations, of the example and of a synthetic fleet, against the way
// they were rendered with sigs.k8s.io/yaml.
func TestYAMLMatchesLibrary(t *testing.T) {
	synthetic := filepath.Join(t.TempDir(), "nodegroups")
	if err := bench.Write(synthetic, 30); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"../../testing/testsrc/testdata/nodegroups", synthetic} {
		l, err := source.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := taintRemoverObjects(l.Fleet.Clusters[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) < 5 {
			t.Fatalf("%s: %d objects", dir, len(objs))
		}
		for i, o := range objs {
			want, err := oldMarshalObject(o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := yamlout.MarshalWithout(o, "status")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: object %d differs:\n got  %s\n want %s", dir, i, got, want)
			}
		}
		for _, v := range []any{
			map[string]any{"tolerations": gpuOperatorTolerations(l.Fleet.Clusters[0])},
			manifest.Tolerations([]model.Taint{{Key: "a", Effect: "NoSchedule"}}),
			[]corev1.Toleration{},
		} {
			want, _ := yaml.Marshal(v)
			got, err := yamlout.Marshal(v)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %+v differs:\n got  %s\n want %s", dir, v, got, want)
			}
		}
	}
}
