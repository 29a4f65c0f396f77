package scripts

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// TestTriggerWindowsUnsetAndZero: a rule or trigger that sets no window
// hands none on (nil: the recorder's); a zero one hands on zero.
func TestTriggerWindowsUnsetAndZero(t *testing.T) {
	r, f := load(t, `rule{name='w', topics='**'}
function on_message(m)
  if m.seq == 0 then trigger{} end
  if m.seq == 1 then trigger{post = 0} end
  if m.seq == 2 then trigger{pre = "0s", post = "250ms"} end
  if m.seq == 3 then trigger{at = "last"} end
  if m.seq == 4 then trigger{at = m.ts - 1e9} end
end`, nil)
	for i := range 5 {
		r.Feed(&Message{Topic: "x", TS: at(time.Duration(i) * time.Minute), Seq: uint64(i)})
	}
	mustNotBeDisabled(t, r)
	if len(f.list) != 5 {
		t.Fatalf("%d triggers, want 5", len(f.list))
	}
	if tr := f.list[0]; tr.Pre != nil || tr.Post != nil || tr.At != "" {
		t.Errorf("trigger{}: %+v, want no window and no anchor", tr)
	}
	if tr := f.list[1]; tr.Pre != nil || tr.Post == nil || *tr.Post != 0 {
		t.Errorf("trigger{post = 0}: %+v, want post set to zero", tr)
	}
	if tr := f.list[2]; tr.Pre == nil || *tr.Pre != 0 || *tr.Post != 250*time.Millisecond {
		t.Errorf("trigger{pre = 0s, post = 250ms}: %+v", tr)
	}
	if tr := f.list[3]; tr.At != dumpinfo.AtLast || tr.TimeNs != at(3*time.Minute) {
		t.Errorf("trigger{at = last}: %+v, want At last at the message time", tr)
	}
	if tr := f.list[4]; tr.At != "" || tr.TimeNs != at(4*time.Minute-time.Second) {
		t.Errorf("trigger{at = m.ts - 1s}: TimeNs %d, want %d", tr.TimeNs, at(4*time.Minute-time.Second))
	}
	bad, _ := load(t, "rule{name='w', topics='**'}\nfunction on_message(m) trigger{at = 'soon'} end", nil)
	bad.Feed(&Message{Topic: "x", TS: at(0)})
	if st := bad.Status(); !st.Disabled || !strings.Contains(st.Why, `want "last" or a time`) {
		t.Errorf("trigger{at = 'soon'}: %+v, want the rule disabled naming the field", st)
	}
}

// TestShippedRulesUseTheRecordersWindows: a shipped rule declares no
// window unless its params set one (params.pre, params.post), and its
// dumps then use the recorder's.
func TestShippedRulesUseTheRecordersWindows(t *testing.T) {
	for _, name := range ShippedNames() {
		params := map[string]string{}
		if name == "threshold" || name == "rate_anomaly" {
			params["topic"] = "x"
		}
		if name == "rate_anomaly" {
			params["max"] = "10"
		}
		r, err := LoadShipped(name, Options{Params: params})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := r.Decl(); d.Pre != nil || d.Post != nil {
			t.Errorf("%s declares pre %v post %v with no params, want the recorder's", name, d.Pre, d.Post)
		}
		r.Close()
		params["pre"], params["post"] = "2s", "0s"
		r, err = LoadShipped(name, Options{Params: params})
		if err != nil {
			t.Fatalf("%s with pre/post params: %v", name, err)
		}
		if d := r.Decl(); d.Pre == nil || *d.Pre != 2*time.Second || d.Post == nil || *d.Post != 0 || d.Params["pre"] != "2s" {
			t.Errorf("%s with params pre 2s post 0s declares %+v", name, d)
		}
		r.Close()
	}
	_, err := LoadShipped("hard_brake", Options{Params: map[string]string{"topik": "x"}})
	var up *UnknownParamsError
	if !errors.As(err, &up) || !reflect.DeepEqual(up.Names, []string{"topik"}) || !strings.Contains(strings.Join(up.Declared, ","), "topic") {
		t.Errorf("unknown param: %v, want an UnknownParamsError naming topik", err)
	}
}

// TestReloadShipped: a shipped rule reloads from the binary (it has no
// file on disk), keeping its params.
func TestReloadShipped(t *testing.T) {
	h, err := NewHost()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r, err := LoadShipped("hard_brake", Options{Params: map[string]string{"decel": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Add(r); err != nil {
		t.Fatal(err)
	}
	if err := h.Reload("hard_brake"); err != nil {
		t.Fatalf("reload of a shipped rule: %v", err)
	}
	st := h.Status()[0]
	if st.Reloads != 1 || st.ReloadError != "" || h.Rules()[0].Decl().Params["decel"] != "3" {
		t.Errorf("after reload: %+v, params %v", st, h.Rules()[0].Decl().Params)
	}
}

// TestProducerTime: a rule computes on the producer's time when messages
// carry one, so capture times compressed by replay jitter or batching do
// not change what it computes; time = "capture" (rule{} or Options.Time)
// computes on capture time. Trigger times are capture times either way.
func TestProducerTime(t *testing.T) {
	// 9 m/s² brake sampled every 10ms (producer time); every other sample
	// reached the recorder 8ms late (replay jitter, a descheduled
	// producer), so capture intervals alternate 18ms and 2ms
	speeds := ramp(20, 0, 0.09, 100, 300)
	capture := func(i int) int64 {
		c := at(time.Duration(i) * 10 * time.Millisecond)
		if i%2 == 0 {
			c += int64(8 * time.Millisecond)
		}
		return c
	}
	feed := func(r *Rule) {
		for i, v := range speeds {
			r.Feed(&Message{Topic: "vehicle/speed", TS: capture(i), GenTS: at(time.Duration(i) * 10 * time.Millisecond), Seq: uint64(i), Data: f32(v)})
		}
	}
	r, f := shipped(t, "hard_brake", nil)
	feed(r)
	if len(f.list) != 1 || !strings.HasPrefix(f.list[0].Tag, "9.0 m/s^2") {
		t.Fatalf("producer time: %+v, want one trigger tagged 9.0 m/s^2", f.list)
	}
	// the trigger time is the capture time of the first braking sample
	if f.list[0].TimeNs != capture(100) {
		t.Errorf("trigger at %d, want the capture time of sample 100, %d", f.list[0].TimeNs-base, capture(100)-base)
	}
	src, err := Shipped.ReadFile("rules/hard_brake.lua")
	if err != nil {
		t.Fatal(err)
	}
	rc, fc := load(t, strings.Replace(string(src), "rule {", "rule { time = 'capture',", 1), nil)
	feed(rc)
	if len(fc.list) != 1 || !strings.HasPrefix(fc.list[0].Tag, "45.0 m/s^2") {
		t.Errorf("capture time on jittered captures: %+v, want the deceleration over 2ms, 45 m/s^2", fc.list)
	}
	ro, err := LoadShipped("hard_brake", Options{Time: TimeCapture, OnTrigger: func(Trigger) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.Decl().Time != TimeCapture {
		t.Errorf("Options.Time capture: decl time %q", ro.Decl().Time)
	}
}
