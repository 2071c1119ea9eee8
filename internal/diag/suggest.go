package diag

import "strings"

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
