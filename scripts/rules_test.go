package scripts

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/demo"
)

// speedStream feeds speeds (m/s) sampled every step from t=0 on topic.
func speedStream(r *Rule, topic string, step time.Duration, speeds []float64) {
	for i, v := range speeds {
		r.Feed(&Message{Topic: topic, TS: at(time.Duration(i) * step), Seq: uint64(i), Data: f32(v)})
	}
}

// ramp returns n samples: hold v0 for hold samples, then change by dv per
// sample down/up to v1, then hold v1.
func ramp(v0, v1, dv float64, hold, n int) []float64 {
	out := make([]float64, 0, n)
	v := v0
	for i := range n {
		if i >= hold && v != v1 {
			if v0 > v1 {
				v = math.Max(v1, v-dv)
			} else {
				v = math.Min(v1, v+dv)
			}
		}
		out = append(out, v)
	}
	return out
}

func TestHardBrake(t *testing.T) {
	const step = 10 * time.Millisecond // 100 Hz
	cases := []struct {
		name   string
		params map[string]string
		speeds []float64
		want   []int64 // ms
	}{
		// 9 m/s² = 0.09 m/s per 10ms sample, from sample 300 (3s) on
		{"hard brake fires once", nil, ramp(20, 0, 0.09, 300, 1000), []int64{3000}},
		{"gentle brake 4 m/s²", nil, ramp(20, 0, 0.04, 300, 1000), []int64{}},
		{"just below 6 m/s²", nil, ramp(20, 0, 0.0595, 300, 1000), []int64{}},
		{"lower threshold param", map[string]string{"decel": "3"}, ramp(20, 0, 0.04, 300, 1000), []int64{3000}},
		{"acceleration", nil, ramp(0, 30, 0.2, 100, 500), []int64{}},
		{"two brakes beyond the cooldown", nil, append(ramp(20, 10, 0.1, 100, 1200), ramp(10, 0, 0.1, 100, 500)...), []int64{1000, 13000}},
		{"two brakes within the cooldown", nil, append(ramp(20, 10, 0.1, 100, 400), ramp(10, 0, 0.1, 100, 500)...), []int64{1000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, f := shipped(t, "hard_brake", c.params)
			speedStream(r, "vehicle/speed", step, c.speeds)
			mustNotBeDisabled(t, r)
			if got := f.times(base); !reflect.DeepEqual(got, c.want) {
				t.Errorf("fired at %v ms, want %v", got, c.want)
			}
		})
	}

	// a 10 m/s drop across a 2 s gap is not a brake; other topics are ignored
	r, f := shipped(t, "hard_brake", nil)
	r.Feed(&Message{Topic: "vehicle/speed", TS: at(0), Data: f32(20)})
	r.Feed(&Message{Topic: "vehicle/other", TS: at(time.Second), Data: f32(0)})
	r.Feed(&Message{Topic: "vehicle/speed", TS: at(2 * time.Second), Data: f32(10)})
	r.Feed(&Message{Topic: "vehicle/speed", TS: at(2010 * time.Millisecond), Data: f32(float64(float32(math.NaN())))})
	r.Feed(&Message{Topic: "vehicle/speed", TS: at(2020 * time.Millisecond), Data: f32(0)})
	mustNotBeDisabled(t, r)
	if len(f.list) != 0 {
		t.Errorf("fired across a gap or a NaN: %+v", f.list)
	}

	// params choose topic, offset and type
	r, f = shipped(t, "hard_brake", map[string]string{"topic": "can/0x123", "offset": "2", "field": "u16be", "scale": "0.01"})
	for i, v := range ramp(2000, 0, 10, 10, 40) { // centi-m/s, 10 per 10ms = 10 m/s²
		b := make([]byte, 4)
		binary.BigEndian.PutUint16(b[2:], uint16(v))
		r.Feed(&Message{Topic: "can/0x123", TS: at(time.Duration(i) * step), Data: b})
	}
	if got := f.times(base); !reflect.DeepEqual(got, []int64{100}) || f.list[0].Reason != "hard-brake" || f.list[0].Severity != 2 {
		t.Errorf("u16be speed: %+v", f.list)
	}
	if tag := f.list[0].Tag; !strings.Contains(tag, "10.0 m/s^2 from 20.0 to 19.9 m/s") {
		t.Errorf("tag %q", tag)
	}
	// a message too short for the offset disables the rule, naming the size
	r.Feed(&Message{Topic: "can/0x123", TS: at(time.Second), Data: []byte{1}})
	if st := r.Status(); !strings.Contains(st.Why, "rules/hard_brake.lua:") || !strings.Contains(st.Why, "message size 1") {
		t.Errorf("short message: %q", st.Why)
	}
}

