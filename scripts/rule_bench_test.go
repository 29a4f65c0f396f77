package scripts

import (
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
			b.ReportAllocs()
			b.SetBytes(int64(len(m.Data)))
			for b.Loop() {
				m.TS += int64(10 * time.Millisecond)
				r.Feed(m)
			}
			sinkStatus = r.Status()
			if sinkStatus.Disabled || sinkStatus.TriggersFired != 0 {
				b.Fatalf("%+v", sinkStatus)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
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
		b.ReportAllocs()
		for b.Loop() {
			L.Push(fn)
			L.Push(arg)
			if err := L.PCall(1, 0, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
	})
}
