// Lua 5.1 patterns with a step budget. gopher-lua's matcher backtracks
// without bound inside one Go call (string.find(s, ".-.-.-b") on 100 KB
// runs for minutes) and its gmatch and gsub collect every match before
// they return; this matcher follows lstrlib.c of Lua 5.1 step for step,
// counts every step against the rule's instruction budget, and is used
// lazily by gmatch and gsub.

package scripts

import (
	"errors"
	"strings"
)

// Pattern limits, as in Lua 5.1 (LUA_MAXCAPTURES, MAXCCALLS).
const (
	maxCaptures   = 32
	maxMatchDepth = 200
	capUnfinished = -1
	capPosition   = -2
)

// stepsPerInstruction: one VM instruction is charged for this many
// matcher steps (a step is a byte compared or a recursive match call,
// a few nanoseconds; an instruction takes tens).
const stepsPerInstruction = 8

// errPatternBudget is raised (as a panic inside the matcher) when the
// step budget runs out.
var errPatternBudget = errors.New("pattern step budget exhausted")

// patternError is a malformed pattern; the message is Lua's.
type patternError string

func (e patternError) Error() string { return string(e) }

type capture struct{ init, len int }

// matcher is one match attempt's state (MatchState in lstrlib.c). Steps
// counts down; when it goes negative the matcher panics with
// errPatternBudget, recovered by run.
type matcher struct {
	src     string
	pat     string
	level   int
	depth   int
	steps   int64
	capture [maxCaptures]capture
}

// run calls f, turning the matcher's panics into errors.
func (m *matcher) run(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			switch e := r.(type) {
			case patternError:
				err = e
			case error:
				if e == errPatternBudget {
					err = e
					return
				}
				panic(r)
			default:
				panic(r)
			}
		}
	}()
	f()
	return nil
}

func (m *matcher) step(n int64) {
	m.steps -= n
	if m.steps < 0 {
		panic(errPatternBudget)
	}
}

// at returns the pattern byte at p, or 0 past its end (C's terminator).
func (m *matcher) at(p int) byte {
	if p < len(m.pat) {
		return m.pat[p]
	}
	return 0
}

func (m *matcher) classEnd(p int) int {
	c := m.at(p)
	p++
	switch c {
	case '%':
		if p >= len(m.pat) {
			panic(patternError("malformed pattern (ends with '%')"))
		}
		return p + 1
	case '[':
		if m.at(p) == '^' {
			p++
		}
		for { // look for a ']'
			if p >= len(m.pat) {
				panic(patternError("malformed pattern (missing ']')"))
			}
			c := m.pat[p]
			p++
			if c == '%' && p < len(m.pat) {
				p++ // skip escapes (e.g. '%]')
			}
			if m.at(p) == ']' {
				return p + 1
			}
		}
	}
	return p
}

func matchClass(c, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = c < 32 || c == 127
	case 'd':
		res = c >= '0' && c <= '9'
	case 'l':
		res = c >= 'a' && c <= 'z'
	case 'p':
		res = isPunct(c)
	case 's':
		res = c == ' ' || (c >= '\t' && c <= '\r')
	case 'u':
		res = c >= 'A' && c <= 'Z'
	case 'w':
		res = isAlpha(c) || (c >= '0' && c <= '9')
	case 'x':
		res = (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'f')
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if cl >= 'A' && cl <= 'Z' {
		res = !res
	}
	return res
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isPunct(c byte) bool {
	return c > 32 && c < 127 && !isAlpha(c) && !(c >= '0' && c <= '9')
}

// matchBracketClass: p is the '[' and ec the ']' of a set.
func (m *matcher) matchBracketClass(c byte, p, ec int) bool {
	sig := true
	if m.at(p+1) == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		if m.pat[p] == '%' {
			p++
			if matchClass(c, m.at(p)) {
				return sig
			}
		} else if m.at(p+1) == '-' && p+2 < ec {
			p += 2
			if m.pat[p-2] <= c && c <= m.pat[p] {
				return sig
			}
		} else if m.pat[p] == c {
			return sig
		}
	}
	return !sig
}

// singleMatch reports whether the subject byte at s matches the single
// item p..ep; false at the end of the subject.
func (m *matcher) singleMatch(s, p, ep int) bool {
	if s >= len(m.src) {
		return false
	}
	c := m.src[s]
	switch m.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, m.at(p+1))
	case '[':
		return m.matchBracketClass(c, p, ep-1)
	}
	return m.pat[p] == c
}

