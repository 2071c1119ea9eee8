package yamlout

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"sigs.k8s.io/yaml"
)

// Strings that YAML treats specially unless quoted, and other awkward ones.
var awkward = []string{
	"", " ", "a b", " lead", "trail ", "yes", "no", "on", "off", "true", "False", "null", "~",
	"1", "-1", "0x10", "010", "1e3", "1.5", ".inf", "-.inf", ".nan", "12:30", "2001-12-14",
	"#", "a #b", "a: b", "- x", "? x", "[x]", "{x}", "*x", "&x", "!x", "|", ">", "%", "@", "`",
	"'", `"`, "\\", "a\nb", "a\tb", "\x00", "\u2028", "<&>", "é", "日本", "🙂", "\xff",
	"nodegen.dev/node-group", "startup-taint.cluster-autoscaler.kubernetes.io/gpu-not-ready",
	"--nodes=0:4:https://x/y", "100Mi", "10%", "0.5", "kube-system", "status",
}

// treeShape draws random generic trees (string-keyed maps, lists,
// strings, booleans, nulls and numbers): below maxDepth a node is a leaf
// or a container, deeper always a leaf; a map has fewer than maxKeys keys
// drawn by key, strings come from str and numbers from num.
type treeShape struct {
	maxDepth, maxKeys int
	key, str          func(*rand.Rand) string
	num               func(*rand.Rand) any
}

func (g treeShape) tree(r *rand.Rand, depth int) any {
	n := r.IntN(10)
	if depth > g.maxDepth {
		n = r.IntN(6)
	}
	switch n {
	case 0, 1, 2:
		return g.str(r)
	case 3:
		return r.IntN(2) == 0
	case 4:
		return nil
	case 5:
		return g.num(r)
	case 6, 7:
		m := map[string]any{}
		for range r.IntN(g.maxKeys) {
			m[g.key(r)] = g.tree(r, depth+1)
		}
		return m
	default:
		l := []any{}
		for range r.IntN(4) {
			l = append(l, g.tree(r, depth+1))
		}
		return l
	}
}

func awkwardString(r *rand.Rand) string { return awkward[r.IntN(len(awkward))] }

// numberOfEveryKind is a number the fast way writes, or one it leaves to
// the library.
func numberOfEveryKind(r *rand.Rand) any {
	switch r.IntN(7) {
	case 0:
		return 0.5 // not a whole number: the library's way
	case 1:
		return int64(math.MaxInt64) // beyond float64: the library's way
	case 2:
		return maxExactInt
	case 3:
		return -r.IntN(1000)
	default:
		return r.IntN(1 << 20)
	}
}

// randomTree is a document of awkward strings and numbers of every kind.
func randomTree(r *rand.Rand, depth int) any {
	return treeShape{maxDepth: 3, maxKeys: 5, key: awkwardString, str: awkwardString, num: numberOfEveryKind}.tree(r, depth)
}

// marshalWithoutByHand is what MarshalWithout promises to equal.
func marshalWithoutByHand(v any, drop string) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, drop)
	return yaml.Marshal(m)
}

// TestMatchesLibrary compares Marshal with sigs.k8s.io/yaml.Marshal, and
// MarshalWithout with its definition, byte for byte on random documents
// built from awkward strings, numbers of every kind, booleans, nulls,
// nested and empty maps and lists.
func TestMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for i := range 5000 {
		tree := randomTree(r, 0)
		if i%2 == 0 {
			tree = map[string]any{"root": tree, "status": map[string]any{"x": 1}}
		}
		want, werr := yaml.Marshal(tree)
		got, gerr := Marshal(tree)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("document %d %#v:\n got  %q (%v)\n want %q (%v)", i, tree, got, gerr, want, werr)
		}
		if j, err := json.Marshal(tree); err == nil {
			if _, ok, _ := fromJSON(j, ""); ok {
				fast++
			}
		}
		if m, ok := tree.(map[string]any); ok {
			want, werr := marshalWithoutByHand(m, "status")
			got, gerr := MarshalWithout(m, "status")
			if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("document %d without status %#v:\n got  %q (%v)\n want %q (%v)", i, tree, got, gerr, want, werr)
			}
		}
	}
	// Both ways must have been exercised.
	if fast < 1000 || fast > 4900 {
		t.Errorf("%d of 5000 documents took the fast way", fast)
	}
}
