package verify

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// exampleScripts are the startup scripts of the tests' example, by group.
func exampleScripts(t testing.TB) (names []string, scripts [][]byte) {
	src, files := testsrc.Example(t)
	for _, g := range src.CloudGroups() {
		names = append(names, g.Name)
		scripts = append(scripts, files[layout.StartupScriptPath(g.Name)])
	}
	return names, scripts
}

// refOf parses a script in full and records its shape.
func refOf(t testing.TB, script []byte) *shapeRef {
	t.Helper()
	var s scriptShapes
	if _, err := s.heredocs(script); err != nil {
		t.Fatal(err)
	}
	if len(s.refs) != 1 {
		t.Fatalf("the script gave %d references, want 1", len(s.refs))
	}
	return s.refs[0]
}

// sameAsParse holds one reading of script by ref's shape to the bash
// parser's: when the match takes the script, the parser parses it and
// finds the same quoted heredocs. It tells whether the match took it.
func sameAsParse(t testing.TB, ref *shapeRef, script []byte) bool {
	t.Helper()
	got, ok := ref.match(splitLines(script))
	if !ok {
		return false
	}
	f, err := parseScript(script)
	if err != nil {
		t.Fatalf("the match takes a script the parser refuses (%v):\n%s", err, script)
	}
	if want := quotedHeredocs(f); !reflect.DeepEqual(got, want) {
		t.Fatalf("the match reads heredocs\n%q\nthe parser\n%q\nof:\n%s", got, want, script)
	}
	return true
}

// TestScriptShapeIsParse holds the shape match to the bash parser: every
// script it takes, the parser parses, with the same quoted heredocs.
// The scripts are the example's, each against the others, and random
// changes of them: inside the free leaves (with the bytes that end a
// leaf among those put in), in the heredocs' bodies (the delimiter among
// the lines put in), and anywhere.
func TestScriptShapeIsParse(t *testing.T) {
	names, scripts := exampleScripts(t)
	refs := make([]*shapeRef, len(scripts))
	for i, s := range scripts {
		refs[i] = refOf(t, s)
		if len(refs[i].leaves) == 0 || len(refs[i].bodies) == 0 {
			t.Fatalf("%s: %d lines with free leaves, %d quoted heredocs: the example's script has both", names[i], len(refs[i].leaves), len(refs[i].bodies))
		}
	}
	pairs := 0
	for i, r := range refs {
		for j, s := range scripts {
			if sameAsParse(t, r, s) {
				pairs++
			} else if i == j {
				t.Errorf("%s's script does not match its own shape", names[i])
			}
		}
	}
	if pairs <= len(scripts) {
		t.Errorf("no two of the example's scripts share a shape (%d matches of %d scripts)", pairs, len(scripts))
	}

	rng, randBytes := randomBytes(t, "a0 9'\"#$\\`;)(|&<>{}=\n\t-")
	runs := changeRuns(3000)
	taken := map[string]int{}
	for range runs {
		k := rng.IntN(len(scripts))
		r, script := refs[k], scripts[k]
		lines := slices.Clone(r.lines)
		kind := "anywhere"
		switch rng.IntN(3) {
		case 0: // a free leaf's bytes replaced
			kind = "leaf"
			var at []int
			for i := range r.leaves {
				at = append(at, i)
			}
			slices.Sort(at)
			i := at[rng.IntN(len(at))]
			f := r.leaves[i][rng.IntN(len(r.leaves[i]))]
			var mid []byte
			switch {
			case f.kind == digitsLeaf && rng.IntN(2) == 0:
				mid = []byte{byte('0' + rng.IntN(10)), byte('0' + rng.IntN(10))}
			case rng.IntN(2) == 0:
				mid = bytes.Map(func(c rune) rune {
					if c == '\'' || c == '\n' {
						return 'x'
					}
					return c
				}, randBytes(rng.IntN(12)))
			default:
				mid = randBytes(rng.IntN(12))
			}
			lines[i] = slices.Concat(lines[i][:f.start], mid, lines[i][f.end:])
		case 1: // a quoted heredoc's body changed
			kind = "body"
			var at []int
			for i := range r.bodies {
				at = append(at, i)
			}
			slices.Sort(at)
			first := at[rng.IntN(len(at))]
			b := r.bodies[first]
			i := first + rng.IntN(b.end-first)
			var put [][]byte
			for range rng.IntN(3) {
				if rng.IntN(4) == 0 {
					put = append(put, []byte(b.delim))
				} else {
					put = append(put, randBytes(rng.IntN(20)))
				}
			}
			lines = slices.Concat(lines[:i], put, lines[i+rng.IntN(2):])
		}
		changed := bytes.Join(lines, []byte{'\n'})
		if kind == "anywhere" {
			p := rng.IntN(len(changed))
			changed = slices.Concat(changed[:p], randBytes(rng.IntN(3)), changed[min(p+rng.IntN(3), len(changed)):])
		}
		if !bytes.Equal(changed, script) && sameAsParse(t, r, changed) {
			taken[kind]++
		}
	}
	t.Logf("changed scripts the match took: %v", taken)
	for _, kind := range []string{"leaf", "body", "anywhere"} {
		if taken[kind] < runs/60 {
			t.Errorf("the match took %d scripts changed %s: too few to hold it to the parser", taken[kind], kind)
		}
	}
}

// FuzzScriptShape holds the shape match to the bash parser on any script,
// against the shape of the example's first startup script.
func FuzzScriptShape(f *testing.F) {
	_, scripts := exampleScripts(f)
	for _, s := range scripts {
		f.Add(s)
	}
	ref := refOf(f, scripts[0])
	f.Fuzz(func(t *testing.T, script []byte) {
		sameAsParse(t, ref, script)
	})
}

// TestScriptShapesRead: scriptShapes reads each script as the parser does
// (the same heredocs, the same error), and parses in full only the
// scripts of a shape it has not seen.
func TestScriptShapesRead(t *testing.T) {
	_, scripts := exampleScripts(t)
	var s scriptShapes
	for range 2 {
		for _, script := range scripts {
			got, err := s.heredocs(script)
			f, perr := parseScript(script)
			if err != nil || perr != nil {
				t.Fatalf("errors %v and %v", err, perr)
			}
			if want := quotedHeredocs(f); !reflect.DeepEqual(got, want) {
				t.Fatalf("heredocs %q, want %q", got, want)
			}
		}
	}
	if len(s.refs) == 0 || len(s.refs) >= len(scripts) {
		t.Errorf("%d scripts read twice parsed %d in full, want fewer than %d and at least 1", len(scripts), len(s.refs), len(scripts))
	}
	bad := slices.Concat(scripts[0], []byte("if true; then\n"))
	_, err := s.heredocs(bad)
	_, perr := parseScript(bad)
	if err == nil || perr == nil || err.Error() != perr.Error() {
		t.Errorf("a script the parser refuses: %v, the parser %v", err, perr)
	}
}

// randomBytes is a generator seeded from the clock (the seed logged, to
// repeat a failure) and a source of random bytes from it: a third of
// them from alphabet, the bytes that matter to a parser, the rest
// lowercase letters.
func randomBytes(t *testing.T, alphabet string) (*rand.Rand, func(n int) []byte) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	return rng, func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			if rng.IntN(3) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = byte('a' + rng.IntN(26))
			}
		}
		return b
	}
}

// changeRuns is how many random changes a shape property test makes: n,
// and a tenth of it under the race detector, where the plain run holds
// the match to the parser and this one races nothing.
func changeRuns(n int) int {
	if raceDetector {
		return n / 10
	}
	return n
}
