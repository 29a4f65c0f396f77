package scripts

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// fieldPair is a rule reading a field by name measured against the same
// rule reading it by offset (today's accessor).
type fieldPair struct {
	name           string
	offset, byName string            // sources; "" for a shipped rule
	shipped        string            // shipped rule name
	offParams      map[string]string // shipped: params of the offset variant
	nameParams     map[string]string
}

var fieldPairs = []fieldPair{
	{name: "access", offset: "rule{name='a', topics='vehicle/speed'}\nfunction on_message(m) local v = m:f32le(0) end",
		byName: "rule{name='a', topics='vehicle/speed'}\nfunction on_message(m) local v = m.speed end"},
	{name: "access-f", offset: "rule{name='a', topics='vehicle/speed'}\nfunction on_message(m) local v = m:i16be(5) end",
		byName: "rule{name='a', topics='vehicle/speed'}\nfunction on_message(m) local v = m:f('wheel[0]') end"},
	{name: "threshold", shipped: "threshold",
		offParams:  map[string]string{"topic": "vehicle/speed", "high": "1e9"},
		nameParams: map[string]string{"topic": "vehicle/speed", "high": "1e9", "path": "speed"}},
	{name: "hard_brake", shipped: "hard_brake", nameParams: map[string]string{"path": "speed"}},
}

func (p fieldPair) load(t testing.TB, byName bool) *Rule {
	src, params := p.offset, p.offParams
	if byName {
		src, params = p.byName, p.nameParams
	}
	if p.shipped != "" {
		r, _ := shipped(t, p.shipped, params)
		return r
	}
	r, _ := load(t, src, nil)
	return r
}

// typedSpeed is a message of packedType as the benchmarks feed it.
func typedSpeed() *Message {
	return &Message{Topic: "vehicle/speed", TS: base, Type: packedType(),
		Data: packSpeed(20, 3, [4]int16{1, 2, 3, 4}, 0, 0, false, "", 0)}
}

// feeder returns a function feeding n messages to r.
func feeder(r *Rule, m *Message, n int) func() {
	return func() {
		for range n {
			m.TS += int64(10 * time.Millisecond)
			r.Feed(m)
		}
	}
}

// interleaved runs a and b alternately for rounds rounds (which goes
// first alternates too) and returns the median CPU ns of one call of each
// and the median of the per-round ratios b/a.
func interleaved(rounds int, a, b func()) (nsA, nsB, ratio float64) {
	var as, bs, rs []float64
	for i := range rounds {
		var ta, tb int64
		if i%2 == 0 {
			c0 := cpuNs()
			a()
			c1 := cpuNs()
			b()
			ta, tb = c1-c0, cpuNs()-c1
		} else {
			c0 := cpuNs()
			b()
			c1 := cpuNs()
			a()
			tb, ta = c1-c0, cpuNs()-c1
		}
		as, bs, rs = append(as, float64(ta)), append(bs, float64(tb)), append(rs, float64(tb)/float64(max(ta, 1)))
	}
	med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	return med(as), med(bs), med(rs)
}

// BenchmarkFieldByName: one message through a rule that reads a packed
// field by name (m.speed, m:f("wheel[0]"), the shipped rules with path)
// beside the same rule reading it by offset, in the same run: rounds of
// 20000 messages alternate between the two, and the median ratio of their
// CPU times is the "name/offset" metric (1.0 = the same cost).
func BenchmarkFieldByName(b *testing.B) {
	for _, p := range fieldPairs {
		b.Run("rule="+p.name, func(b *testing.B) {
			ro, rn := p.load(b, false), p.load(b, true)
			mo, mn := typedSpeed(), typedSpeed()
			const per = 20000
			fo, fn := feeder(ro, mo, per), feeder(rn, mn, per)
			fo()
			fn()
			b.ReportAllocs()
			var ratios []float64
			var nsO, nsN float64
			for b.Loop() {
				o, n, r := interleaved(3, fo, fn)
				nsO, nsN = o, n
				ratios = append(ratios, r)
			}
			slices.Sort(ratios)
			b.ReportMetric(nsO/per, "offset-ns/msg")
			b.ReportMetric(nsN/per, "name-ns/msg")
			b.ReportMetric(ratios[len(ratios)/2], "name/offset")
			if st := rn.Status(); st.Disabled || st.TriggersFired != 0 {
				b.Fatalf("%+v", st)
			}
		})
	}
}