// TestHardBrakeDemoVehicle drives the demo vehicle's topics through the
// rule in virtual time, as the end-to-end demo does live.
func TestHardBrakeDemoVehicle(t *testing.T) {
	r, f := shipped(t, "hard_brake", nil)
	h, _ := NewHost(r)
	v := demo.DefaultVehicle()
	var buf []byte
	type next struct {
		at time.Duration
		n  uint64
	}
	sched := make([]next, len(demo.Topics))
	for now := time.Duration(0); now < 10*time.Second; now += time.Millisecond {
		for i, tp := range demo.Topics {
			if tp.Hz == 0 {
				continue
			}
			for sched[i].at <= now {
				buf = v.Payload(buf, tp, sched[i].at, sched[i].n)
				h.Feed(&Message{Topic: tp.Name, TS: at(sched[i].at), Seq: sched[i].n, Data: buf})
				sched[i].n++
				sched[i].at += time.Duration(float64(time.Second) / tp.Hz)
			}
		}
	}
	mustNotBeDisabled(t, r)
	if len(f.list) != 1 {
		t.Fatalf("fired %d times, want once: %+v", len(f.list), f.list)
	}
	if d := time.Duration(f.list[0].TimeNs - base); d < v.BrakeAt || d > v.BrakeAt+20*time.Millisecond {
		t.Errorf("fired at %v, brake starts at %v", d, v.BrakeAt)
	}
}

func TestThreshold(t *testing.T) {
	vals := []float64{5, 11, 12, 9, 11, 7, 11, 10, 3, 2, 9, 1}
	cases := []struct {
		params map[string]string
		want   []int64 // sample indexes
	}{
		{map[string]string{"high": "10", "low": "8"}, []int64{1, 6}},
		{map[string]string{"high": "10"}, []int64{1, 4, 6}},
		{map[string]string{"direction": "below", "low": "4", "high": "8"}, []int64{8, 11}},
		{map[string]string{"high": "100"}, []int64{}},
		{map[string]string{"high": "24", "scale": "2", "bias": "1"}, []int64{2}}, // 12*2+1 = 25
	}
	for _, c := range cases {
		r, f := shipped(t, "threshold", c.params)
		for i, v := range vals {
			r.Feed(&Message{Topic: "any/topic", TS: at(time.Duration(i) * time.Second), Data: f32(v)})
		}
		mustNotBeDisabled(t, r)
		if got := f.times(base); !reflect.DeepEqual(got, scaleMs(c.want, 1000)) {
			t.Errorf("%v: fired at %v ms, want samples %v", c.params, got, c.want)
		}
	}
	// other fields and offsets; a topic that does not match is ignored
	r, f := shipped(t, "threshold", map[string]string{"topic": "imu/*", "field": "i16be", "offset": "2", "high": "-100", "low": "-200"})
	for i, v := range []int16{-300, -50, -150, -250, -90} {
		b := make([]byte, 4)
		binary.BigEndian.PutUint16(b[2:], uint16(v))
		r.Feed(&Message{Topic: "imu/x", TS: at(time.Duration(i) * time.Second), Data: b})
		r.Feed(&Message{Topic: "gps/x", TS: at(time.Duration(i)*time.Second + 1), Data: []byte{0x7f, 0x7f, 0x7f, 0x7f}})
	}
	mustNotBeDisabled(t, r)
	if got := f.times(base); !reflect.DeepEqual(got, []int64{1000, 4000}) || !strings.HasPrefix(f.list[0].Tag, "imu/x=-50 > -100") {
		t.Errorf("i16be: %v %+v", got, f.list)
	}
	for _, bad := range []map[string]string{{"direction": "sideways"}, {"high": "1", "low": "2"}, {"high": "x"}, {"hihg": "1"}} {
		if _, err := LoadShipped("threshold", Options{Params: bad, Logger: quiet}); err == nil {
			t.Errorf("params %v loaded", bad)
		}
	}
}

