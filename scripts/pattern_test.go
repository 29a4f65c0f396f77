package scripts

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// patternCases are string.find/match/gmatch/gsub calls whose results are
// compared with the reference Lua 5.1 interpreter (TestPatternsAgainstLua51)
// and with the expected values written here.
var patternCases = []struct{ expr, want string }{
	{`string.find("hello world", "o w")`, "5 7"},
	{`string.find("hello", "l+")`, "3 4"},
	{`string.find("hello", "^h")`, "1 1"},
	{`string.find("hello", "^e")`, "nil"},
	{`string.find("a.b", ".", 1, true)`, "2 2"},
	{`string.find("abc", "b", -1)`, "nil"},
	{`string.find("abc", "", 10)`, "4 3"},
	{`string.find("abc", "c", -10)`, "3 3"},
	{`string.find("a)", "a)")`, "1 2"},
	{`string.find("x = 12", "(%w+) = (%d+)")`, "1 6 x 12"},
	{`string.find("THE (quick) fox", "%((%a+)%)")`, "5 11 quick"},
	{`string.find("f(a(b)c)d", "%b()")`, "2 8"},
	{`string.find("THE (quick) fox", "%f[%a]%a+", 5)`, "6 10"},
	{`string.find("key=val", "()=()")`, "4 4 4 5"},
	{`string.match("hello 123 world", "%d+")`, "123"},
	{`string.match("2024-01-02", "(%d+)-(%d+)-(%d+)")`, "2024 01 02"},
	{`string.match("  trim  ", "^%s*(.-)%s*$")`, "trim"},
	{`string.match("abc", "((a)(b))")`, "ab a b"},
	{`string.match("aaa", "a-b")`, "nil"},
	{`string.match("aaab", "a-b")`, "aaab"},
	{`string.match("abcabc", "(abc)%1")`, "abc"},
	{`string.match("[x]", "[]x[]+")`, "[x]"},
	{`string.match("]]", "[]]+")`, "]]"},
	{`string.match("a-z", "[a%-z]+")`, "a-z"},
	{`string.match("hello", "[^aeiou]+")`, "h"},
	{`string.match("x$y", "x$y")`, "x$y"},
	{`string.match("end", "d$")`, "d"},
	{`string.match("\0a", "%z")`, "\x00"},
	{`string.match("A1 b2", "%u%d")`, "A1"},
	{`string.match("__", "%W+")`, "__"},
	{`string.match("ab", "a?b?c?")`, "ab"},
	{`string.match("hello", "()ll()")`, "3 5"},
	{`string.match("hello", ".", -1)`, "o"},
	{`select("#", string.gsub("hello world", "o", "0"))`, "2"},
	{`string.gsub("hello world", "o", "0")`, "hell0 w0rld 2"},
	{`string.gsub("hello world", "(o)", "[%1%1]", 1)`, "hell[oo] world 1"},
	{`string.gsub("abc", "", "-")`, "-a-b-c- 4"},
	{`string.gsub("abc", "^", ">")`, ">abc 1"},
	{`string.gsub("hello", "l*", "x")`, "xhxexxox 5"},
	{`string.gsub("k=v, a=b", "(%w+)=(%w+)", "%2=%1")`, "v=k, b=a 2"},
	{`string.gsub("$name is $age", "%$(%w+)", {name = "Ann", age = 3})`, "Ann is 3 2"},
	{`string.gsub("$x $y", "%$(%w+)", {x = "X"})`, "X $y 2"},
	{`string.gsub("abc", "%w", function(c) return c:upper() .. "." end)`, "A.B.C. 3"},
	{`string.gsub("abc", "%w", function(c) if c == "b" then return false end return "_" end)`, "_b_ 3"},
	{`string.gsub("hello", "(l)(l)", "%0%0")`, "hellllo 1"},
	{`string.gsub("abc", ".", {a = 1, b = true and "B"})`, "1Bc 3"},
	{`string.gsub("x", "x", "%%")`, "% 1"},
	{`string.gsub("one two", "(%w+)", "<%1>")`, "<one> <two> 2"},
	{`string.gsub("abc", "b*", "-")`, "-a--c- 4"},
	{`(function() local t = {} for w in string.gmatch("one two  three", "%a+") do t[#t+1] = w end return table.concat(t, ",") end)()`, "one,two,three"},
	{`(function() local t = {} for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do t[#t+1] = k .. v end return table.concat(t, ",") end)()`, "a1,b2"},
	{`(function() local n = 0 for _ in string.gmatch("abc", "") do n = n + 1 end return n end)()`, "4"},
	{`(function() local t = {} for p in string.gmatch("abc", "()") do t[#t+1] = p end return table.concat(t, ",") end)()`, "1,2,3,4"},
	{`(function() local t = {} for w in string.gmatch("^a^a", "^a") do t[#t+1] = w end return table.concat(t, ",") end)()`, "^a,^a"},
	{`pcall(string.find, "a", "%")`, "false malformed pattern (ends with '%')"},
	{`pcall(string.find, "a", "[a")`, "false malformed pattern (missing ']')"},
	{`pcall(string.find, "a", "(a")`, "false unfinished capture"},
	{`pcall(string.find, "a", "a)")`, "true nil"},
	{`pcall(string.match, "a", "a)")`, "false invalid pattern capture"},
	{`pcall(string.find, "a", "%1")`, "false invalid capture index"},
	{`pcall(string.find, "a", "%b")`, "false unbalanced pattern"},
	{`pcall(string.find, "a", "%fa")`, "false missing '[' after '%f' in pattern"},
	{`pcall(string.gsub, "a", "a", "%2")`, "false invalid capture index"},
	{`pcall(string.gsub, "a", "a", {a = {}})`, "false invalid replacement value (a table)"},
	{`pcall(string.gsub, "a", "a", true)`, "false bad argument #3 to '?' (string/function/table expected)"},
}

