package scripts

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

func TestLoadErrors(t *testing.T) {
	const on = "\nfunction on_message(m) end"
	f := func(src string, params map[string]string, want error, text string) {
		t.Helper()
		_, err := LoadSource("t.lua", src, Options{Params: params, Logger: quiet})
		if !errors.Is(err, want) || !strings.Contains(err.Error(), text) {
			t.Errorf("load %q:\n got  %v\n want %v containing %q", src, err, want, text)
		}
	}
	f("rule{", nil, ErrSyntax, "t.lua at EOF")
	f("x = = 1", nil, ErrSyntax, "t.lua line:1")
	f("function on_message(m) end", nil, ErrDeclaration, "t.lua: no rule{")
	f("rule{name='x', topic='a'}"+on, nil, ErrDeclaration, "t.lua:1: rule{}: topic: unknown field")
	f("rule{topics='a'}"+on, nil, ErrDeclaration, "name is required")
	f("rule{name='x', topics='a'}\nrule{name='y'}"+on, nil, ErrDeclaration, "t.lua:2: rule{} declared twice")
	f("rule{name='x', topics='a', pre='soon'}"+on, nil, ErrDeclaration, "pre: units: invalid syntax")
	f("rule{name='x', topics='a', post=-1}"+on, nil, ErrDeclaration, "post: duration -1 seconds out of range")
	f("rule{name='x', topics={'a', 3}}"+on, nil, ErrDeclaration, "topic 2 is not a non-empty string")
	f("rule{name='x', topics='a', max_per_minute=1.5}"+on, nil, ErrDeclaration, "max_per_minute: want an integer")
	f("rule{name='x', topics='a', tick='1us'}\nfunction on_tick() end", nil, ErrDeclaration, "shorter than 1ms")
	f("rule{name='x'}"+on, nil, ErrDeclaration, "on_message without topics")
	f("rule{name='x', tick='1s'}\nfunction on_dump_finished() end", nil, ErrDeclaration, "tick declared but no on_tick")
	f("rule{name='x', topics='a'}\non_message = 3", nil, ErrDeclaration, "on_message is a number")
	f("rule{name='x', topics='a'}", nil, ErrDeclaration, "defines none of")
	f("rule{name='x', topics='a'}\nerror('boom')"+on, nil, ErrRuntime, "t.lua:2: boom")
	f("rule{name='x', topics='a'}\ntrigger{}"+on, nil, ErrRuntime, "t.lua:2: trigger{} may not be called while the file loads")
	f("rule{name='x', topics='a'}\nwhile true do end"+on, nil, ErrBudget, "t.lua:2: instruction budget exhausted")
	f("local n = param('n')\nrule{name='x', topics='a'}"+on, nil, ErrDeclaration, `t.lua:1: param "n" is required`)
	f("local n = param('n', 1)\nrule{name='x', topics='a'}"+on, map[string]string{"n": "lots"}, ErrDeclaration, `param n: "lots" is not a number`)
	f("local n = param('n', 1)\nrule{name='x', topics='a'}"+on, map[string]string{"m": "1", "k": "2"}, ErrDeclaration, "unknown params k, m")
	f("rule{name='x', topics='a'}"+on+strings.Repeat(" ", MaxSourceBytes), nil, ErrTooLarge, "t.lua is")
	_, err := Load("/nonexistent/rule.lua", Options{})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/rule.lua") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestDeclaration(t *testing.T) {
	r, _ := load(t, `
local topic = param("topic", "vehicle/*")
local gain = param("gain", 2)
local on = param("on", false)
assert(gain == 5 and on == true and params.gain == "5")
rule { name = "d", topics = { topic, "b/**" }, pre = "15s", post = 2.5, cooldown = "1m",
       max_per_minute = 4, tick = "250ms" }
function on_message(m) end
function on_tick(now) end
`, map[string]string{"gain": "5", "on": "true"})
	want := Decl{Name: "d", Topics: []string{"vehicle/*", "b/**"}, Pre: new(15 * time.Second), Post: new(2500 * time.Millisecond),
		Time: TimeProducer, Cooldown: time.Minute, MaxPerMinute: 4, Tick: 250 * time.Millisecond,
		Params: map[string]string{"topic": "vehicle/*", "gain": "5", "on": "true"}}
	if got := r.Decl(); !reflect.DeepEqual(got, want) {
		t.Errorf("decl\n got  %+v\n want %+v", got, want)
	}
	for topic, want := range map[string]bool{"vehicle/speed": true, "vehicle/a/b": false, "b/x/y": true, "b": false, "c/speed": false} {
		if got := r.Matches(topic); got != want {
			t.Errorf("Matches(%q) = %v, want %v", topic, got, want)
		}
	}
	// params is read-only at run time too
	r2, _ := load(t, "rule{name='p', topics='a'}\nfunction on_message(m) params.x = 1 end", nil)
	r2.Feed(&Message{Topic: "a", TS: 1})
	if st := r2.Status(); !strings.Contains(st.Why, "t.lua:2: params is read-only") {
		t.Errorf("writing params: %q", st.Why)
	}
}

