package scripts

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// removedGlobals are base functions a rule may not use: they reach files,
// load code, touch the collector, or change other functions' environments.
var removedGlobals = []string{
	"load", "loadstring", "dofile", "loadfile", "require", "module",
	"collectgarbage", "getfenv", "setfenv", "newproxy", "_printregs", "print",
	"_GOPHER_LUA_VERSION",
}

// newSandbox returns a Lua state with only base (minus removedGlobals),
// string, table and math, with size-producing string functions bounded by
// the meter and math.random made deterministic.
func newSandbox(b Budget, m *meter) *lua.LState {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    b.CallStack,
		RegistrySize:     1024,
		RegistryMaxSize:  b.Registry,
		RegistryGrowStep: max(1024, b.Registry/8), // few copies on the way to the cap
	})
	openLibs(L)
	locateErrors(L, m)
	str := L.GetGlobal("string").(*lua.LTable)
	str.RawSetString("dump", lua.LNil)
	meterRep(L, str, m)
	meterFormat(L, str, m)
	meterGsub(L, str, m)
	guardPatterns(L, str, m) // after meterGsub: the guarded gsub is the metered one
	meterConcat(L, L.GetGlobal("table").(*lua.LTable), m)
	deterministicRandom(L, L.GetGlobal("math").(*lua.LTable))
	return L
}

// openLibs opens base, table, string and math, then removes removedGlobals
// (from the loaded-modules table too).
func openLibs(L *lua.LState) {
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range removedGlobals {
		L.SetGlobal(name, lua.LNil)
	}
	// the loaded-modules table would hand out the originals again
	if loaded, ok := L.GetField(L.Get(lua.RegistryIndex), "_LOADED").(*lua.LTable); ok {
		loaded.RawSetString(lua.BaseLibName, lua.LNil)
	}
}

// locateErrors wraps error so that an error value that is not a string
// (error({}), error(nil)) still names the file and line it was raised at:
// Lua only prefixes strings with the position. The value itself is
// raised unchanged, so pcall sees what the rule threw.
func locateErrors(L *lua.LState, m *meter) {
	wrap(L, L.G.Global, "error", func(L *lua.LState, orig lua.LGFunction) int {
		m.errWhere = ""
		if _, ok := L.Get(1).(lua.LString); !ok {
			m.errWhere = L.Where(L.OptInt(2, 1))
		}
		return orig(L)
	})
}

// meterRep charges string.rep's result to the meter before it is built.
func meterRep(L *lua.LState, str *lua.LTable, m *meter) {
	wrap(L, str, "rep", func(L *lua.LState, orig lua.LGFunction) int {
		s := L.CheckString(1)
		n := L.CheckInt(2)
		if n > 0 && len(s) > 0 {
			if n > m.maxString/len(s) {
				m.charge(L, "string.rep", m.maxString+1)
			}
			m.charge(L, "string.rep", n*len(s))
		}
		return orig(L)
	})
}

// meterFormat makes string.format refuse over-long widths and precisions
// and charge an estimate of its result (each argument's length plus 512;
// a __tostring is converted here so that its result is counted) before
// formatting.
func meterFormat(L *lua.LState, str *lua.LTable, m *meter) {
	wrap(L, str, "format", func(L *lua.LState, orig lua.LGFunction) int {
		f := L.CheckString(1)
		if w := longFormatWidth(f); w != "" {
			L.RaiseError("string.format: width or precision too long in %q", w)
		}
		n := len(f)
		for i := 2; i <= L.GetTop(); i++ {
			n += 512
			switch v := L.Get(i).(type) {
			case lua.LString:
				n += len(v)
			case *lua.LTable, *lua.LUserData:
				// a __tostring may return anything: convert here and count it
				if L.GetMetaField(v, "__tostring") != lua.LNil {
					s := L.ToStringMeta(v).String()
					L.Replace(i, lua.LString(s))
					n += len(s)
				}
			}
			if n > m.maxString {
				break
			}
		}
		m.charge(L, "string.format", n)
		return orig(L)
	})
}

// meterGsub charges string.gsub's result: estimated up front for a string
// or number replacement, counted as it grows for a table or function one.
func meterGsub(L *lua.LState, str *lua.LTable, m *meter) {
	wrap(L, str, "gsub", func(L *lua.LState, orig lua.LGFunction) int {
		s := L.CheckString(1)
		L.CheckString(2)
		matches := len(s) + 1
		if L.GetTop() >= 4 {
			if k := L.CheckInt(4); k >= 0 && k < matches {
				matches = k
			}
		}
		switch repl := L.Get(3).(type) {
		case lua.LString, lua.LNumber:
			r := lua.LVAsString(repl)
			// each %n expands to at most the whole subject
			est := len(s) + matches*len(r) + strings.Count(r, "%")*len(s)
			if matches > 0 && len(r) > 0 && matches > m.maxString/len(r) {
				est = m.maxString + 1
			}
			m.charge(L, "string.gsub", est)
		case *lua.LTable, *lua.LFunction:
			L.Replace(3, meteredRepl(L, repl, len(s), m))
		}
		return orig(L)
	})
}