// luaValues renders the results of expr as the test's Lua does on both
// sides: values joined by spaces, tostring'd, error messages without the
// position prefix.
const renderLua = `local function render(...)
  local t = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if type(v) == "string" then v = v:gsub("^[^:]*:%d+: ", "") end
    t[#t + 1] = tostring(v)
  end
  return table.concat(t, " ")
end
`

func TestPatterns(t *testing.T) {
	for _, c := range patternCases {
		r, _ := load(t, "rule{name='p', topics='a'}\nfunction on_message(m) end\n"+renderLua+"out = render("+c.expr+")", nil)
		got := r.L.G.Global.RawGetString("out").String()
		if got != c.want && !(strings.HasPrefix(c.want, "false bad argument") && strings.HasPrefix(got, "false bad argument #3")) {
			t.Errorf("%s\n got  %q\n want %q", c.expr, got, c.want)
		}
	}
}

// TestPatternsAgainstLua51 runs the same expressions through the reference
// interpreter (lua5.1, installed by .ci/run) and compares.
func TestPatternsAgainstLua51(t *testing.T) {
	lua51, err := exec.LookPath("lua5.1")
	if err != nil {
		t.Skip("lua5.1 not installed (apt-get install lua5.1; .ci/run installs it)")
	}
	var src strings.Builder
	src.WriteString(renderLua)
	for _, c := range patternCases {
		fmt.Fprintf(&src, "io.write(render(%s), '\\1\\n')\n", c.expr)
	}
	out, err := exec.Command(lua51, "-e", src.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("lua5.1: %v\n%s", err, out)
	}
	got := strings.Split(string(out), "\x01\n")
	for i, c := range patternCases {
		if i >= len(got) {
			t.Fatalf("lua5.1 printed %d results, want %d", len(got), len(patternCases))
		}
		want := c.want
		switch {
		case strings.HasPrefix(want, "false bad argument"):
			continue // the function name in the message differs
		case want == "false invalid use of '%' in replacement string":
			continue
		}
		if got[i] != want {
			t.Errorf("%s: lua5.1 says %q, this test wants %q", c.expr, got[i], want)
		}
	}
}

