package scripts

import (
	"math/bits"
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
// string, table and math, with every library function whose cost grows
// with its input charged to the meter (patterns step by step, copies by
// size, table shifts by elements moved), the size-producing ones bounded
// by MaxString, and math.random made deterministic.
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
	chargedBase(L, m)
	str := L.GetGlobal("string").(*lua.LTable)
	str.RawSetString("dump", lua.LNil)
	meterRep(L, str, m)
	meterFormat(L, str, m)
	patternFuncs(L, str, m)
	chargedCopies(L, str, m)
	tab := L.GetGlobal("table").(*lua.LTable)
	meterConcat(L, tab, m)
	chargedTables(L, tab, m)
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
		m.chargeLen(t)
		return orig(L)
	})
}

// chargedTables charges the table functions by the elements they move or
// scan: insert and remove shift the array, sort compares n log n times,
// maxn and getn scan it; an insert far past the end is a gap (see
// meter.gap).
func chargedTables(L *lua.LState, tab *lua.LTable, m *meter) {
	wrap(L, tab, "insert", func(L *lua.LState, orig lua.LGFunction) int {
		t := L.CheckTable(1)
		m.chargeLen(t)
		if L.GetTop() >= 3 {
			n, _ := arrayLen(t)
			if pos := L.CheckInt(2); pos >= 1 && pos <= n {
				m.left -= int64(n-pos) >> 5
			} else if !m.gap(t, float64(pos)) {
				L.RaiseError("%s", m.tripped)
			}
		}
		return orig(L)
	})
	wrap(L, tab, "remove", func(L *lua.LState, orig lua.LGFunction) int {
		t := L.CheckTable(1)
		if L.GetTop() >= 2 {
			n, _ := arrayLen(t)
			if pos := L.CheckInt(2); pos >= 1 && pos < n {
				m.left -= int64(n-pos) >> 5
			}
		}
		return orig(L)
	})
	wrap(L, tab, "sort", func(L *lua.LState, orig lua.LGFunction) int {
		n, _ := arrayLen(L.CheckTable(1))
		m.left -= int64(n*bits.Len(uint(n))) >> 3
		return orig(L)
	})
	for _, name := range []string{"maxn", "getn"} {
		wrap(L, tab, name, func(L *lua.LState, orig lua.LGFunction) int {
			n, _ := arrayLen(L.CheckTable(1))
			m.left -= int64(n >> 6)
			return orig(L)
		})
	}
}

// chargedBase charges unpack by the values it pushes and checks rawset
// like a table store (see meter.gap).
func chargedBase(L *lua.LState, m *meter) {
	wrap(L, L.G.Global, "unpack", func(L *lua.LState, orig lua.LGFunction) int {
		n := orig(L)
		m.left -= int64(n)
		return n
	})
	wrap(L, L.G.Global, "rawset", func(L *lua.LState, orig lua.LGFunction) int {
		t := L.CheckTable(1)
		if k, ok := L.Get(2).(lua.LNumber); ok && !m.gap(t, float64(k)) {
			L.RaiseError("%s", m.tripped)
		}
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
