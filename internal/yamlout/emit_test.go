package yamlout

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
)

// randomKey is a key made of the bytes that matter to the library's key
// order: letters, digits (zeros above all), punctuation, and now and then
// a non-ASCII letter, a space or a long run.
func randomKey(r *rand.Rand) string {
	const alphabet = "aAbzZ0001239-._/ ~"
	if r.IntN(40) == 0 {
		return awkward[r.IntN(len(awkward))]
	}
	var b strings.Builder
	for range r.IntN(6) {
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	switch r.IntN(30) {
	case 0:
		b.WriteString("é")
	case 1:
		b.WriteString(strings.Repeat("k", 125+r.IntN(8)))
	}
	return b.String()
}

// randomString is a value string: a plain-looking word, an awkward
// string, or words that make a line longer than the emitter's width.
func randomString(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return awkward[r.IntN(len(awkward))]
	case 1:
		n := r.IntN(14)
		words := make([]string, n)
		for i := range words {
			words[i] = []string{"word", "a", "x:y", "#", "-", "'", "é", "longerword"}[r.IntN(8)]
		}
		return strings.Join(words, " ")
	case 2:
		return "@NODEGEN_ZONE@"
	case 3:
		return strings.Repeat("n", r.IntN(100))
	default:
		return randomKey(r)
	}
}

// randomEmitTree is a tree of the kinds fromJSON builds, with keys and
// strings that test the library's key order and scalar styles.
func randomEmitTree(r *rand.Rand, depth int) any {
	return treeShape{maxDepth: 4, maxKeys: 6, key: randomKey, str: randomString,
		num: func(r *rand.Rand) any { return r.IntN(2000) - 1000 }}.tree(r, depth)
}

// TestEmitMatchesLibrary compares emit with go.yaml.in/yaml/v2's Marshal
// byte for byte on random trees of the kinds fromJSON builds: keys that
// test the library's key order, strings of every style, lines long
// enough to be broken, keys too long to be simple keys.
func TestEmitMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	emitted := 0
	const docs = 20000
	for i := range docs {
		tree := randomEmitTree(r, 0)
		if i%3 == 0 {
			tree = map[string]any{randomKey(r): tree}
		}
		got, ok := emit(tree)
		if !ok {
			continue
		}
		emitted++
		want, err := yamlv2.Marshal(tree)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("tree %d %#v:\n got  %q\n want %q (%v)", i, tree, got, want, err)
		}
	}
	// The writer must have handled many documents, not given up on them.
	if emitted < docs/3 {
		t.Errorf("emit wrote %d of %d documents", emitted, docs)
	}
}

// TestKeyLess compares keyLess with the library's order on pairs of
// random keys: each pair as a map of two keys.
func TestKeyLess(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		a, b := randomKey(r), randomKey(r)
		if a == b || !asciiKey(a) || !asciiKey(b) || len(a) > maxSimpleKey || len(b) > maxSimpleKey {
			continue
		}
		y, err := yamlv2.Marshal(map[string]int{a: 1, b: 2})
		if err != nil {
			t.Fatal(err)
		}
		// The first line holds the first key's value.
		first := bytes.Contains(bytes.SplitN(y, []byte("\n"), 2)[0], []byte(": 1"))
		if keyLess(a, b) != first && keyLess(b, a) == first {
			t.Errorf("keys %q and %q: keyLess says %v, the library writes %q", a, b, keyLess(a, b), y)
		}
	}
}