func TestGlob(t *testing.T) {
	f := func(pattern, topic string, want bool) {
		t.Helper()
		if got := globMatch(pattern, topic); got != want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", pattern, topic, got, want)
		}
	}
	f("vehicle/speed", "vehicle/speed", true)
	f("vehicle/speed", "vehicle/speed2", false)
	f("vehicle/*", "vehicle/speed", true)
	f("vehicle/*", "vehicle/a/b", false)
	f("vehicle/**", "vehicle/a/b", true)
	f("**", "anything/at/all", true)
	f("*/speed", "vehicle/speed", true)
	f("cam?", "cam1", true)
	f("cam?", "cam/", false)
	f("a*b*c", "axxbyyc", true)
	f("a*b*c", "axxbyy", false)
	f("", "", true)
	f("", "a", false)
	f("a/**/b", "a/x/y/b", true)
	f("a/**b", "a/x/yb", true)
	f("a/**", "a", false)
	f("***", "a/b", true)
	f("*?", "", false)
	f("*?", "ab", true)
	f("a?c", "a/c", false)
	// linear: a pattern of many stars does not backtrack exponentially
	long := strings.Repeat("a", 10000)
	f(strings.Repeat("*", 100)+"x", long, false)
	f(strings.Repeat("**", 100)+"x", long+"/"+long, false)
	f(strings.Repeat("a*", 100)+"b", long, false)
	f(strings.Repeat("a*", 100), long, true)
}

func TestSandbox(t *testing.T) {
	absent := []string{"load", "loadstring", "dofile", "loadfile", "require", "module", "collectgarbage",
		"getfenv", "setfenv", "newproxy", "print", "io", "os", "debug", "coroutine", "package", "channel",
		"string.dump", "_printregs"}
	present := []string{"string.format", "string.find", "table.insert", "table.concat", "math.floor",
		"pairs", "ipairs", "pcall", "tostring", "tonumber", "setmetatable", "select", "unpack"}
	var src strings.Builder
	src.WriteString("rule{name='s', topics='a'}\nfunction on_message(m) end\n")
	for _, n := range absent {
		fmt.Fprintf(&src, "assert(%s == nil, '%s is reachable')\n", n, n)
	}
	for _, n := range present {
		fmt.Fprintf(&src, "assert(type(%s) == 'function', '%s is missing')\n", n, n)
	}
	// the wrapped functions still do their job
	src.WriteString("assert(string.format('%s!', setmetatable({}, {__tostring = function() return 'obj' end})) == 'obj!')\n")
	src.WriteString("assert(('abab'):gsub('a', 'c') == 'cbcb' and ('ab'):rep(3) == 'ababab' and table.concat({1, 'x'}, '-') == '1-x')\n")
	src.WriteString("assert(('k=v'):gsub('(%w)', {k = 'K'}) == 'K=v' and ('k=v'):gsub('%w', function(c) return c:upper() end) == 'K=V')\n")
	// the loaded-modules registry does not hand the originals back
	src.WriteString("for k, v in pairs(getmetatable('').__index) do assert(k ~= 'dump') end\n")
	load(t, src.String(), nil)

	// math.random is deterministic per rule
	rnd := `rule{name='r', topics='a'}
function on_message(m) end
seq = {}
for i = 1, 5 do seq[i] = math.random(1000) end
math.randomseed(7)
seq[6] = math.random()`
	a, _ := load(t, rnd, nil)
	b, _ := load(t, rnd, nil)
	if x, y := a.L.GetGlobal("seq").String(), b.L.GetGlobal("seq").String(); x == "" || luaList(a, "seq") != luaList(b, "seq") {
		t.Errorf("math.random differs between two rules: %s %s", x, y)
	}
}