// BenchmarkFieldByNameDecoded: reading fields of protobuf and JSON
// messages by name (a scan of the message per field and callback) beside
// reading a packed field by offset, as "decoded/offset".
func BenchmarkFieldByNameDecoded(b *testing.B) {
	ptyp, pdata := protoType(b)
	jtyp := &ingest.Type{MessageEncoding: ingest.EncodingJSON}
	jdata := []byte(`{"header": {"stamp": {"sec": 1796169600, "nanosec": 5}}, "ax": -9.5, "w": [0.5, 1.5, 2.5], "ok": true}`)
	ro, _ := load(b, "rule{name='a', topics='imu'}\nfunction on_message(m) local v = m:f32le(0) end", nil)
	mo := &Message{Topic: "imu", TS: base, Data: f32(1)}
	for _, c := range []struct {
		name, expr string
		typ        *ingest.Type
		data       []byte
	}{
		{"protobuf-1-field", "m.ax", ptyp, pdata},
		{"protobuf-nested", "m:f('header.stamp.sec')", ptyp, pdata},
		{"json-1-field", "m.ax", jtyp, jdata},
		{"json-3-fields", "m.ax + m:f('w[1]') + m:f('header.stamp.sec')", jtyp, jdata},
	} {
		b.Run("read="+c.name, func(b *testing.B) {
			rn, _ := load(b, "rule{name='a', topics='imu'}\nfunction on_message(m) local v = "+c.expr+" end", nil)
			mn := &Message{Topic: "imu", TS: base, Type: c.typ, Data: c.data}
			const per = 5000
			fo, fn := feeder(ro, mo, per), feeder(rn, mn, per)
			fn()
			b.ReportAllocs()
			var nsO, nsN, ratio float64
			for b.Loop() {
				nsO, nsN, ratio = interleaved(3, fo, fn)
			}
			b.ReportMetric(nsO/per, "offset-ns/msg")
			b.ReportMetric(nsN/per, "decoded-ns/msg")
			b.ReportMetric(ratio, "decoded/offset")
			if st := rn.Status(); st.Disabled {
				b.Fatalf("%+v", st)
			}
		})
	}
}

// TestFieldByNameSpeedGate holds the figure: a rule reading a
// packed field by name costs at most 1.3x the same rule reading it by
// offset (median of 15 interleaved rounds of 20000 messages, CPU time). A
// speed gate: it runs alone in CI's bench-gates step (EDR_SPEED_GATES=1).
func TestFieldByNameSpeedGate(t *testing.T) {
	if os.Getenv("EDR_SPEED_GATES") != "1" {
		t.Skip("a speed gate: runs alone in CI's bench-gates step (EDR_SPEED_GATES=1), not beside other tests on shared cores")
	}
	for _, p := range fieldPairs {
		t.Run(p.name, func(t *testing.T) {
			ro, rn := p.load(t, false), p.load(t, true)
			const per = 20000
			fo, fn := feeder(ro, typedSpeed(), per), feeder(rn, typedSpeed(), per)
			fo()
			fn()
			nsO, nsN, ratio := interleaved(15, fo, fn)
			t.Logf("%s: by offset %.0f ns/msg, by name %.0f ns/msg, ratio %.2f", p.name, nsO/per, nsN/per, ratio)
			if ratio > 1.3 {
				t.Errorf("by name costs %.2fx by offset, want <= 1.3", ratio)
			}
			mustNotBeDisabled(t, rn)
		})
	}
}
