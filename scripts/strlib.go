// The string functions a rule may call, each charged to the meter: the
// pattern functions (find, match, gmatch, gsub) run on the step-budgeted
// matcher of pattern.go, and the functions that copy (lower, upper,
// reverse, sub, byte) charge what they build.

package scripts

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// patternFuncs installs find, match, gmatch (and its 5.0 name gfind) and
// gsub on the string library table.
func patternFuncs(L *lua.LState, str *lua.LTable, m *meter) {
	str.RawSetString("find", L.NewFunction(func(L *lua.LState) int { return strFind(L, m, true) }))
	str.RawSetString("match", L.NewFunction(func(L *lua.LState) int { return strFind(L, m, false) }))
	gm := L.NewFunction(func(L *lua.LState) int { return strGmatch(L, m) })
	str.RawSetString("gmatch", gm)
	str.RawSetString("gfind", gm)
	str.RawSetString("gsub", L.NewFunction(func(L *lua.LState) int { return strGsub(L, m) }))
}

// getMatcher hands out a matcher for subject s and pattern p; nested calls
// (a gsub replacement function calling find) get distinct ones.
func (m *meter) getMatcher(s, p string) *matcher {
	var mt *matcher
	if n := len(m.matchers); n > 0 {
		mt, m.matchers = m.matchers[n-1], m.matchers[:n-1]
	} else {
		mt = new(matcher)
	}
	mt.src, mt.pat, mt.level, mt.depth = s, p, 0, 0
	return mt
}

func (m *meter) putMatcher(mt *matcher) {
	mt.src, mt.pat = "", ""
	m.matchers = append(m.matchers, mt)
}

// try runs one match attempt of the pattern at subject position s under
// what is left of the instruction budget, and charges the steps it took.
// A malformed pattern or an exhausted budget raises a Lua error.
func (m *meter) try(L *lua.LState, mt *matcher, what string, s int) int {
	budget := max(m.left, 0) * stepsPerInstruction
	mt.steps, mt.level, mt.depth = budget, 0, 0
	e := -1
	err := mt.run(func() { e = mt.match(s, 0) })
	m.left -= 1 + (budget-mt.steps)/stepsPerInstruction // an attempt costs at least an instruction
	switch {
	case err == errPatternBudget:
		m.left = -1
		pat := mt.pat
		if len(pat) > 40 {
			pat = pat[:40] + "..."
		}
		m.tripped = fmt.Sprintf("instruction budget exhausted in string.%s (pattern %q on %d bytes)", what, pat, len(mt.src))
		L.RaiseError("%s", m.tripped)
	case err != nil:
		L.RaiseError("%s", err.Error())
	}
	return e
}

// pushCaptures pushes the captures of the match s..e (the whole match when
// the pattern has none and whole is set) and returns how many.
func pushCaptures(L *lua.LState, mt *matcher, s, e int, whole bool) int {
	n := mt.captureCount(whole)
	for i := range n {
		pushCapture(L, mt, i, s, e)
	}
	return n
}

func pushCapture(L *lua.LState, mt *matcher, i, s, e int) {
	var err error
	var str string
	var pos int
	var isPos bool
	err = mt.run(func() { str, pos, isPos = mt.captureValue(i, s, e) })
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	if isPos {
		L.Push(lua.LNumber(pos))
	} else {
		L.Push(lua.LString(str))
	}
}

// posrelat turns a Lua string position (negative from the end) into a
// 0-based offset clamped to 0..len.
func posrelat(pos, n int) int {
	if pos < 0 {
		pos += n + 1
	}
	pos--
	return min(max(pos, 0), n)
}

// strFind is string.find (find) and string.match (!find), as in Lua 5.1.
func strFind(L *lua.LState, m *meter, find bool) int {
	s := L.CheckString(1)
	p := L.CheckString(2)
	init := posrelat(L.OptInt(3, 1), len(s))
	what := "match"
	if find {
		what = "find"
	}
	if find && (lua.LVAsBool(L.Get(4)) || !hasSpecials(p)) {
		m.left -= int64((len(s) - init) >> 6) // a plain search reads the subject once
		i := strings.Index(s[init:], p)
		if i < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(init + i + 1))
		L.Push(lua.LNumber(init + i + len(p)))
		return 2
	}
	anchor := len(p) > 0 && p[0] == '^'
	if anchor {
		p = p[1:]
	}
	mt := m.getMatcher(s, p)
	for s1 := init; ; s1++ {
		if e := m.try(L, mt, what, s1); e >= 0 {
			var n int
			if find {
				L.Push(lua.LNumber(s1 + 1))
				L.Push(lua.LNumber(e))
				n = pushCaptures(L, mt, s1, e, false) + 2
			} else {
				n = pushCaptures(L, mt, s1, e, true)
			}
			m.putMatcher(mt)
			return n
		}
		if s1 >= len(s) || anchor {
			break
		}
	}
	m.putMatcher(mt)
	L.Push(lua.LNil)
	return 1
}

