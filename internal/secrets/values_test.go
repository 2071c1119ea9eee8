package secrets

import (
	"slices"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/token"
)

type noPos struct{}

func (noPos) Pos(...cue.Selector) token.Pos    { return token.NoPos }
func (noPos) KeyPos(...cue.Selector) token.Pos { return token.NoPos }

// TestValuesEveryKind: Values finds a secret wherever a value holds one
// (a string field, a list element, a nested struct, a field name, the
// default of a disjunction, a struct one of whose fields is an error)
// and nowhere else.
func TestValuesEveryKind(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	v := cuecontext.New().CompileString(`
plain:   "` + token + `"
number:  42
flag:    true
nothing: null
list: ["a", "` + token + `", 3, {inner: "` + token + `"}]
nested: deeper: value: "` + token + `"
"` + token + `": "the key holds it"
withDefault: *"` + token + `" | string
broken: {
	bad:  int & "x"
	good: "` + token + `"
}
clean: {a: "x", b: [1, 2], c: {d: "y"}}
`)
	var got []string
	for _, f := range Values(v, noPos{}) {
		got = append(got, f.Path)
	}
	slices.Sort(got)
	got = slices.Compact(got)
	want := []string{
		`"` + Redact(token) + `"`,
		"broken.good",
		"list.1",
		"list.3.inner",
		"nested.deeper.value",
		"plain",
		"withDefault",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("secrets at\n%q\nwant\n%q", got, want)
	}
}
