package secrets

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestRunsAgainstRegexp checks the table-driven scanners against the
// regular expressions they stand for, on random texts built from the
// characters that matter to them: base64 runs ([A-Za-z0-9+/_-]{28,}
// followed by up to two '='), even hex runs of at least 46 digits, and
// the ASCII check.
func TestRunsAgainstRegexp(t *testing.T) {
	b64 := regexp.MustCompile(`[A-Za-z0-9+/_-]{28,}={0,2}`)
	hexRe := regexp.MustCompile(`[0-9a-fA-F]{46,}`)
	// Pieces: hex digits, other base64 letters, separators, padding, and
	// a non-ASCII character, drawn so that long runs of each are common.
	pieces := []string{"0", "7", "a", "F", "g", "Z", "+", "/", "_", "-", "=", " ", ".", "\n", ":", "é"}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 3000 {
		var b strings.Builder
		for b.Len() < r.IntN(400) {
			p := pieces[r.IntN(len(pieces))]
			if r.IntN(3) == 0 { // a hex run, now and then a long one
				p = strings.Repeat(pieces[r.IntN(4)], 1+r.IntN(60))
			}
			b.WriteString(p)
		}
		text := b.String()

		wantB64 := [][2]int{}
		for _, m := range b64.FindAllStringIndex(text, -1) {
			wantB64 = append(wantB64, [2]int{m[0], m[1]})
		}
		gotB64 := append([][2]int{}, base64Runs(text)...)
		if !slices.Equal(gotB64, wantB64) {
			t.Fatalf("text %d %q: base64Runs %v, want %v", n, text, gotB64, wantB64)
		}

		wantHex := [][2]int{}
		for _, m := range hexRe.FindAllStringIndex(text, -1) {
			if (m[1]-m[0])%2 == 0 {
				wantHex = append(wantHex, [2]int{m[0], m[1]})
			}
		}
		gotHex := append([][2]int{}, hexRuns(text, base64Runs(text))...)
		if !slices.Equal(gotHex, wantHex) {
			t.Fatalf("text %d %q: hexRuns %v, want %v", n, text, gotHex, wantHex)
		}

		if got, want := isASCII(text), !strings.ContainsFunc(text, func(r rune) bool { return r >= utf8.RuneSelf }); got != want {
			t.Fatalf("text %d %q: isASCII %v, want %v", n, text, got, want)
		}
	}
}

// TestNormalizeFastPath checks normalize against its definition, each
// character on its own mapped by NFKC and the invisible ones dropped, on
// random texts of ASCII, characters NFKC keeps (é, ×, …), characters it
// maps (full-width '.', the Ångström sign, the "fi" ligature), a combining
// accent (NFKC of the text composes it, of the character alone not) and
// invisible characters: the quick check must never skip a text the
// definition changes.
func TestNormalizeFastPath(t *testing.T) {
	pieces := []string{"a", "b", ".", " ", "é", "×", "…", "\uFF0E", "\u212B", "\uFB01", "e\u0301", "\u0301", "\u200B", "\u00AD", "\uFEFF"}
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 5000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		var want strings.Builder
		for _, c := range text {
			if slices.Contains(invisible, c) {
				continue
			}
			want.WriteString(norm.NFKC.String(string(c)))
		}
		got, offs, changed := normalize(text)
		if wantChanged := want.String() != text; changed != wantChanged || got != want.String() {
			t.Fatalf("text %d %q: normalize %q (changed %v), want %q (changed %v)", n, text, got, changed, want.String(), wantChanged)
		}
		if changed && len(offs) != len(got)+1 {
			t.Fatalf("text %d %q: %d offsets for %d bytes", n, text, len(offs), len(got))
		}
	}
}