func scaleMs(idx []int64, ms int64) []int64 {
	out := []int64{}
	for _, i := range idx {
		out = append(out, i*ms)
	}
	return out
}

func TestHeartbeatLoss(t *testing.T) {
	r, f := shipped(t, "heartbeat_loss", map[string]string{"topic": "hb/*", "timeout": "0.5"})
	var msgs []*Message
	feed := func(topic string, from, to, every time.Duration) {
		for d := from; d < to; d += every {
			msgs = append(msgs, &Message{Topic: topic, TS: at(d)})
		}
	}
	feed("hb/a", 0, 2*time.Second, 100*time.Millisecond)                   // last at 1.9s
	feed("hb/b", 50*time.Millisecond, 5*time.Second, 200*time.Millisecond) // last at 4.85s
	// hb/a silent from 1.9s to 3s, then back, then silent for good at 3.9s
	feed("hb/a", 3*time.Second, 4*time.Second, 100*time.Millisecond)
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TS < msgs[j].TS })
	for _, m := range msgs {
		r.Feed(m)
	}
	r.Tick(at(6 * time.Second))
	mustNotBeDisabled(t, r)
	// the first tick where silence > 500ms: at 2.4 hb/a has been silent for
	// exactly 0.5s, not more; at 2.5 it has. hb/b: 5.4-4.85 = 0.55s. Each
	// trigger is anchored at the lost topic's last message (1.9s, 3.9s,
	// 4.85s), so the dump holds the window before the silence; Lua's
	// numbers round the anchor to 256 ns.
	if got, want := f.roundedTimes(base), []int64{1900, 3900, 4850}; !reflect.DeepEqual(got, want) {
		t.Errorf("anchored at %v ms, want %v (%+v)", got, want, f.list)
	}
	if !strings.HasPrefix(f.list[0].Tag, "hb/a silent for 600 ms") || !strings.HasPrefix(f.list[2].Tag, "hb/b") {
		t.Errorf("tags %q %q", f.list[0].Tag, f.list[2].Tag)
	}

	// an exact topic that never speaks is lost timeout after the rule starts
	r, f = shipped(t, "heartbeat_loss", map[string]string{"topic": "hb/never", "timeout": "1"})
	for d := time.Duration(0); d <= 3*time.Second; d += 10 * time.Millisecond {
		r.Feed(&Message{Topic: "other", TS: at(d)})
	}
	if got := f.times(base); !reflect.DeepEqual(got, []int64{1200}) {
		t.Errorf("never-seen topic: fired at %v ms, want [1200]", got)
	}
	// steady heartbeats never fire
	r, f = shipped(t, "heartbeat_loss", map[string]string{"topic": "hb", "timeout": "0.5"})
	for d := time.Duration(0); d <= 10*time.Second; d += 450 * time.Millisecond {
		r.Feed(&Message{Topic: "hb", TS: at(d)})
	}
	if len(f.list) != 0 {
		t.Errorf("steady heartbeat fired: %v", f.times(base))
	}
}

func TestRateAnomaly(t *testing.T) {
	r, f := shipped(t, "rate_anomaly", map[string]string{"topic": "lidar", "window": "1", "min": "8", "max": "12"})
	ts := 50 * time.Millisecond
	rate := func(hz int, d time.Duration) {
		for end := ts + d; ts < end; ts += time.Second / time.Duration(hz) {
			r.Feed(&Message{Topic: "lidar", TS: at(ts)})
		}
	}
	rate(10, 5*time.Second) // in band
	rate(20, 1*time.Second) // too fast: 19 in [5s, 6s), judged at the 6s tick
	rate(10, 3*time.Second) // in band
	rate(4, 1*time.Second)  // too slow: judged at the 10s tick
	rate(10, 2*time.Second) // in band
	r.Tick(at(ts))
	mustNotBeDisabled(t, r)
	if got, want := f.times(base), []int64{6000, 10000}; !reflect.DeepEqual(got, want) {
		t.Errorf("fired at %v ms, want %v (%+v)", got, want, f.list)
	}
	if !strings.HasPrefix(f.list[0].Tag, "19 messages in 1s, band 8..12") {
		t.Errorf("tag %q", f.list[0].Tag)
	}
}