// meteredRepl wraps a gsub replacement table or function so that the
// result's length (from subjectLen, the subject's, up) is counted as each
// replacement string is produced, and charged once it exceeds the limit.
func meteredRepl(L *lua.LState, repl lua.LValue, subjectLen int, m *meter) *lua.LFunction {
	total := subjectLen
	return L.NewFunction(func(L *lua.LState) int {
		key := L.Get(1)
		var v lua.LValue
		if fn, ok := repl.(*lua.LFunction); ok {
			n := L.GetTop()
			L.Push(fn)
			for i := 1; i <= n; i++ {
				L.Push(L.Get(i))
			}
			L.Call(n, 1)
			v = L.Get(-1)
			L.Pop(1)
		} else {
			v = L.GetTable(repl, key)
		}
		if s, ok := v.(lua.LString); ok {
			total += len(s)
			if total > m.maxString {
				m.charge(L, "string.gsub", total)
			}
		}
		L.Push(v)
		return 1
	})
}

// guardPatterns wraps the pattern functions (find, match, gmatch, gsub).
// Lua patterns backtrack: with q repetition items a match can take
// len(s)^q steps inside one Go call that no instruction budget can
// interrupt. So a pattern with q > 1 is refused when len(s)^q exceeds
// maxPatternSteps (a plain find excepted), and every call takes len(s)/64
// from the callback's instructions.
func guardPatterns(L *lua.LState, str *lua.LTable, m *meter) {
	for _, name := range []string{"find", "match", "gmatch", "gsub"} {
		inner := str.RawGetString(name).(*lua.LFunction).GFunction
		str.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			subject, pat := L.CheckString(1), L.CheckString(2)
			plain := name == "find" && lua.LVAsBool(L.Get(4))
			if !plain {
				if q := patternRepeats(pat); q > 1 && math.Pow(float64(len(subject)), float64(q)) > maxPatternSteps {
					L.RaiseError("string.%s: pattern %q has %d repetitions: too costly on %d bytes", name, pat, q, len(subject))
				}
			}
			m.left -= int64(len(subject) >> 6)
			return inner(L)
		}))
	}
}

// meterConcat charges table.concat's result to the meter before it is
// built.
func meterConcat(L *lua.LState, tab *lua.LTable, m *meter) {
	wrap(L, tab, "concat", func(L *lua.LState, orig lua.LGFunction) int {
		t := L.CheckTable(1)
		sep := L.OptString(2, "")
		i := L.OptInt(3, 1)
		j := L.OptInt(4, t.Len())
		n := 0
		for k := i; k <= j; k++ {
			v := t.RawGetInt(k)
			if !lua.LVCanConvToString(v) {
				break // the original raises the error
			}
			n += len(lua.LVAsString(v)) + len(sep)
			if n > m.maxString {
				break
			}
		}
		m.charge(L, "table.concat", n)
		return orig(L)
	})
}

// deterministicRandom replaces math.random and math.randomseed by an
// xorshift64* generator private to the state, with a fixed seed, so a rule
// behaves the same on every run.
func deterministicRandom(L *lua.LState, mathlib *lua.LTable) {
	var rng uint64 = 0x9E3779B97F4A7C15
	next := func() uint64 { // xorshift64*: deterministic per rule
		rng ^= rng >> 12
		rng ^= rng << 25
		rng ^= rng >> 27
		return rng * 2685821657736338717
	}
	mathlib.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		f := float64(next()>>11) / (1 << 53)
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(f))
		case 1:
			hi := L.CheckInt(1)
			if hi < 1 {
				L.ArgError(1, "interval is empty")
			}
			L.Push(lua.LNumber(1 + int(f*float64(hi))))
		default:
			lo, hi := L.CheckInt(1), L.CheckInt(2)
			if lo > hi {
				L.ArgError(2, "interval is empty")
			}
			L.Push(lua.LNumber(lo + int(f*float64(hi-lo+1))))
		}
		return 1
	}))
	mathlib.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		rng = uint64(L.CheckInt64(1)) | 1
		return 0
	}))
}

// wrap replaces tbl[name] by fn, which gets the original to call.
func wrap(L *lua.LState, tbl *lua.LTable, name string, fn func(*lua.LState, lua.LGFunction) int) {
	orig := tbl.RawGetString(name).(*lua.LFunction).GFunction
	tbl.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return fn(L, orig) }))
}

// longFormatWidth returns the first directive of a string.format format
// whose width or precision has more than two digits (Lua 5.1 refuses
// those too), or "".
func longFormatWidth(f string) string {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		j := i + 1
		if j < len(f) && f[j] == '%' {
			i = j
			continue
		}
		for j < len(f) && strings.IndexByte("-+ #0", f[j]) >= 0 {
			j++
		}
		d := 0
		for j < len(f) && (f[j] >= '0' && f[j] <= '9' || f[j] == '.') {
			if f[j] == '.' {
				d = 0
			} else if d++; d > 2 {
				end := min(j+2, len(f))
				return f[i:end]
			}
			j++
		}
		i = j - 1
	}
	return ""
}

// maxPatternSteps bounds len(subject)^repetitions for pattern functions.
const maxPatternSteps = 1e9

// patternRepeats counts the repetition items (*, +, -, ?) of a Lua
// pattern outside sets and escapes.
func patternRepeats(p string) int {
	n := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%':
			i++
		case '[':
			for i++; i < len(p) && p[i] != ']'; i++ {
				if p[i] == '%' {
					i++
				}
			}
		case '*', '+', '-', '?':
			n++
		}
	}
	return n
}