// TestPatternBudget: backtracking patterns, gmatch and gsub over large
// subjects are stopped by the rule's instruction budget, quickly and with
// bounded memory, and name the pattern, file and line.
func TestPatternBudget(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"lazy repetitions", "local s = string.rep('a', 100000) return s:find('.-.-.-.-b')", `t.lua:3: instruction budget exhausted in string.find (pattern ".-.-.-.-b" on 100000 bytes)`},
		{"one repetition, every start", "local s = string.rep('a', 100000) return s:find('a*b')", `instruction budget exhausted in string.find (pattern "a*b" on 100000 bytes)`},
		{"balance", "local s = string.rep('(', 100000) return s:find('%b()')", `instruction budget exhausted in string.find (pattern "%b()" on 100000 bytes)`},
		{"match", "local s = string.rep('a', 100000) return s:match('(.-)x')", "instruction budget exhausted in string.match"},
		{"gmatch loop", "local s = string.rep('a', 1000000) for i = 1, 100 do for c in s:gmatch('.') do end end", "instruction budget exhausted"},
		{"gmatch backtracking", "local s = string.rep('a', 100000) for w in s:gmatch('a-b') do end", "instruction budget exhausted in string.gmatch"},
		{"gsub backtracking", "local s = string.rep('a', 100000) s:gsub('a-b', '')", "instruction budget exhausted in string.gsub"},
		{"gsub every byte", "local s = string.rep('a', 1000000) for i = 1, 100 do s:gsub('.', 'b') end", "instruction budget exhausted"},
		{"gsub grows", "local s = string.rep('x', 100000) local u = s:gsub('x', 'yyyyyyyyyyyyyyyy')", "string.gsub would build"},
		{"upper in a loop", "local s = string.rep('a', 1000000) while true do local u = s:upper() end", "instruction budget exhausted"},
		{"sub in a loop", "local s = string.rep('a', 1000000) while true do local u = s:sub(1, -1) end", "instruction budget exhausted"},
		{"array gap", "local t = {} t[50000000] = 1", "t.lua:3: table index 50000000 would add 49999999 array slots"},
		{"array gaps in a loop", "while true do local t = {} t[500000] = 1 end", "instruction budget exhausted"},
		{"rawset gap", "rawset({}, 50000000, 1)", "table index 50000000 would add"},
		{"insert gap", "table.insert({}, 50000000, 1)", "table index 50000000 would add"},
		{"insert front", "local t = {} for i = 1, 50000 do t[i] = i end while true do table.insert(t, 1, 0) end", "instruction budget exhausted"},
		{"length of trailing nils", "local t = {} t[200000] = 1 t[200000] = nil while true do local n = #t end", "instruction budget exhausted"},
		{"sort", "local t = {} for i = 1, 50000 do t[i] = -i end while true do table.sort(t) end", "instruction budget exhausted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := load(t, "rule{name='p', topics='a'}\n\nfunction on_message(m) "+c.body+" end", nil)
			var before, after runtimeMem
			before.read()
			start := time.Now()
			r.Feed(&Message{Topic: "a", TS: 1})
			took := time.Since(start)
			after.read()
			st := r.Status()
			if !st.Disabled || !strings.Contains(st.Why, c.want) {
				t.Errorf("why = %q, want %q", st.Why, c.want)
			}
			if grew := after.total - before.total; grew > 256<<20 {
				t.Errorf("the callback allocated %d MiB before it was stopped", grew>>20)
			}
			t.Logf("stopped after %v", took)
		})
	}
	// linear patterns on large subjects still work within the budget
	r, _ := load(t, `rule{name='ok', topics='a'}
function on_message(m)
  local k, v = string.match(string.rep('k', 20000) .. '=' .. string.rep('v', 20000), '^(%w+)=(%w+)$')
  assert(#k == 20000 and #v == 20000)
  assert(select(2, string.gsub(string.rep('ab', 1000), 'b', 'c')) == 1000)
end`, nil)
	r.Feed(&Message{Topic: "a", TS: 1})
	mustNotBeDisabled(t, r)
}