func TestManual(t *testing.T) {
	r, f := shipped(t, "manual", nil)
	steps := []struct {
		data []byte
		fire string // tag, "" for none
	}{
		{[]byte{0}, ""},
		{[]byte{1}, "button"},
		{[]byte{1}, ""}, // held
		{[]byte{0}, ""},
		{[]byte{1, 'o', 'o', 'p', 's', 0}, "oops"},
		{nil, "command"},
		{[]byte{0}, ""},
	}
	var want []string
	for i, s := range steps {
		r.Feed(&Message{Topic: "driver/button", TS: at(time.Duration(i) * 3 * time.Second), Data: s.data})
		r.Feed(&Message{Topic: "driver/other", TS: at(time.Duration(i)*3*time.Second + 1), Data: []byte{1}})
		if s.fire != "" {
			want = append(want, s.fire)
		}
	}
	mustNotBeDisabled(t, r)
	var got []string
	for _, tr := range f.list {
		got = append(got, tr.Tag)
	}
	if !reflect.DeepEqual(got, want) || f.list[0].Pre != nil || f.list[0].Severity != 3 {
		t.Errorf("tags %q, want %q (%+v)", got, want, f.list)
	}
	// cooldown 2s: a second press 1s later is suppressed
	r, f = shipped(t, "manual", nil)
	for i, b := range []byte{1, 0, 1, 0, 1} {
		r.Feed(&Message{Topic: "driver/button", TS: at(time.Duration(i) * 500 * time.Millisecond), Data: []byte{b}})
	}
	if got := f.times(base); !reflect.DeepEqual(got, []int64{0, 2000}) || r.Status().TriggersSuppressed != 1 {
		t.Errorf("cooldown: %v", got)
	}
}

// TestThresholdAgainstReference: threshold.lua folds "below" into "above"
// on the negated value (one comparison per message); its crossings must be
// exactly those of the hysteresis as configured, in both directions, with
// any scale and bias, and its tags show the value and level as configured.
func TestThresholdAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 33))
	pick := func() float64 { return float64(rng.IntN(41)-20) / 2 } // -10 .. 10 in halves: exact in float32
	for c := range 300 {
		above := rng.IntN(2) == 0
		scale, bias := pick(), pick()
		low, high := pick(), pick()
		if low > high {
			low, high = high, low
		}
		vals := make([]float64, 40)
		for i := range vals {
			vals[i] = pick()
		}
		dir := map[bool]string{true: "above", false: "below"}[above]
		params := map[string]string{"direction": dir, "high": fmt.Sprint(high), "low": fmt.Sprint(low),
			"scale": fmt.Sprint(scale), "bias": fmt.Sprint(bias)}
		var want []int64
		armed := true
		for i, raw := range vals {
			v := raw*scale + bias
			switch {
			case armed && above && v > high, armed && !above && v < low:
				armed = false
				want = append(want, int64(i)*3000)
			case !armed && above && v < low, !armed && !above && v > high:
				armed = true
			}
		}
		r, f := shipped(t, "threshold", params)
		for i, v := range vals {
			r.Feed(&Message{Topic: "x", TS: at(time.Duration(i) * 3 * time.Second), Data: f32(v)})
		}
		mustNotBeDisabled(t, r)
		if got := f.times(base); !reflect.DeepEqual(got, append([]int64{}, want...)) {
			t.Fatalf("case %d %v, values %v: fired at %v ms, want %v", c, params, vals, got, want)
		}
	}
	for _, tc := range []struct {
		params map[string]string
		vals   []float64
		tag    string
	}{
		{map[string]string{"direction": "below", "low": "4", "high": "8"}, []float64{9, 3}, "x=3 < 4"},
		{map[string]string{"direction": "below", "low": "-4", "high": "0", "scale": "-2", "bias": "1"}, []float64{0, 3}, "x=-5 < -4"},
		{map[string]string{"direction": "above", "high": "0", "scale": "-1"}, []float64{0, -2}, "x=2 > 0"},
		{map[string]string{"direction": "below", "low": "0", "high": "1", "bias": "-3"}, []float64{5, 3, 2}, "x=-1 < 0"},
	} {
		r, f := shipped(t, "threshold", tc.params)
		for i, v := range tc.vals {
			r.Feed(&Message{Topic: "x", TS: at(time.Duration(i) * time.Second), Data: f32(v)})
		}
		if len(f.list) != 1 || f.list[0].Tag != tc.tag {
			t.Errorf("%v %v: fired %+v, want one with tag %q", tc.params, tc.vals, f.list, tc.tag)
		}
	}
}
