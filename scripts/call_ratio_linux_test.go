package scripts

import (
	"runtime"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// The Lua gate (issue #18, item 7; docs/performance.md, "scripts"):
// threshold.lua through Rule.Feed against a bare gopher-lua call of an
// empty function with one argument, as CPU time per message of this
// thread, interleaved, the median over the rounds of the per-round ratios.
const luaCallGoal = 6.0

// luaCallCeiling is what the gate enforces: a regression past it fails,
// the goal is reported either way. 10.0x while the goal was out of reach
// (the rule measured 6.7-8.8x in CI); 7.5x since threshold.lua's
// specialised on_message (5.1-5.4x at load 5.5, docs/performance.md,
// "threshold.lua specialised"), so a loaded CI machine keeps its margin.
const luaCallCeiling = 7.5

type callRatio struct {
	rule *Rule
	msg  *Message
	L    *lua.LState
	fn   lua.LValue
	arg  lua.LValue
}

func newCallRatio(tb testing.TB) *callRatio {
	r, _ := shipped(tb, "threshold", map[string]string{"topic": "vehicle/speed", "high": "1e9"})
	L := lua.NewState()
	tb.Cleanup(L.Close)
	if err := L.DoString("function f(m) end"); err != nil {
		tb.Fatal(err)
	}
	return &callRatio{rule: r, msg: &Message{Topic: "vehicle/speed", TS: base, Data: f32(20)},
		L: L, fn: L.GetGlobal("f"), arg: L.NewUserData()}
}

func (c *callRatio) feed(n int) {
	for range n {
		c.msg.TS += int64(10 * time.Millisecond)
		c.rule.Feed(c.msg)
	}
}

func (c *callRatio) bare(tb testing.TB, n int) {
	for range n {
		c.L.Push(c.fn)
		c.L.Push(c.arg)
		if err := c.L.PCall(1, 0, nil); err != nil {
			tb.Fatal(err)
		}
	}
}

// round times n messages of each, in turn (order flipping by round), and
// returns threshold's CPU per message / the bare call's.
func (c *callRatio) round(tb testing.TB, i, n int) (ratio float64, ruleNs, bareNs float64) {
	var tr, tb0 time.Duration
	timeIt := func(fn func()) time.Duration {
		t0 := testutil.ThreadCPU()
		fn()
		return testutil.ThreadCPU() - t0
	}
	if i%2 == 0 {
		tr = timeIt(func() { c.feed(n) })
		tb0 = timeIt(func() { c.bare(tb, n) })
	} else {
		tb0 = timeIt(func() { c.bare(tb, n) })
		tr = timeIt(func() { c.feed(n) })
	}
	return float64(tr) / float64(max(tb0, 1)), float64(tr) / float64(n), float64(tb0) / float64(n)
}

// ratio runs rounds rounds of n messages; medians.
func (c *callRatio) ratio(tb testing.TB, rounds, n int) (ratio, ruleNs, bareNs float64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c.feed(n) // warm
	c.bare(tb, n)
	var rs, as, bs []float64
	for i := range rounds {
		r, a, b := c.round(tb, i, n)
		rs, as, bs = append(rs, r), append(as, a), append(bs, b)
	}
	if st := c.rule.Status(); st.Disabled || st.TriggersFired != 0 {
		tb.Fatalf("threshold rule: %+v", st)
	}
	return testutil.Median(rs), testutil.Median(as), testutil.Median(bs)
}

// BenchmarkCallRatio reports threshold.lua's CPU per message as a multiple
// of a bare gopher-lua call's (rule/bare-call; every b.Loop iteration is
// one round of 20000 messages each).
//
//	go test -run '^$' -bench CallRatio -benchtime 15x ./scripts/
func BenchmarkCallRatio(b *testing.B) {
	c := newCallRatio(b)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c.feed(20000)
	var rs, as, bs []float64
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r, a, bb := c.round(b, i, 20000)
		rs, as, bs = append(rs, r), append(as, a), append(bs, bb)
		i++
	}
	b.ReportMetric(testutil.Median(rs), "rule/bare-call")
	b.ReportMetric(testutil.Median(as), "rule-cpu-ns/msg")
	b.ReportMetric(testutil.Median(bs), "bare-cpu-ns/msg")
}

// TestCallSpeedGate fails when threshold.lua costs more than luaCallGoal
// bare gopher-lua calls per message. A speed gate: EDR_SPEED_GATES=1.
//
//	EDR_SPEED_GATES=1 go test -run TestCallSpeedGate -v ./scripts/
func TestCallSpeedGate(t *testing.T) {
	if !testutil.SpeedGates() {
		t.Skip("a speed gate: runs alone in CI's bench-gates step (EDR_SPEED_GATES=1), not beside other tests on shared cores")
	}
	testutil.SkipUnderEmulation(t, "CPU ratios under an emulator are the emulator's")
	c := newCallRatio(t)
	var ratio, ruleNs, bareNs float64
	for try := 0; try < 3; try++ {
		ratio, ruleNs, bareNs = c.ratio(t, 15, 20000)
		if ratio <= luaCallCeiling {
			break
		}
	}
	t.Logf("threshold.lua %.0f CPU ns/msg, bare gopher-lua call %.0f: %.2fx (goal <= %.1fx)", ruleNs, bareNs, ratio, luaCallGoal)
	switch {
	case ratio <= luaCallGoal:
	case ratio > luaCallCeiling:
		t.Errorf("threshold.lua costs %.2fx a bare gopher-lua call, past the regression ceiling %.1fx (goal %.1fx)", ratio, luaCallCeiling, luaCallGoal)
	default:
		t.Logf("GOAL NOT MET on this machine: %.2fx, goal %.1fx; gated at the ceiling %.1fx (docs/performance.md)", ratio, luaCallGoal, luaCallCeiling)
	}
}
