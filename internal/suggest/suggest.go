package suggest

import (
	"sort"
	"strings"
)

// MaxLen is the longest name compared; a longer one gets no suggestion.
const MaxLen = 64

// Similar returns the candidates name was probably meant to be, best first
// (at most three): those within a small edit distance (one typo in a short
// name, about one in three characters in a long one; a swap of two
// neighbours counts as one), and those that name is a prefix of or that
// contain it whole ("cache" suggests "cache_size"). Exact matches are not
// returned: name is known then.
func Similar(name string, candidates []string) []string {
	n := fold(name)
	if n == "" || len(n) > MaxLen {
		return nil
	}
	type hit struct {
		s    string
		dist int
	}
	var hits []hit
	seen := map[string]bool{}
	for _, c := range candidates {
		f := fold(c)
		if c == name || seen[c] || len(f) > MaxLen {
			continue
		}
		d := distance(n, f)
		limit := max(1, (len(n)+2)/4)
		switch {
		case d <= limit:
		case len(n) >= 3 && (strings.HasPrefix(f, n) || strings.Contains(f, n)):
			d = limit + 1 // after the typos
		default:
			continue
		}
		seen[c] = true
		hits = append(hits, hit{c, d})
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].dist != hits[j].dist {
			return hits[i].dist < hits[j].dist
		}
		return hits[i].s < hits[j].s
	})
	var out []string
	for _, h := range hits {
		if len(out) == 3 {
			break
		}
		out = append(out, h.s)
	}
	return out
}

// DidYouMean is Similar as the end of a message: ` (did you mean "a"?)`,
// ` (did you mean "a" or "b"?)`, or "" when nothing is close.
func DidYouMean(name string, candidates []string) string {
	s := Similar(name, candidates)
	if len(s) == 0 {
		return ""
	}
	q := make([]string, len(s))
	for i, c := range s {
		q[i] = `"` + c + `"`
	}
	if len(q) == 1 {
		return " (did you mean " + q[0] + "?)"
	}
	return " (did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1] + "?)"
}

// fold is the form names are compared in.
func fold(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimLeft(s, "-")), "-", "_")
}

// distance is the optimal string alignment distance of a and b (edits:
// insert, delete, substitute, swap two neighbours), over bytes.
func distance(a, b string) int {
	if a == b {
		return 0
	}
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
