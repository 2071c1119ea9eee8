package diag

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Suggest returns the candidate closest to word when it is a plausible
// slip of the keyboard: one edit away (an insertion, a deletion, a
// substitution or two neighbouring letters swapped), or equal but for case.
// It returns "" when no candidate, or more than one equally close one, fits.
func Suggest(word string, candidates []string) string {
	best, n := "", 0
	for _, c := range candidates {
		if c == word {
			return ""
		}
		if strings.EqualFold(c, word) || Distance(c, word) <= 1 {
			if c != best {
				best, n = c, n+1
			}
		}
	}
	if n != 1 {
		return ""
	}
	return best
}

// Distance is the optimal string alignment distance between a and b: the
// number of single-byte insertions, deletions, substitutions and
// transpositions of neighbours that turn a into b.
func Distance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// SuggestNames returns what word was likely meant to be among candidates:
// the slip Suggest finds, and the candidates that name the same thing
// with a word more or a word less, whose words hold all of word's or
// whose words word holds ("nvidia-t4" for "nvidia-tesla-t4",
// "nvidia-tesla-l4" for "nvidia-l4", "maxNodes" for "maxNodesTotal"), the
// fewest words apart and at most two words apart. Words are split at '-',
// '_', '.', '/' and where a lower-case letter or digit meets an upper-case
// one, and compared without case. It returns at most two names, sorted
// (more fit as well: the slip alone, or none), and none when word is a
// candidate itself.
func SuggestNames(word string, candidates []string) []string {
	for _, c := range candidates {
		if c == word {
			return nil
		}
	}
	slip := Suggest(word, candidates)
	w := words(word)
	var best []string
	bestDiff := 0
	for _, c := range candidates {
		cw := words(c)
		shared := 0
		for k := range w {
			if cw[k] {
				shared++
			}
		}
		if shared == 0 || (shared != len(w) && shared != len(cw)) {
			continue // neither holds all of the other's words
		}
		diff := len(w) + len(cw) - 2*shared
		switch {
		case diff > 2: // more than two words apart
		case best == nil || diff < bestDiff:
			best, bestDiff = []string{c}, diff
		case diff == bestDiff && !slices.Contains(best, c):
			best = append(best, c)
		}
	}
	if slip != "" && !slices.Contains(best, slip) {
		best = append(best, slip)
	}
	if len(best) > 2 {
		if slip != "" {
			return []string{slip}
		}
		return nil
	}
	slices.Sort(best)
	return best
}

// words splits a name into its lower-case words (see SuggestNames).
func words(s string) map[string]bool {
	out := map[string]bool{}
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out[strings.ToLower(string(cur))] = true
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case r == '-' || r == '_' || r == '.' || r == '/':
			flush()
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}

// OrList joins names as a person lists alternatives: "a", "a or b",
// "a, b or c".
func OrList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// QuotedOrList is OrList of the names quoted as Go strings.
func QuotedOrList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return OrList(q)
}