func (m *matcher) matchBalance(s, p int) int {
	if p+1 >= len(m.pat) {
		panic(patternError("unbalanced pattern"))
	}
	if s >= len(m.src) || m.src[s] != m.pat[p] {
		return -1
	}
	b, e, cont := m.pat[p], m.pat[p+1], 1
	for s++; s < len(m.src); s++ {
		m.step(1)
		switch m.src[s] {
		case e:
			if cont--; cont == 0 {
				return s + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

func (m *matcher) maxExpand(s, p, ep int) int {
	i := 0
	for m.singleMatch(s+i, p, ep) {
		m.step(1)
		i++
	}
	for ; i >= 0; i-- {
		if res := m.match(s+i, ep+1); res >= 0 {
			return res
		}
	}
	return -1
}

func (m *matcher) minExpand(s, p, ep int) int {
	for {
		if res := m.match(s, ep+1); res >= 0 {
			return res
		}
		if !m.singleMatch(s, p, ep) {
			return -1
		}
		s++
	}
}

func (m *matcher) startCapture(s, p, what int) int {
	if m.level >= maxCaptures {
		panic(patternError("too many captures"))
	}
	m.capture[m.level] = capture{init: s, len: what}
	m.level++
	res := m.match(s, p)
	if res < 0 {
		m.level--
	}
	return res
}

func (m *matcher) endCapture(s, p int) int {
	l := m.captureToClose()
	m.capture[l].len = s - m.capture[l].init
	res := m.match(s, p)
	if res < 0 {
		m.capture[l].len = capUnfinished
	}
	return res
}

func (m *matcher) captureToClose() int {
	for l := m.level - 1; l >= 0; l-- {
		if m.capture[l].len == capUnfinished {
			return l
		}
	}
	panic(patternError("invalid pattern capture"))
}

func (m *matcher) matchCapture(s int, l byte) int {
	i := int(l) - '1'
	if i < 0 || i >= m.level || m.capture[i].len == capUnfinished {
		panic(patternError("invalid capture index"))
	}
	c := m.capture[i]
	n := c.len
	if n < 0 { // a position capture matches as an empty string
		n = 0
	}
	m.step(int64(n))
	if len(m.src)-s >= n && m.src[c.init:c.init+n] == m.src[s:s+n] {
		return s + n
	}
	return -1
}

// match returns the end of the match of pattern position p at subject
// position s, or -1.
func (m *matcher) match(s, p int) int {
	m.depth++
	if m.depth > maxMatchDepth {
		panic(patternError("pattern too complex (nesting deeper than 200)"))
	}
	defer func() { m.depth-- }()
	for {
		m.step(1)
		if p >= len(m.pat) {
			return s
		}
		switch m.pat[p] {
		case '(':
			if m.at(p+1) == ')' {
				return m.startCapture(s, p+2, capPosition)
			}
			return m.startCapture(s, p+1, capUnfinished)
		case ')':
			return m.endCapture(s, p+1)
		case '%':
			switch c := m.at(p + 1); {
			case c == 'b':
				if s = m.matchBalance(s, p+2); s < 0 {
					return -1
				}
				p += 4
				continue
			case c == 'f':
				p += 2
				if m.at(p) != '[' {
					panic(patternError("missing '[' after '%f' in pattern"))
				}
				ep := m.classEnd(p)
				var prev, cur byte
				if s > 0 {
					prev = m.src[s-1]
				}
				if s < len(m.src) {
					cur = m.src[s]
				}
				if m.matchBracketClass(prev, p, ep-1) || !m.matchBracketClass(cur, p, ep-1) {
					return -1
				}
				p = ep
				continue
			case c >= '0' && c <= '9':
				if s = m.matchCapture(s, c); s < 0 {
					return -1
				}
				p += 2
				continue
			}
		case '$':
			if p+1 == len(m.pat) {
				if s == len(m.src) {
					return s
				}
				return -1
			}
		}
		// default: a single item, maybe followed by a repetition
		ep := m.classEnd(p)
		ok := m.singleMatch(s, p, ep)
		switch m.at(ep) {
		case '?':
			if ok {
				if res := m.match(s+1, ep+1); res >= 0 {
					return res
				}
			}
			p = ep + 1
			continue
		case '*':
			return m.maxExpand(s, p, ep)
		case '+':
			if !ok {
				return -1
			}
			return m.maxExpand(s+1, p, ep)
		case '-':
			return m.minExpand(s, p, ep)
		}
		if !ok {
			return -1
		}
		s++
		p = ep
	}
}

// captureValue is capture i of a match s..e: a string, or a position
// (1-based) when pos is true. With no captures, capture 0 is the whole
// match.
func (m *matcher) captureValue(i, s, e int) (str string, pos int, isPos bool) {
	if i >= m.level {
		if i == 0 {
			return m.src[s:e], 0, false
		}
		panic(patternError("invalid capture index"))
	}
	c := m.capture[i]
	switch c.len {
	case capUnfinished:
		panic(patternError("unfinished capture"))
	case capPosition:
		return "", c.init + 1, true
	}
	return m.src[c.init : c.init+c.len], 0, false
}

// captureCount is how many values a match pushes: its captures, or the
// whole match when it has none (wholeMatch) .
func (m *matcher) captureCount(wholeMatch bool) int {
	if m.level == 0 && wholeMatch {
		return 1
	}
	return m.level
}

// hasSpecials reports whether a pattern uses any of the characters that
// make string.find match a pattern rather than search for the plain text
// (SPECIALS in lstrlib.c).
func hasSpecials(p string) bool { return strings.ContainsAny(p, "^$*+?.([%-") }
