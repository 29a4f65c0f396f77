package fuzz

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/scripts"
)

var quietLog = slog.New(slog.DiscardHandler)

// fuzzFields are the accessors a fuzzed threshold or hard_brake reads.
var fuzzFields = []string{"u8", "i8", "u16le", "i16be", "u32le", "i32be", "u64le", "i64be", "f32le", "f32be", "f64le", "f64be"}

// FuzzRuleMessage feeds arbitrary bytes as messages to every shipped rule,
// with the field type and offset taken from the input too. A rule may
// reject a message (it is then disabled with a reason naming its file), but
// nothing may panic, and triggers carry the rule's name.
func FuzzRuleMessage(f *testing.F) {
	f.Add([]byte{0, 0, 0xa0, 0x41}, uint8(8), uint8(0), int64(10e6))
	f.Add([]byte{}, uint8(0), uint8(3), int64(0))
	f.Add([]byte{1, 'h', 'i', 0}, uint8(0), uint8(0), int64(-5))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0xc0, 0x7f}, uint8(10), uint8(1), int64(1e9))
	// a whole message of fuzzLayout: t, a, w[3], s = "hi", after
	f.Add([]byte{0, 0, 0x10, 0x5c, 0x74, 0xec, 0xec, 0x18, 5, 0, 1, 0xff, 0xfe, 0, 3, 2, 'h', 'i', 0, 0, 0xa0, 0x41}, uint8(1), uint8(0), int64(1e6))
	f.Fuzz(func(t *testing.T, data []byte, field, offset uint8, step int64) {
		params := map[string]map[string]string{
			"hard_brake":     {"topic": "t", "field": fuzzFields[int(field)%len(fuzzFields)], "offset": strconv.Itoa(int(offset % 16))},
			"threshold":      {"topic": "t", "field": fuzzFields[int(field)%len(fuzzFields)], "offset": strconv.Itoa(int(offset % 16)), "high": "1", "low": "0"},
			"heartbeat_loss": {"topic": "t", "timeout": "0.05", "tick": "10ms"},
			"rate_anomaly":   {"topic": "t", "window": "0.1", "min": "2", "max": "3"},
			"manual":         {"topic": "t", "offset": strconv.Itoa(int(offset % 4))},
		}
		for _, name := range scripts.ShippedNames() {
			r, err := scripts.LoadShipped(name, scripts.Options{Params: params[name], Logger: quietLog,
				OnTrigger: func(tr scripts.Trigger) {
					if tr.Rule != name {
						t.Errorf("%s: trigger from rule %q", name, tr.Rule)
					}
				}})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ts := int64(1_796_169_600_000_000_000)
			for i := 0; i <= len(data); i += 3 {
				r.Feed(&scripts.Message{Topic: "t", TS: ts, Seq: uint64(i), Data: data[i:]})
				ts += step%1e10 + 1e6
			}
			r.Tick(ts + 1e9)
			if st := r.Status(); st.Disabled && !strings.Contains(st.Why, "rules/"+name+".lua") {
				t.Errorf("%s disabled without naming its file: %q", name, st.Why)
			}
			r.Close()
		}
		// the same bytes as messages of a packed type, read by name (the
		// path param of threshold and hard_brake, m.x in a rule), and in
		// the event time the type's field holds
		typ := ingest.Packed("f.T", fuzzLayout)
		path := fuzzPaths[int(field)%len(fuzzPaths)]
		for _, src := range []string{"",
			"rule{name='ev', topics='t', time='event', event_time='t'}\nfunction on_message(m) local v = m.a + m:f('w[1]') .. m.s end"} {
			var r *scripts.Rule
			var err error
			if src == "" {
				r, err = scripts.LoadShipped("threshold", scripts.Options{Params: map[string]string{"topic": "t", "path": path, "high": "1"}, Logger: quietLog})
			} else {
				r, err = scripts.LoadSource("typed.lua", src, scripts.Options{Logger: quietLog})
			}
			if err != nil {
				t.Fatal(err)
			}
			ts := int64(1_796_169_600_000_000_000)
			for i := 0; i <= len(data); i += 5 {
				r.Feed(&scripts.Message{Topic: "t", TS: ts, Seq: uint64(i), Data: data[i:], Type: &typ})
				ts += step%1e10 + 1e6
			}
			if st := r.Status(); st.Disabled && !strings.Contains(st.Why, "topic t") && !strings.Contains(st.Why, "attempt to") {
				t.Errorf("typed rule disabled without naming the topic: %q", st.Why)
			}
			r.Close()
		}
	})
}

// fuzzLayout and fuzzPaths: the packed type FuzzRuleMessage reads by name.
const fuzzLayout = "u64le t (ns); u8 a; i16be w[3]; str8 s; f32le after"

var fuzzPaths = []string{"a", "w[0]", "w[2]", "t", "after", "s", "w[3]", "nope"}

// FuzzRuleSource loads arbitrary text as a rule file and, when it loads,
// runs it on a few messages, ticks and a dump notice. Errors must wrap a
// package sentinel and name the file; a loaded rule that fails is disabled
// with a reason; nothing panics and budgets hold.
func FuzzRuleSource(f *testing.F) {
	for _, name := range scripts.ShippedNames() {
		b, err := scripts.Shipped.ReadFile("rules/" + name + ".lua")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("rule{name='x', topics='**', tick='10ms'}\nfunction on_message(m) trigger{tag=m:str(0, m.size)} end\nfunction on_tick(t) log(t) end")
	f.Add("rule{name='x', topics='**'}\nfunction on_message(m) local s = 'x' while true do s = s .. s end end")
	f.Add("rule{")
	sentinels := []error{scripts.ErrSyntax, scripts.ErrDeclaration, scripts.ErrRuntime, scripts.ErrBudget, scripts.ErrTooLarge}
	f.Fuzz(func(t *testing.T, src string) {
		opts := scripts.Options{Logger: quietLog, Budget: scripts.Budget{Instructions: 20000, Memory: 4 << 20, MaxString: 64 << 10}}
		r, err := scripts.LoadSource("fuzz.lua", src, opts)
		if err != nil {
			if r != nil {
				t.Fatal("error with a rule")
			}
			known := false
			for _, s := range sentinels {
				known = known || errors.Is(err, s)
			}
			if !known || (!errors.Is(err, scripts.ErrTooLarge) && !strings.Contains(err.Error(), "fuzz.lua")) {
				t.Fatalf("error %q: want a package sentinel naming fuzz.lua", err)
			}
			return
		}
		defer r.Close()
		ts := int64(1e18)
		for i := range 4 {
			r.Feed(&scripts.Message{Topic: "a/b", TS: ts, Seq: uint64(i), Data: []byte(src[:min(len(src), 16)])})
			ts += 7e6
		}
		r.Tick(ts + 1e9)
		r.DumpFinished(scripts.DumpResult{Path: "/x", Reason: "r", TimeNs: ts + 2e9})
		if st := r.Status(); st.Disabled && st.Why == "" {
			t.Fatal("disabled without a reason")
		}
	})
}
