package scripts

import (
	"errors"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestMultiAssignRefused: the multiple assignments gopher-lua compiles
// wrongly (yuin/gopher-lua#440) are refused at load, naming the line; each
// case is first shown to give a wrong answer in gopher-lua itself, so the
// test fails if gopher-lua is fixed (the check can then go) or the case is
// not one. The assignments it compiles correctly load.
func TestMultiAssignRefused(t *testing.T) {
	wrong := []struct{ code, got, lua51 string }{
		{"local a, b = 1, 2\na, b = b, a\nr = a .. ',' .. b", "2,2", "2,1"},
		{"local a, b = 1, 2\nb, a = a, b\nr = a .. ',' .. b", "1,1", "2,1"},
		{"local a, b = 1, 2\nb, a = 3, b\nr = a .. ',' .. b", "3,3", "2,3"},
		{"local a, b = 0, 0\na, b = a + 1, a + b\nr = a .. ',' .. b", "1,1", "1,0"},
		{"local t = {}\nlocal o = t\nt, t.x = {}, 1\nr = tostring(o.x)", "nil", "1"},
		{"local a, b = 1, 2\nlocal function f() return a end\na, b = 5, f()\nr = a .. ',' .. b", "5,5", "5,1"},
		{"function g()\n  local x, y = 1, 2\n  if true then\n    x, y = y, x\n  end\n  return x .. ',' .. y\nend\nr = g()", "2,2", "2,1"},
	}
	for _, c := range wrong {
		L := lua.NewState()
		if err := L.DoString(c.code); err != nil {
			t.Fatal(err)
		}
		got := L.GetGlobal("r").String()
		L.Close()
		if got != c.got {
			t.Errorf("gopher-lua now gives %s (Lua 5.1: %s) for\n%s\nrevisit checkMultiAssign", got, c.lua51, c.code)
		}
		src := "rule { name = 'x', topics = { 't' } }\nfunction on_message(m) end\n" + c.code + "\n"
		_, err := LoadSource("bad.lua", src, Options{Logger: quiet})
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "bad.lua:") || !strings.Contains(err.Error(), "gopher-lua#440") {
			t.Errorf("loaded, or not refused with the line and the cause:\n%s\n%v", c.code, err)
		}
	}
	right := []string{
		"a, b = 1, 2\na, b = b, a",                                   // globals
		"local a, b = 1, 2\nlocal function f() a, b = b, a end\nf()", // upvalues
		"local a, b = 1, 2\nlocal t = {}\nt[1], t[2] = t[2], t[1]",   // table fields
		"local i = 3\nlocal a = {}\ni, a[i] = i + 1, 20",             // a key (Lua 5.1's manual)
		"local a, b = 1, 2\ndo local a, b = b, a end",                // local declarations
		"local a, b = 1, 2\na, b = 3, 4\nlocal x, y = a, b",          // no value reads a target
		"local a, b = 1, 2\na, b = b, 3",                             // only a value before the target reads it
	}
	for _, code := range right {
		src := "rule { name = 'x', topics = { 't' } }\nfunction on_message(m) end\n" + code + "\n"
		if _, err := LoadSource("ok.lua", src, Options{Logger: quiet}); err != nil {
			t.Errorf("refused:\n%s\n%v", code, err)
		}
	}
	for _, name := range ShippedNames() {
		if _, err := LoadShipped(name, Options{Logger: quiet}); err != nil && strings.Contains(err.Error(), "gopher-lua#440") {
			t.Errorf("shipped %s: %v", name, err)
		}
	}
}
