package scripts

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// benchRules are the on_message costs measured side by side: "bare" is an
// empty on_message (the host's floor), "accessor" adds one m:f32le,
// "threshold" and "hard_brake" are the shipped rules.
var benchRules = []struct {
	name   string
	src    string // "" for a shipped rule
	params map[string]string
}{
	{"bare", "rule{name='bare', topics='vehicle/speed'}\nfunction on_message(m) end", nil},
	{"accessor", "rule{name='acc', topics='vehicle/speed'}\nfunction on_message(m) local v = m:f32le(0) end", nil},
	{"threshold", "", map[string]string{"topic": "vehicle/speed", "high": "1e9"}},
	{"hard_brake", "", nil},
}

var sinkStatus RuleStatus

// cpuNs is the process's user+system CPU time. On a shared machine the
// wall-clock ns/op includes time the benchmark was not scheduled; CPU time
// per op does not.
func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// perMessage runs feed, which handles msgs messages, in a b.Loop and
// reports msg/s and CPU ns per message.
func perMessage(b *testing.B, msgs int, feed func()) {
	b.ReportAllocs()
	c0 := cpuNs()
	for b.Loop() {
		feed()
	}
	n := float64(b.N * msgs)
	b.ReportMetric(float64(cpuNs()-c0)/n, "cpu-ns/msg")
	b.ReportMetric(n/b.Elapsed().Seconds(), "msg/s")
}

func BenchmarkOnMessage(b *testing.B) {
	for _, br := range benchRules {
		b.Run("rule="+br.name, func(b *testing.B) {
			var r *Rule
			if br.src == "" {
				r, _ = shipped(b, br.name, br.params)
			} else {
				r, _ = load(b, br.src, nil)
			}
			m := &Message{Topic: "vehicle/speed", TS: base, Data: f32(20)}
			b.SetBytes(int64(len(m.Data)))
			perMessage(b, 1, func() {
				m.TS += int64(10 * time.Millisecond)
				r.Feed(m)
			})
			sinkStatus = r.Status()
			if sinkStatus.Disabled || sinkStatus.TriggersFired != 0 {
				b.Fatalf("%+v", sinkStatus)
			}
		})
	}
	// the floor under everything: gopher-lua calling an empty Lua function
	// with one argument, no host around it
	b.Run("rule=gopher-lua-call", func(b *testing.B) {
		L := lua.NewState()
		defer L.Close()
		if err := L.DoString("function f(m) end"); err != nil {
			b.Fatal(err)
		}
		fn := L.GetGlobal("f")
		arg := L.NewUserData()
		perMessage(b, 1, func() {
			L.Push(fn)
			L.Push(arg)
			if err := L.PCall(1, 0, nil); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkRunaway is how long a `while true do end` callback runs before
// its instruction budget stops it (and the rule is disabled), beside the
// cost of loading the rule alone.
func BenchmarkRunaway(b *testing.B) {
	const src = "rule{name='loop', topics='a'}\nfunction on_message(m) while true do end end"
	for _, n := range []int64{10_000, 100_000, 1_000_000} {
		b.Run("instructions="+itoa(n), func(b *testing.B) {
			opts := Options{Logger: quiet, Budget: Budget{Instructions: n}}
			m := &Message{Topic: "a", TS: 1}
			perMessage(b, 1, func() {
				r, err := LoadSource("t.lua", src, opts)
				if err != nil {
					b.Fatal(err)
				}
				r.Feed(m)
				if !r.Disabled() {
					b.Fatal("not stopped")
				}
				r.Close()
			})
		})
	}
	b.Run("load-only", func(b *testing.B) {
		perMessage(b, 1, func() {
			r, err := LoadSource("t.lua", src, Options{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			r.Close()
		})
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
