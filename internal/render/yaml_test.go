package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/bench"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
)

// Strings that YAML treats specially unless quoted, and other awkward ones.
var awkward = []string{
	"", " ", "a b", " lead", "trail ", "yes", "no", "on", "off", "true", "False", "null", "~",
	"1", "-1", "0x10", "010", "1e3", "1.5", ".inf", "-.inf", ".nan", "12:30", "2001-12-14",
	"#", "a #b", "a: b", "- x", "? x", "[x]", "{x}", "*x", "&x", "!x", "|", ">", "%", "@", "`",
	"'", `"`, "\\", "a\nb", "a\tb", "\x00", "\u2028", "<&>", "é", "日本", "🙂", "\xff",
	"nodegen.dev/node-group", "startup-taint.cluster-autoscaler.kubernetes.io/gpu-not-ready",
	"--nodes=0:4:https://x/y", "100Mi", "10%", "0.5", "kube-system",
}

func randomTree(r *rand.Rand, depth int) any {
	n := r.IntN(10)
	if depth > 3 {
		n = r.IntN(6)
	}
	switch n {
	case 0, 1, 2:
		return awkward[r.IntN(len(awkward))]
	case 3:
		return r.IntN(2) == 0
	case 4:
		return nil
	case 5:
		switch r.IntN(6) {
		case 0:
			return 0.5 // not a whole number: the library's way
		case 1:
			return int64(math.MaxInt64) // beyond float64: the library's way
		case 2:
			return -r.IntN(1000)
		default:
			return r.IntN(1 << 20)
		}
	case 6, 7:
		m := map[string]any{}
		for range r.IntN(5) {
			m[awkward[r.IntN(len(awkward))]] = randomTree(r, depth+1)
		}
		return m
	default:
		l := []any{}
		for range r.IntN(4) {
			l = append(l, randomTree(r, depth+1))
		}
		return l
	}
}

// TestToYAMLMatchesLibrary checks toYAML against sigs.k8s.io/yaml.Marshal
// byte for byte on random documents built from awkward strings, numbers
// of every kind, booleans, nulls, nested and empty maps and lists.
func TestToYAMLMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		tree := randomTree(r, 0)
		if i%2 == 0 {
			tree = map[string]any{"root": tree, "status": map[string]any{"x": 1}}
		}
		want, werr := yaml.Marshal(tree)
		got, gerr := toYAML(tree)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("document %d %#v:\n got  %q (%v)\n want %q (%v)", i, tree, got, gerr, want, werr)
		}
		if m, ok := tree.(map[string]any); ok {
			want, werr := oldMarshalWithoutStatus(m)
			got, gerr := marshalWithoutStatus(m)
			if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("document %d without status %#v:\n got  %q (%v)\n want %q (%v)", i, tree, got, gerr, want, werr)
			}
		}
	}
}

// oldMarshalWithoutStatus is how the renderer marshalled objects before
// it had a fast path.
func oldMarshalWithoutStatus(v any) ([]byte, error) {
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

// TestMarshalObjectMatchesLibrary checks the taint remover's objects, of
// the example and of a synthetic fleet, against the way they were
// rendered before: JSON, decoded, status dropped, sigs.k8s.io/yaml.Marshal.
func TestMarshalObjectMatchesLibrary(t *testing.T) {
	synthetic := filepath.Join(t.TempDir(), "nodegroups")
	if err := bench.Write(synthetic, 30); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"../../nodegroups", synthetic} {
		l, err := source.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		objs := TaintRemoverObjects(l.Source)
		if len(objs) < 5 {
			t.Fatalf("%s: %d objects", dir, len(objs))
		}
		for i, o := range objs {
			want, err := oldMarshalWithoutStatus(o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := marshalObject(o)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: object %d differs:\n got  %s\n want %s", dir, i, got, want)
			}
		}
		for _, v := range []any{
			map[string]any{"tolerations": GPUOperatorTolerations(l.Source)},
			Tolerations([]model.Taint{{Key: "a", Effect: "NoSchedule"}}),
			[]corev1.Toleration{},
		} {
			want, _ := yaml.Marshal(v)
			got, err := toYAML(v)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %v differs:\n got  %s\n want %s", dir, fmt.Sprint(v), got, want)
			}
		}
	}
}