// luaList renders a global array of numbers.
func luaList(r *Rule, name string) string {
	out, _ := r.L.DoString("return table.concat("+name+", ',')"), 0
	_ = out
	return r.L.Get(-1).String()
}

func TestBudgets(t *testing.T) {
	cases := []struct {
		name, body string // body of on_message, on line 3
		want       error
		text       string
	}{
		{"runaway loop", "while true do end", ErrBudget, "t.lua:3: instruction budget exhausted"},
		{"runaway loop swallowed by pcall", "while true do pcall(function() while true do end end) end", ErrBudget, "instruction budget exhausted"},
		{"concat doubling", "local s = 'x' while true do s = s .. s end", ErrBudget, "t.lua:3: concatenation would build 2097152 bytes (limit 1048576)"},
		{"wide concat", "local s = string.rep('x', 1000000) local t = s..s..s..s..s..s..s..s", ErrBudget, "concatenation would build 8000000 bytes"},
		{"string.rep", "local s = string.rep('ab', 1e9)", ErrBudget, "t.lua:3: string.rep would build"},
		{"method rep", "local s = ('ab'):rep(1e12)", ErrBudget, "string.rep would build"},
		{"rep in a loop", "local t = {} while true do t[#t+1] = string.rep('x', 1000000) end", ErrBudget, "instruction budget exhausted"},
		{"concat in a loop", "local s, t = string.rep('x', 500000), {} while true do t[#t+1] = s .. s end", ErrBudget, "instruction budget exhausted"},
		{"table.concat", "local t = {} local s = string.rep('x', 1000) for i = 1, 2000 do t[i] = s end local u = table.concat(t)", ErrBudget, "table.concat would build"},
		{"gsub string", "local s = string.rep('x', 100000) local u = s:gsub('x', 'yyyyyyyyyyyyyyyy')", ErrBudget, "string.gsub would build"},
		{"gsub function", "local s, y = string.rep('x', 20000), string.rep('y', 1000) local u = s:gsub('x', function() return y end)", ErrBudget, "string.gsub would build"},
		{"format with __tostring", "local big = setmetatable({}, {__tostring = function() return string.rep('x', 1000000) end}) local s = string.format(string.rep('%s', 100), big, big, big, big, big, big)", ErrBudget, "string.format would build"},
		{"format width", "local s = string.format('%999999d', 1)", ErrRuntime, "width or precision too long"},
		{"recursion", "local function f() return f() + 1 end f()", ErrRuntime, "stack overflow"},
		{"unpack", "local t = unpack({}, 1, 1e8)", ErrRuntime, "registry overflow"},
		{"error", "error('bad thing')", ErrRuntime, "t.lua:3: bad thing"},
		{"nil call", "local x = nil; x()", ErrRuntime, "t.lua:3:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad, _ := load(t, "rule{name='bad', topics='a'}\n\nfunction on_message(m) "+c.body+" end", nil)
			good, gf := load(t, "rule{name='good', topics='a'}\nfunction on_message(m) trigger{} end", nil)
			h, err := NewHost(bad, good)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtimeMem
			before.read()
			h.Feed(&Message{Topic: "a", TS: 1})
			after.read()
			st := bad.Status()
			if !st.Disabled || st.Errors != 1 {
				t.Fatalf("bad rule not disabled: %+v", st)
			}
			var werr error
			switch {
			case strings.HasPrefix(st.Why, ErrBudget.Error()):
				werr = ErrBudget
			case strings.HasPrefix(st.Why, ErrRuntime.Error()):
				werr = ErrRuntime
			}
			if werr != c.want || !strings.Contains(st.Why, c.text) {
				t.Errorf("why = %q, want %v containing %q", st.Why, c.want, c.text)
			}
			if grew := after.total - before.total; grew > 256<<20 {
				t.Errorf("the callback allocated %d MiB before it was stopped", grew>>20)
			}
			h.Feed(&Message{Topic: "a", TS: 2})
			if bad.Status().Messages != 1 {
				t.Errorf("a disabled rule still gets messages")
			}
			if len(gf.list) != 2 || good.Status().Disabled {
				t.Errorf("the healthy rule fired %d times, want 2 (status %+v)", len(gf.list), good.Status())
			}
		})
	}
}