// strGmatch is string.gmatch: an iterator that finds one match per call
// (nothing is collected ahead).
func strGmatch(L *lua.LState, m *meter) int {
	s := L.CheckString(1)
	p := L.CheckString(2)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		mt := m.getMatcher(s, p)
		defer m.putMatcher(mt)
		for src := pos; src <= len(s); src++ {
			if e := m.try(L, mt, "gmatch", src); e >= 0 {
				pos = e
				if e == src { // empty match: go at least one position on
					pos++
				}
				return pushCaptures(L, mt, src, e, true)
			}
		}
		pos = len(s) + 1
		return 0
	}))
	return 1
}

// strGsub is string.gsub. The result is built once, checked against
// MaxString as it grows, and charged to the meter.
func strGsub(L *lua.LState, m *meter) int {
	src := L.CheckString(1)
	p := L.CheckString(2)
	repl := L.Get(3)
	switch repl.(type) {
	case lua.LString, lua.LNumber, *lua.LTable, *lua.LFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxS := L.OptInt(4, len(src)+1)
	anchor := len(p) > 0 && p[0] == '^'
	if anchor {
		p = p[1:]
	}
	mt := m.getMatcher(src, p)
	var b []byte
	grow := func(add int) {
		if len(b)+add > m.maxString {
			m.charge(L, "string.gsub", len(b)+add)
		}
	}
	n, si := 0, 0
	for n < maxS {
		e := m.try(L, mt, "gsub", si)
		if e >= 0 {
			n++
			b = gsubValue(L, m, mt, repl, b, si, e, grow)
		}
		if e > si { // non-empty match: skip it
			si = e
		} else if si < len(src) {
			grow(1)
			b = append(b, src[si])
			si++
		} else {
			break
		}
		if anchor {
			break
		}
	}
	grow(len(src) - si)
	b = append(b, src[si:]...)
	m.putMatcher(mt)
	m.charge(L, "string.gsub", len(b))
	L.Push(lua.LString(b))
	L.Push(lua.LNumber(n))
	return 2
}

// gsubValue appends the replacement of the match s..e to b (add_value in
// lstrlib.c).
func gsubValue(L *lua.LState, m *meter, mt *matcher, repl lua.LValue, b []byte, s, e int, grow func(int)) []byte {
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		news := lua.LVAsString(r)
		for i := 0; i < len(news); i++ {
			c := news[i]
			if c != '%' {
				grow(1)
				b = append(b, c)
				continue
			}
			i++
			if i == len(news) {
				L.RaiseError("invalid use of '%%' in replacement string")
			}
			c = news[i]
			switch {
			case c == '0':
				grow(e - s)
				b = append(b, mt.src[s:e]...)
			case c >= '1' && c <= '9':
				pushCapture(L, mt, int(c-'1'), s, e)
				cv := lua.LVAsString(L.Get(-1))
				L.Pop(1)
				grow(len(cv))
				b = append(b, cv...)
			default:
				grow(1)
				b = append(b, c)
			}
		}
		return b
	case *lua.LTable:
		pushCapture(L, mt, 0, s, e)
		key := L.Get(-1)
		L.Pop(1)
		v = L.GetTable(r, key)
	case *lua.LFunction:
		L.Push(r)
		nargs := pushCaptures(L, mt, s, e, true)
		L.Call(nargs, 1)
		v = L.Get(-1)
		L.Pop(1)
	}
	if lua.LVIsFalse(v) { // nil or false: keep the original text
		grow(e - s)
		return append(b, mt.src[s:e]...)
	}
	switch v.(type) {
	case lua.LString, lua.LNumber:
	default:
		L.RaiseError("invalid replacement value (a %s)", v.Type().String())
	}
	sv := lua.LVAsString(v)
	grow(len(sv))
	return append(b, sv...)
}

// chargedCopies wraps the string functions that copy their subject:
// lower, upper and reverse build a string as long as it, sub and byte as
// long as the range they take.
func chargedCopies(L *lua.LState, str *lua.LTable, m *meter) {
	for _, name := range []string{"lower", "upper", "reverse"} {
		what := "string." + name
		wrap(L, str, name, func(L *lua.LState, orig lua.LGFunction) int {
			m.charge(L, what, len(L.CheckString(1)))
			return orig(L)
		})
	}
	wrap(L, str, "sub", func(L *lua.LState, orig lua.LGFunction) int {
		s := L.CheckString(1)
		i, j := L.CheckInt(2), L.OptInt(3, -1)
		m.charge(L, "string.sub", rangeLen(i, j, len(s)))
		return orig(L)
	})
	wrap(L, str, "byte", func(L *lua.LState, orig lua.LGFunction) int {
		s := L.CheckString(1)
		i := L.OptInt(2, 1)
		j := L.OptInt(3, i)
		m.left -= int64(rangeLen(i, j, len(s))) // one value pushed per byte
		return orig(L)
	})
}

// rangeLen is the length of s:sub(i, j) for a subject of n bytes.
func rangeLen(i, j, n int) int {
	if i < 0 {
		i = max(n+i+1, 1)
	} else if i == 0 {
		i = 1
	}
	if j < 0 {
		j = n + j + 1
	}
	j = min(j, n)
	return max(j-i+1, 0)
}
