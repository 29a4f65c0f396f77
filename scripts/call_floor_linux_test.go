package scripts

import (
	"encoding/binary"
	"math"
	"runtime"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// The floor runs the shipped threshold.lua itself in a plain gopher-lua
// state: the host's globals it calls while loading (param, rule) are the
// least that load it, its message a userdata whose f32le is the smallest
// Go accessor gopher-lua allows. What gopher-lua itself costs for the
// rule's instructions, whatever the host does around them.

type callFloor struct {
	L    *lua.LState
	fn   lua.LValue
	view *lua.LUserData
	data []byte
}

// countCtx is the least a per-instruction budget can do through
// gopher-lua's only hook, a context: count the instruction, and hand the
// VM a channel that fires once the count runs out.
type countCtx struct{ left int64 }

func (c *countCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *countCtx) Value(any) any               { return nil }
func (c *countCtx) Err() error                  { return nil }
func (c *countCtx) Done() <-chan struct{} {
	if c.left--; c.left < 0 {
		return closedDone
	}
	return nil
}

func newCallFloor(tb testing.TB, hooked bool) *callFloor {
	c := &callFloor{L: lua.NewState(), data: make([]byte, 4)}
	tb.Cleanup(c.L.Close)
	if hooked {
		c.L.SetContext(&countCtx{left: math.MaxInt64})
	}
	binary.LittleEndian.PutUint32(c.data, math.Float32bits(20))
	methods := c.L.NewTable()
	methods.RawSetString("f32le", c.L.NewFunction(func(L *lua.LState) int {
		off := int(L.CheckNumber(2))
		L.Push(lua.LNumber(math.Float32frombits(binary.LittleEndian.Uint32(c.data[off:]))))
		return 1
	}))
	mt := c.L.NewTable()
	mt.RawSetString("__index", methods)
	c.view = c.L.NewUserData()
	c.L.SetMetatable(c.view, mt)
	params := c.L.NewTable()
	params.RawSetString("topic", lua.LString("vehicle/speed"))
	params.RawSetString("high", lua.LNumber(1e9))
	c.L.SetGlobal("params", params)
	c.L.SetGlobal("param", c.L.NewFunction(func(L *lua.LState) int {
		if v := params.RawGetString(L.CheckString(1)); v != lua.LNil {
			L.Push(v)
		} else {
			L.Push(L.Get(2))
		}
		return 1
	}))
	c.L.SetGlobal("rule", c.L.NewFunction(func(*lua.LState) int { return 0 }))
	c.L.SetGlobal("trigger", c.L.NewFunction(func(*lua.LState) int { return 0 }))
	src, err := Shipped.ReadFile("rules/threshold.lua")
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.L.DoString(string(src)); err != nil {
		tb.Fatal(err)
	}
	c.fn = c.L.GetGlobal("on_message")
	return c
}

func (c *callFloor) feed(tb testing.TB, n int) {
	for range n {
		c.L.Push(c.fn)
		c.L.Push(c.view)
		if err := c.L.PCall(1, 0, nil); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkCallFloor reports, in the same rounds, threshold.lua through
// Rule.Feed, the same rule's code in a plain gopher-lua state with a
// minimal host (floor), and a bare call of an empty function, as CPU per
// message of this thread: the share of the rule's cost that is
// gopher-lua's own (floor/bare-call) against the host's (rule/floor).
//
//	go test -run '^$' -bench CallFloor -benchtime 15x ./scripts/
func BenchmarkCallFloor(b *testing.B) {
	c := newCallRatio(b)
	f := newCallFloor(b, false)
	h := newCallFloor(b, true)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const n = 20000
	c.feed(n)
	f.feed(b, n)
	h.feed(b, n)
	c.bare(b, n)
	var rule, floor, hooked, bare []float64
	for b.Loop() {
		t0 := testutil.ThreadCPU()
		c.feed(n)
		t1 := testutil.ThreadCPU()
		f.feed(b, n)
		t2 := testutil.ThreadCPU()
		h.feed(b, n)
		t3 := testutil.ThreadCPU()
		c.bare(b, n)
		t4 := testutil.ThreadCPU()
		rule = append(rule, float64(t1-t0)/n)
		floor = append(floor, float64(t2-t1)/n)
		hooked = append(hooked, float64(t3-t2)/n)
		bare = append(bare, float64(t4-t3)/n)
	}
	ratios := func(a, d []float64) float64 {
		var r []float64
		for i := range a {
			r = append(r, a[i]/max(d[i], 1))
		}
		return testutil.Median(r)
	}
	b.ReportMetric(testutil.Median(rule), "rule-cpu-ns/msg")
	b.ReportMetric(testutil.Median(floor), "floor-cpu-ns/msg")
	b.ReportMetric(testutil.Median(bare), "bare-cpu-ns/msg")
	b.ReportMetric(ratios(rule, bare), "rule/bare-call")
	b.ReportMetric(ratios(floor, bare), "floor/bare-call")
	b.ReportMetric(testutil.Median(hooked), "counted-floor-cpu-ns/msg")
	b.ReportMetric(ratios(hooked, bare), "counted-floor/bare-call")
	b.ReportMetric(ratios(rule, floor), "rule/floor")
}