func TestMemoryBudgetAcrossCallbacks(t *testing.T) {
	f := &fired{}
	r, err := LoadSource("t.lua", `rule{name='hoard', topics='a'}
local keep = {}
function on_message(m) for i = 1, 10000 do keep[#keep+1] = i end end`,
		Options{Budget: Budget{Memory: 1 << 20}, OnTrigger: f.on, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 100 {
		r.Feed(&Message{Topic: "a", TS: int64(i)})
	}
	st := r.Status()
	if !st.Disabled || !strings.Contains(st.Why, "rule state is over") || st.Messages > 40 {
		t.Errorf("hoarding rule: %+v", st)
	}
	// a rule holding a big but allowed state keeps running
	ok, _ := load(t, `rule{name='ok', topics='a'}
local keep = {}
for i = 1, 1000 do keep[i] = i end
function on_message(m) for i = 1, 1000 do keep[i] = i end end`, nil)
	for i := range 300 {
		ok.Feed(&Message{Topic: "a", TS: int64(i)})
	}
	mustNotBeDisabled(t, ok)
}

func TestView(t *testing.T) {
	data := []byte{0x81, 0x02, 0x03, 0x84, 0x05, 0x06, 0x07, 0x88, 0x3f, 0x80, 0x00, 0x00}
	r, _ := load(t, `rule{name='v', topics='**'}
function on_message(m) out = m[acc](m, off) end`, nil)
	f := func(acc string, off int, want float64) {
		t.Helper()
		r.L.SetGlobal("acc", luaString(acc))
		r.L.SetGlobal("off", luaNumber(int64(off)))
		r.Feed(&Message{Topic: "x", TS: 1, Data: data})
		mustNotBeDisabled(t, r)
		if got := float64(r.L.GetGlobal("out").(luaNumberT)); got != want {
			t.Errorf("m:%s(%d) = %v, want %v", acc, off, got, want)
		}
	}
	f("u8", 0, 0x81)
	f("i8", 0, -127)
	f("u16le", 0, 0x0281)
	f("u16be", 0, 0x8102)
	f("i16le", 2, float64(int16(-0x7bfd)))
	f("i16be", 3, float64(int16(-0x7bfb)))
	f("u32le", 0, 0x84030281)
	f("u32", 0, 0x84030281)
	f("u32be", 0, 0x81020384)
	f("i32le", 0, float64(int32(-0x7bfcfd7f)))
	f("i32be", 4, 0x05060788)
	f("u64le", 0, float64(uint64(0x8807060584030281)))
	f("u64be", 0, float64(uint64(0x8102038405060788)))
	f("i64le", 0, float64(int64(-0x77f8f9fa7bfcfd7f)))
	f("i64be", 4, float64(int64(0x050607883f800000)))
	f("f32be", 8, 1.0)
	f("f32le", 8, float64(float32fromLE(data[8:12])))
	f("f64be", 4, float64fromBE(data[4:12]))
	f("f64le", 4, float64fromLE(data[4:12]))
	f("u8", 11, 0)

	fields, _ := load(t, `rule{name='f', topics='**'}
function on_message(m) out = table.concat({m.topic, m.ts, m.gen_ts, m.seq, m.size, m:str(0, 8), #m:bytes(0, 8)}, '|') end`, nil)
	fields.Feed(&Message{Topic: "cam/front", TS: 1234567, GenTS: 1234000, Seq: 42, Data: []byte("hi\x00there!")})
	mustNotBeDisabled(t, fields)
	// producer time by default: m.ts is the producer's time when given
	if got := fields.L.GetGlobal("out").String(); got != "cam/front|1234000|1234000|42|9|hi|8" {
		t.Errorf("fields = %q", got)
	}
	fields.Feed(&Message{Topic: "cam/front", TS: 1234567, Seq: 43, Data: []byte("hi\x00there!")})
	if got := fields.L.GetGlobal("out").String(); got != "cam/front|1234567|0|43|9|hi|8" {
		t.Errorf("fields without a producer time = %q, want m.ts the capture time", got)
	}
	capture, _ := load(t, `rule{name='f', topics='**', time='capture'}
function on_message(m) out = table.concat({m.ts, m.gen_ts}, '|') end`, nil)
	capture.Feed(&Message{Topic: "cam/front", TS: 1234567, GenTS: 1234000, Seq: 42, Data: []byte("x")})
	if got := capture.L.GetGlobal("out").String(); got != "1234567|1234000" {
		t.Errorf("time = 'capture' fields = %q", got)
	}

	bad := func(body, text string) {
		t.Helper()
		r, _ := load(t, "rule{name='b', topics='**', tick='1s'}\nfunction on_message(m) "+body+" end\nfunction on_tick() if kept then kept:u8(0) end end", nil)
		r.Feed(&Message{Topic: "x", TS: 1, Data: make([]byte, 8)})
		r.Tick(int64(5 * time.Second))
		st := r.Status()
		if !st.Disabled || !strings.Contains(st.Why, text) {
			t.Errorf("%s: status %q, want %q", body, st.Why, text)
		}
	}
	bad("m:u32le(6)", "t.lua:2: m:u32le(6): offset out of range: 4 bytes at offset 6, message size 8")
	bad("m:u8(-1)", "m:u8(-1): offset out of range")
	bad("m:u64be(1e300)", "m:u64be: argument 1 must be an integer")
	bad("m:u8(1.5)", "m:u8: argument 1 must be an integer, got 1.5")
	bad("m:u8('x')", "argument 1 must be an integer, got x")
	bad("m.u8(0)", "call it as m:u8(offset)")
	bad("m:str(4, 5)", "m:str(4, 5): out of range, message size 8")
	bad("m:bytes(0, -1)", "m:bytes(0, -1): out of range")
	bad("m.ts = 3", "the message view is read-only")
	bad("local x = m.nope", "message view has no field nope")
	bad("kept = m", "t.lua:3: the message view is only valid inside on_message")
}

func TestTriggerFieldsAndLimits(t *testing.T) {
	r, f := load(t, `rule{name='lim', topics='a', pre='15s', post='5s', cooldown='3s'}
function on_message(m) trigger{} end`, nil)
	for s := range 11 {
		r.Feed(&Message{Topic: "a", TS: at(time.Duration(s) * time.Second)})
	}
	if got, want := f.times(base), []int64{0, 3000, 6000, 9000}; !reflect.DeepEqual(got, want) {
		t.Errorf("cooldown 3s: fired at %v ms, want %v", got, want)
	}
	if st := r.Status(); st.TriggersFired != 4 || st.TriggersSuppressed != 7 {
		t.Errorf("counters: %+v", st)
	}
	want := Trigger{Rule: "lim", Reason: "lim", Severity: 1, TimeNs: base, Pre: new(15 * time.Second), Post: new(5 * time.Second), Params: map[string]string{}}
	if !reflect.DeepEqual(f.list[0], want) {
		t.Errorf("default trigger\n got  %+v\n want %+v", f.list[0], want)
	}

	r, f = load(t, `rule{name='rate', topics='a', max_per_minute=2}
function on_message(m) ok = trigger{ reason='r', pre=1, post='2s', topics={'x/*'}, tag='t', severity=3 } end`, nil)
	for s := 0; s <= 120; s += 10 {
		r.Feed(&Message{Topic: "a", TS: at(time.Duration(s) * time.Second)})
	}
	if got, want := f.times(base), []int64{0, 10000, 60000, 70000, 120000}; !reflect.DeepEqual(got, want) {
		t.Errorf("max_per_minute 2: fired at %v ms, want %v", got, want)
	}
	want = Trigger{Rule: "rate", Reason: "r", Tag: "t", Severity: 3, TimeNs: base, Pre: new(time.Second), Post: new(2 * time.Second), Topics: []string{"x/*"}, Params: map[string]string{}}
	if !reflect.DeepEqual(f.list[0], want) {
		t.Errorf("trigger fields\n got  %+v\n want %+v", f.list[0], want)
	}
	if r.L.GetGlobal("ok").String() != "true" { // the last one, at 120s, fired
		t.Errorf("trigger{} returned %s", r.L.GetGlobal("ok"))
	}

	r, _ = load(t, "rule{name='u', topics='a'}\nfunction on_message(m) trigger{ resaon = 'typo' } end", nil)
	r.Feed(&Message{Topic: "a", TS: 1})
	if st := r.Status(); !strings.Contains(st.Why, "t.lua:2: trigger{}: resaon: unknown field") {
		t.Errorf("typo in trigger: %q", st.Why)
	}
}

func TestTicksInMessageTime(t *testing.T) {
	r, _ := load(t, `rule{name='t', topics='a', tick='1s'}
ev = {}
function on_message(m) ev[#ev+1] = 'm' .. (m.ts - BASE) / 1e6 end
function on_tick(t) ev[#ev+1] = 't' .. (t - BASE) / 1e6 .. '@' .. (now() - BASE) / 1e6 end`, nil)
	r.L.SetGlobal("BASE", luaNumber(base))
	r.Feed(&Message{Topic: "a", TS: at(500 * time.Millisecond)})
	r.Feed(&Message{Topic: "b", TS: at(1200 * time.Millisecond)}) // not matched, still carries time
	r.Feed(&Message{Topic: "a", TS: at(3000 * time.Millisecond)})
	r.Tick(at(5500 * time.Millisecond))
	mustNotBeDisabled(t, r)
	if got, want := luaList(r, "ev"), "m500,t1000@1000,t2000@2000,t3000@3000,m3000,t4000@4000,t5000@5000"; got != want {
		t.Errorf("events\n got  %s\n want %s", got, want)
	}
	r.Tick(at(10000 * time.Second))
	st := r.Status()
	if st.Ticks != 5+MaxCatchUpTicks || st.TicksSkipped != 10000-5-MaxCatchUpTicks {
		t.Errorf("after a jump: ticks %d skipped %d", st.Ticks, st.TicksSkipped)
	}
}

func TestDeterminism(t *testing.T) {
	run := func() []Trigger {
		f := &fired{}
		var rules []*Rule
		for _, n := range ShippedNames() {
			r, err := LoadShipped(n, Options{OnTrigger: f.on, Logger: quiet, Params: map[string]string{"topic": "s"}})
			if err != nil {
				t.Fatal(err)
			}
			rules = append(rules, r)
		}
		h, err := NewHost(rules...)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		v, ts := 30.0, base
		for i := range 5000 {
			// a speed that brakes hard now and then, with gaps and bursts
			step := time.Duration(10+(i*7919)%40) * time.Millisecond
			if i%700 > 650 {
				step = 300 * time.Millisecond
			}
			ts += int64(step)
			if i%500 < 20 {
				v -= 0.2
			} else {
				v += 0.01
			}
			h.Feed(&Message{Topic: "s", TS: ts, Data: f32(v)})
		}
		for _, st := range h.Status() {
			if st.Disabled {
				t.Fatalf("%s disabled: %s", st.Name, st.Why)
			}
		}
		return f.list
	}
	a, b := run(), run()
	if len(a) < 10 || !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs differ or fire too little: %d vs %d triggers", len(a), len(b))
	}
}

func TestReload(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/r.lua"
	write := func(reason string) {
		t.Helper()
		src := "rule{name='r', topics='a', tick='1s'}\nfunction on_message(m) trigger{reason='" + reason + "'} end\nfunction on_tick() end"
		if err := writeFile(path, src); err != nil {
			t.Fatal(err)
		}
	}
	write("v1")
	f := &fired{}
	r, err := Load(path, Options{OnTrigger: f.on, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := NewHost(r)
	defer h.Close()
	h.Feed(&Message{Topic: "a", TS: at(0)})

	if err := writeFile(path, "rule{name='r', topics='a'\nfunction on_message(m) end"); err != nil {
		t.Fatal(err)
	}
	err = h.Reload("r")
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "old version keeps running") || !strings.Contains(err.Error(), path+" line:2") {
		t.Errorf("broken reload: %v", err)
	}
	h.Feed(&Message{Topic: "a", TS: at(1500 * time.Millisecond)})
	if st := h.Status()[0]; st.ReloadError == "" || st.TriggersFired != 2 {
		t.Errorf("after broken reload: %+v", st)
	}

	write("v2")
	if err := h.Reload("r"); err != nil {
		t.Fatal(err)
	}
	h.Feed(&Message{Topic: "a", TS: at(3 * time.Second)})
	st := h.Status()[0]
	if st.ReloadError != "" || st.Reloads != 1 || st.TriggersFired != 3 || st.Ticks != 3 {
		t.Errorf("after good reload: %+v", st)
	}
	if got := []string{f.list[0].Reason, f.list[1].Reason, f.list[2].Reason}; !reflect.DeepEqual(got, []string{"v1", "v1", "v2"}) {
		t.Errorf("reasons %v", got)
	}
	// a disabled rule comes back with a fixed version
	if err := h.ReloadSource("r", "rule{name='r', topics='a'}\nfunction on_message(m) error('x') end"); err != nil {
		t.Fatal(err)
	}
	h.Feed(&Message{Topic: "a", TS: at(4 * time.Second)})
	if !h.Status()[0].Disabled {
		t.Fatal("not disabled")
	}
	if err := h.ReloadSource("r", "rule{name='r', topics='a'}\nfunction on_message(m) end"); err != nil {
		t.Fatal(err)
	}
	h.Feed(&Message{Topic: "a", TS: at(5 * time.Second)})
	if st := h.Status()[0]; st.Disabled || st.Errors != 1 || st.Messages != 5 {
		t.Errorf("after fixing: %+v", st)
	}
	if err := h.Reload("nope"); !errors.Is(err, ErrNoRule) {
		t.Errorf("reload of an unknown rule: %v", err)
	}
}

func TestDumpFinishedAndLog(t *testing.T) {
	var buf strings.Builder
	r, err := LoadSource("t.lua", `rule{name='d', topics='a'}
function on_message(m) for i = 1, 100 do log('line', i, m.ts) end end
function on_dump_finished(d) log('dump', d.path, d.reason, d.bytes, d.messages, d.error) end`,
		Options{Logger: newTextLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Feed(&Message{Topic: "a", TS: at(0)})
	r.Feed(&Message{Topic: "a", TS: at(500 * time.Millisecond)})
	st := r.Status()
	if st.LogsDropped != 200-10-5 {
		t.Errorf("logs dropped %d, want %d", st.LogsDropped, 200-10-5)
	}
	r.DumpFinished(DumpResult{Path: "/d/x.mcap", Reason: "hard-brake", Bytes: 100, Messages: 7, TimeNs: at(10 * time.Second), Err: errors.New("disk full")})
	if out := buf.String(); !strings.Contains(out, `dump\t/d/x.mcap\thard-brake\t100\t7\tdisk full`) || strings.Count(out, `line\t`) != 15 {
		t.Errorf("log output:\n%s", out)
	}
}

func TestNamesAreUnique(t *testing.T) {
	a, _ := load(t, "rule{name='same', topics='a'}\nfunction on_message(m) end", nil)
	b, _ := load(t, "rule{name='same', topics='b'}\nfunction on_message(m) end", nil)
	if _, err := NewHost(a, b); !errors.Is(err, ErrDeclaration) || !strings.Contains(err.Error(), `rule "same" already loaded from t.lua`) {
		t.Errorf("NewHost with a duplicate: %v", err)
	}
	if _, err := StartLive(nil, []*Rule{a, b}, LiveOptions{}); !errors.Is(err, ErrDeclaration) {
		t.Errorf("StartLive with a duplicate: %v", err)
	}
	c, _ := load(t, "rule{name='other', topics='b'}\nfunction on_message(m) end", nil)
	h, err := NewHost(a, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ReloadSource("other", "rule{name='same', topics='b'}\nfunction on_message(m) end"); !errors.Is(err, ErrDeclaration) {
		t.Errorf("reload into a taken name: %v", err)
	}
	if _, err := LoadShipped("no_such_rule", Options{}); !errors.Is(err, ErrNoRule) || !strings.Contains(err.Error(), "hard_brake") {
		t.Errorf("LoadShipped of an unknown name: %v", err)
	}
}

// A callback is timed for Status without a clock read per call: one that
// has run stampAfter instructions is stamped by the meter, so a Status
// taken later says how long it has run since; one blocked in a Go function
// before that is timed from Status's first sight of it.
func TestCallNsWithoutClockPerCall(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		stamped    bool
	}{
		{"lua-then-go", "for i = 1, 10000 do end block()", true},
		{"go-at-once", "block()", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := load(t, "rule{name='b', topics='x'}\nfunction on_message(m) "+tc.body+" end", nil)
			entered, release := make(chan struct{}), make(chan struct{})
			r.L.SetGlobal("block", r.L.NewFunction(func(*lua.LState) int { close(entered); <-release; return 0 }))
			done := make(chan struct{})
			go func() { r.Feed(&Message{Topic: "x", TS: base}); close(done) }()
			<-entered
			time.Sleep(30 * time.Millisecond)
			first := r.Status()
			time.Sleep(30 * time.Millisecond)
			second := r.Status()
			close(release)
			<-done
			if after := r.Status(); after.CallNs != 0 {
				t.Errorf("after the call: CallNs %v", time.Duration(after.CallNs))
			}
			if tc.stamped && first.CallNs < int64(30*time.Millisecond) {
				t.Errorf("stamped callback: first Status CallNs %v, want >= 30ms", time.Duration(first.CallNs))
			}
			if !tc.stamped && first.CallNs > int64(25*time.Millisecond) {
				t.Errorf("callback in a Go function: first Status CallNs %v, want about 0 (first sight)", time.Duration(first.CallNs))
			}
			if second.CallNs < first.CallNs+int64(30*time.Millisecond) {
				t.Errorf("CallNs %v then %v, want it to grow by >= 30ms", time.Duration(first.CallNs), time.Duration(second.CallNs))
			}
		})
	}
}
