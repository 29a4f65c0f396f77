package scripts

// globMatch reports whether topic matches pattern: "*" matches any run of
// characters except '/', "**" any run including '/', "?" one character
// other than '/'; everything else matches itself.
//
// It runs in O(len(pattern) * len(topic)): the set of pattern positions
// reachable after each topic byte is carried forward (a Thompson
// simulation), so a pattern of many stars cannot backtrack exponentially
// (string.rep('*', 100) .. 'x' against a long topic).
func globMatch(pattern, topic string) bool {
	var bufA, bufB [64]bool
	cur, next := bufA[:0], bufB[:0]
	if len(pattern)+1 > len(bufA) {
		cur, next = make([]bool, 0, len(pattern)+1), make([]bool, 0, len(pattern)+1)
	}
	cur, next = cur[:len(pattern)+1], next[:len(pattern)+1]
	clear(cur)
	globAdd(pattern, cur, 0)
	for i := 0; i < len(topic); i++ {
		c := topic[i]
		clear(next)
		any := false
		for p, on := range cur {
			if !on || p == len(pattern) {
				continue
			}
			switch pattern[p] {
			case '*':
				if p+1 < len(pattern) && pattern[p+1] == '*' {
					globAdd(pattern, next, p) // ** consumes anything
				} else if c != '/' {
					globAdd(pattern, next, p)
				}
			case '?':
				if c != '/' {
					globAdd(pattern, next, p+1)
				}
			default:
				if pattern[p] == c {
					globAdd(pattern, next, p+1)
				}
			}
			any = true
		}
		if !any {
			return false
		}
		cur, next = next, cur
	}
	return cur[len(pattern)]
}

// globAdd marks pattern position p and every position reachable from it
// without consuming a byte (a star, or a double star as one item, may
// match nothing).
func globAdd(pattern string, set []bool, p int) {
	for !set[p] {
		set[p] = true
		if p == len(pattern) || pattern[p] != '*' {
			return
		}
		if p+1 < len(pattern) && pattern[p+1] == '*' {
			p += 2
		} else {
			p++
		}
	}
}

// matchAny reports whether topic matches one of the globs.
func matchAny(globs []string, topic string) bool {
	for _, g := range globs {
		if globMatch(g, topic) {
			return true
		}
	}
	return false
}

// MatchTopic reports whether topic matches one of the globs in the syntax
// of rule{topics = ...} ("*" within a path element, "**" across them).
func MatchTopic(globs []string, topic string) bool { return matchAny(globs, topic) }
