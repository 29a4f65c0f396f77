package scripts

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
)

func newLiveRecorder(t *testing.T, topicBytes int64) (*engine.Recorder, *clock.Virtual) {
	t.Helper()
	vc := clock.NewVirtual(base)
	rec, err := engine.New(engine.Config{Clock: vc, CacheSize: 4 << 20, TopicBytes: topicBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec, vc
}

// settle runs two empty requests through every rule goroutine: afterwards
// each has completed at least one full loop (topic discovery included).
func settle(l *Live) {
	for range 2 {
		for _, ru := range l.runners {
			ru.do(func() {})
		}
	}
}

// waitFor runs loop iterations of every rule until cond holds.
func waitFor(t *testing.T, l *Live, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, l.Status())
		}
		settle(l)
	}
}

func TestLiveHardBrake(t *testing.T) {
	rec, vc := newLiveRecorder(t, 64<<10)
	id, err := rec.Discover(ingest.TopicInfo{Name: "vehicle/speed", Source: "api"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Trigger, 16)
	r, err := LoadShipped("hard_brake", Options{Logger: quiet, OnTrigger: func(tr Trigger) { got <- tr }})
	if err != nil {
		t.Fatal(err)
	}
	// the whole stream is ingested before the rule reads: a lag that must
	// not make it skip
	l, err := StartLive(rec, []*Rule{r}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, MaxLag: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	settle(l)

	speeds := ramp(20, 0, 0.09, 300, 600)
	for i, v := range speeds {
		ts := at(time.Duration(i) * 10 * time.Millisecond)
		vc.Set(ts)
		if !rec.IngestAt(id, ts, ts-1000, f32(v)) {
			t.Fatal("ingest refused")
		}
	}
	select {
	case tr := <-got:
		if tr.TimeNs != at(3*time.Second) || tr.Rule != "hard_brake" {
			t.Errorf("trigger %+v", tr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no trigger: %+v", l.Status())
	}
	waitFor(t, l, "all messages", func() bool { return l.Status()[0].Messages == uint64(len(speeds)) })
	st := l.Status()[0]
	if st.TriggersFired != 1 || st.Skipped != 0 || st.Disabled {
		t.Errorf("status %+v", st)
	}
	if st.LagNs != 0 {
		t.Errorf("lag %d ns with the clock at the last message", st.LagNs)
	}
}

func TestLiveTopicsMergeAndDiscovery(t *testing.T) {
	rec, vc := newLiveRecorder(t, 64<<10)
	a, _ := rec.Discover(ingest.TopicInfo{Name: "s/a"})
	r, _ := load(t, `rule{name='order', topics='s/*'}
seen = {}
function on_message(m) seen[#seen+1] = m.topic .. '#' .. m.seq end`, nil)
	l, err := StartLive(rec, []*Rule{r}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ru := l.runners[0]
	settle(l)
	b, _ := rec.Discover(ingest.TopicInfo{Name: "s/b"})
	rec.Discover(ingest.TopicInfo{Name: "other"})
	waitFor(t, l, "the new topic's reader", func() bool {
		n := 0
		ru.do(func() { n = len(ru.readers) })
		return n == 2
	})
	// ingest b's messages first: the rule still sees capture-time order
	// among the messages there when it reads. They are ingested on the
	// rule's goroutine (do), so it cannot read between two of them (under
	// -race on a loaded machine it read b's first alone: s/b#0,s/a#0,...).
	ru.do(func() {
		for _, x := range []struct {
			id ingest.TopicID
			ms int
		}{{b, 2}, {b, 4}, {a, 1}, {a, 3}, {a, 5}} {
			rec.IngestAt(x.id, at(time.Duration(x.ms)*time.Millisecond), 0, []byte{1})
		}
	})
	vc.Set(at(5 * time.Millisecond))
	waitFor(t, l, "5 messages", func() bool { return l.Status()[0].Messages == 5 })
	var seen string
	ru.do(func() { seen = luaList(ru.rule, "seen") })
	if seen != "s/a#0,s/b#0,s/a#1,s/b#1,s/a#2" {
		t.Errorf("order %s", seen)
	}
}

func TestLiveSlowRuleSkips(t *testing.T) {
	rec, vc := newLiveRecorder(t, 4096)
	id, _ := rec.Discover(ingest.TopicInfo{Name: "fast"})
	r, _ := load(t, `rule{name='slow', topics='fast'}
function on_message(m) local x = 0 for i = 1, 20000 do x = x + i end end`, nil)
	l, err := StartLive(rec, []*Rule{r}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, MaxLag: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	settle(l)
	const n = 20000
	payload := make([]byte, 64)
	for i := range n {
		ts := at(time.Duration(i) * time.Millisecond)
		vc.Set(ts)
		rec.IngestAt(id, ts, 0, payload)
	}
	// one more message far later: the rule skips to it when lagging
	last := at(n * time.Millisecond)
	vc.Set(last)
	rec.IngestAt(id, last, 0, payload)
	waitFor(t, l, "every message delivered or skipped", func() bool {
		st := l.Status()[0]
		return st.Messages+st.Skipped == n+1
	})
	st := l.Status()[0]
	if st.Skipped == 0 || st.Disabled {
		t.Errorf("a slow rule on a small ring skipped nothing: %+v", st)
	}
}

func TestLiveReloadAndDump(t *testing.T) {
	rec, vc := newLiveRecorder(t, 64<<10)
	id, _ := rec.Discover(ingest.TopicInfo{Name: "x"})
	got := make(chan Trigger, 16)
	r, err := LoadSource("t.lua", "rule{name='r', topics='x'}\nfunction on_message(m) trigger{reason='v1'} end\nfunction on_dump_finished(d) trigger{reason=d.path} end",
		Options{Logger: quiet, OnTrigger: func(tr Trigger) { got <- tr }})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := StartLive(rec, []*Rule{r}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond})
	defer l.Close()
	settle(l)
	if err := l.ReloadSource("r", "rule{name='r', topics='x'"); err == nil || !strings.Contains(err.Error(), "old version keeps running") {
		t.Errorf("broken reload: %v", err)
	}
	rec.IngestAt(id, at(0), 0, nil)
	if tr := <-got; tr.Reason != "v1" {
		t.Errorf("old version: %+v", tr)
	}
	l.DumpFinished(DumpResult{Path: "/d/1.mcap", TimeNs: at(500 * time.Millisecond)})
	if tr := <-got; tr.Reason != "/d/1.mcap" || tr.TimeNs != at(500*time.Millisecond) {
		t.Errorf("on_dump_finished: %+v", tr)
	}
	if err := l.ReloadSource("r", "rule{name='r', topics='x'}\nfunction on_message(m) trigger{reason='v2'} end"); err != nil {
		t.Fatal(err)
	}
	vc.Set(at(time.Second))
	rec.IngestAt(id, at(time.Second), 0, nil)
	if tr := <-got; tr.Reason != "v2" {
		t.Errorf("new version: %+v", tr)
	}
	if st := l.Status()[0]; st.Reloads != 1 || st.TriggersFired != 3 {
		t.Errorf("status %+v", st)
	}
	if err := l.Reload("nope"); err == nil {
		t.Error("reload of an unknown rule")
	}
	l.Close()
	if err := l.ReloadSource("r", ""); err == nil {
		t.Error("reload after Close")
	}
}

// TestLiveRunawayRulesDoNotStopIngest: a runaway loop and a memory bomb
// are disabled within their budgets, off the ingest path; ingest never
// waits for them and a healthy rule on the same topic keeps firing.
func TestLiveRunawayRulesDoNotStopIngest(t *testing.T) {
	rec, vc := newLiveRecorder(t, 64<<10)
	id, _ := rec.Discover(ingest.TopicInfo{Name: "x"})
	got := make(chan Trigger, 64)
	mk := func(name, body string) *Rule {
		r, err := LoadSource(name+".lua", "rule{name='"+name+"', topics='x'}\nfunction on_message(m) "+body+" end",
			Options{Logger: quiet, OnTrigger: func(tr Trigger) { got <- tr }})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rules := []*Rule{
		mk("loop", "while true do end"),
		mk("bomb", "local t, s = {}, string.rep('x', 1000000) while true do t[#t+1] = s .. s end"),
		mk("ok", "trigger{}"),
	}
	l, err := StartLive(rec, rules, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, MaxLag: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	settle(l)
	for i := range 10 {
		ts := at(time.Duration(i) * time.Second)
		vc.Set(ts)
		if !rec.IngestAt(id, ts, 0, []byte{1}) {
			t.Fatal("ingest refused")
		}
	}
	for i := range 10 {
		select {
		case tr := <-got:
			if tr.Rule != "ok" {
				t.Errorf("trigger from %s", tr.Rule)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("healthy rule fired %d of 10: %+v", i, l.Status())
		}
	}
	waitFor(t, l, "both bad rules disabled", func() bool {
		st := l.Status()
		return st[0].Disabled && st[1].Disabled
	})
	st := l.Status()
	if !strings.Contains(st[0].Why, "loop.lua:2: instruction budget exhausted") || !strings.Contains(st[1].Why, "bomb.lua:2:") || st[2].Disabled {
		t.Errorf("status %+v", st)
	}
	if c := rec.Topics()[0].Counters; c.Written != 10 {
		t.Errorf("ingest wrote %d of 10", c.Written)
	}
}

// TestLiveFieldsByName: the live recorder hands rules each topic's type:
// hard_brake with path=speed reads a packed topic by name, and after the
// producer restarts with another layout (speed moved behind a new field)
// it reads the new one.
func TestLiveFieldsByName(t *testing.T) {
	rec, vc := newLiveRecorder(t, 256<<10)
	a := ingest.Packed("demo.Speed", "f32le speed (m/s)")
	id, err := rec.Discover(ingest.TopicInfo{Name: "vehicle/speed", Source: "api", Type: a})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Trigger, 16)
	r, err := LoadShipped("hard_brake", Options{Logger: quiet, Params: map[string]string{"path": "speed"}, OnTrigger: func(tr Trigger) { got <- tr }})
	if err != nil {
		t.Fatal(err)
	}
	l, err := StartLive(rec, []*Rule{r}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, MaxLag: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	settle(l)
	ingestAll := func(from int, speeds []float64, enc func(float64) []byte) {
		for i, v := range speeds {
			ts := at(time.Duration(from+i) * 10 * time.Millisecond)
			vc.Set(ts)
			if !rec.IngestAt(id, ts, ts-1000, enc(v)) {
				t.Fatal("ingest refused")
			}
		}
	}
	speeds := ramp(20, 0, 0.09, 300, 600)
	ingestAll(0, speeds, f32)
	wait := func(want time.Duration) {
		t.Helper()
		select {
		case tr := <-got:
			if tr.TimeNs != at(want) {
				t.Errorf("trigger at %v, want %v", time.Duration(tr.TimeNs-base), want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no trigger: %+v", l.Status())
		}
	}
	wait(3 * time.Second)
	waitFor(t, l, "all messages", func() bool { return l.Status()[0].Messages == uint64(len(speeds)) })
	// the producer restarts: u32 counter first, the speed as f64 after it
	if _, err := rec.Discover(ingest.TopicInfo{Name: "vehicle/speed", Source: "api", Type: ingest.Packed("demo.Speed", "u32le n; f64le speed (m/s)")}); err != nil {
		t.Fatal(err)
	}
	// the rule's topic poll sees the new type before its first message
	waitFor(t, l, "the new type", func() bool {
		var seen bool
		l.runners[0].do(func() { seen = len(l.runners[0].readers) == 1 && l.runners[0].readers[0].changes == 1 })
		return seen
	})
	speeds2 := ramp(20, 0, 0.09, 300, 600)
	ingestAll(len(speeds)+1000, speeds2, func(v float64) []byte {
		b := binary.LittleEndian.AppendUint32(nil, 7)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	})
	wait(time.Duration(len(speeds)+1000)*10*time.Millisecond + 3*time.Second)
	waitFor(t, l, "all messages", func() bool { return l.Status()[0].Messages == uint64(len(speeds)+len(speeds2)) })
	if st := l.Status()[0]; st.TriggersFired != 2 || st.Disabled {
		t.Errorf("status %+v", st)
	}
}

// TestLiveNewTopicFromItsFirstMessage: a topic there when the rule starts
// (or reloads) is read from its newest message on, its past never seen; a
// topic that appears while the rule runs (a DBC message's topic, created
// at its first frame) is read from its first message, whenever the next
// topic poll finds it.
func TestLiveNewTopicFromItsFirstMessage(t *testing.T) {
	rec, vc := newLiveRecorder(t, 64<<10)
	old, _ := rec.Discover(ingest.TopicInfo{Name: "c/old"})
	rec.IngestAt(old, at(0), 0, []byte{1}) // before the rule: never seen
	r, _ := load(t, `rule{name='first', topics='c/*'}
seen = {}
function on_message(m) seen[#seen+1] = m.topic .. '#' .. m.seq end`, nil)
	l, err := StartLive(rec, []*Rule{r}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ru := l.runners[0]
	settle(l) // the first poll: c/old from its newest message on
	nw, _ := rec.Discover(ingest.TopicInfo{Name: "c/new"})
	vc.Set(at(2 * time.Millisecond))
	rec.IngestAt(nw, at(time.Millisecond), 0, []byte{1})
	rec.IngestAt(nw, at(2*time.Millisecond), 0, []byte{2})
	ru.do(ru.discover) // the next topic poll, after the topic's first messages
	rec.IngestAt(old, at(3*time.Millisecond), 0, []byte{3})
	waitFor(t, l, "3 messages", func() bool { return l.Status()[0].Messages == 3 })
	var seen string
	ru.do(func() { seen = luaList(ru.rule, "seen") })
	if seen != "c/new#0,c/new#1,c/old#1" {
		t.Errorf("seen %s, want the new topic from its first message, the old one from after the start", seen)
	}
	// After a reload, the topics there are the past again: a topic the new
	// version matches is read from its newest message on.
	other, _ := rec.Discover(ingest.TopicInfo{Name: "d/x"})
	rec.IngestAt(other, at(4*time.Millisecond), 0, []byte{4})
	if err := l.ReloadSource("first", `rule{name='first', topics='d/*'}
seen = {}
function on_message(m) seen[#seen+1] = m.topic .. '#' .. m.seq end`); err != nil {
		t.Fatal(err)
	}
	ru.do(ru.discover)
	rec.IngestAt(other, at(5*time.Millisecond), 0, []byte{5})
	waitFor(t, l, "the message after the reload", func() bool { return l.Status()[0].Messages == 4 }) // the counters go on
	ru.do(func() { seen = luaList(ru.rule, "seen") })
	if seen != "d/x#1" {
		t.Errorf("after the reload: seen %s, want d/x#1 only", seen)
	}
}

// TestLiveRulesShareOneGoroutine: the rules of a Live take turns on one
// goroutine (one poll timer for all, not one per rule); a rule stuck in a
// callback is moved to a goroutine of its own within about twice Detach,
// and the other rules, which waited behind it until then, deliver every
// message after it.
func TestLiveRulesShareOneGoroutine(t *testing.T) {
	rec, vc := newLiveRecorder(t, 64<<10)
	id, _ := rec.Discover(ingest.TopicInfo{Name: "x"})
	got := make(chan Trigger, 64)
	logger, logged := captureLog()
	mk := func(name, body string, budget int64) *Rule {
		r, err := LoadSource(name+".lua", "rule{name='"+name+"', topics='x'}\nfunction on_message(m) "+body+" end",
			Options{Logger: logger, OnTrigger: func(tr Trigger) { got <- tr }, Budget: Budget{Instructions: budget}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var rules []*Rule
	for i := range 4 {
		rules = append(rules, mk(fmt.Sprintf("ok%d", i), "trigger{}", 0))
	}
	stuck := mk("stuck", "if m.seq >= 3 then while true do end end", 1<<60)
	rules = append(rules[:2], append([]*Rule{stuck}, rules[2:]...)...)
	l, err := StartLive(rec, rules, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, MaxLag: time.Hour,
		Detach: 20 * time.Millisecond, ControlWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	settle(l)
	if n := drivers(l); n != 1 {
		t.Errorf("5 rules run on %d goroutines, want 1", n)
	}
	const msgs = 10
	for i := range msgs {
		ts := at(time.Duration(i) * time.Second)
		vc.Set(ts)
		rec.IngestAt(id, ts, 0, []byte{1})
	}
	fired := map[string]int{}
	for range 4 * msgs {
		select {
		case tr := <-got:
			fired[tr.Rule]++
		case <-time.After(20 * time.Second):
			t.Fatalf("the rules beside a stuck one fired %v of %d each: %+v", fired, msgs, l.Status())
		}
	}
	for i := range 4 {
		if n := fired[fmt.Sprintf("ok%d", i)]; n != msgs {
			t.Errorf("ok%d fired %d of %d", i, n, msgs)
		}
	}
	if st := l.Status()[2]; !strings.Contains(st.Name, "stuck") || st.Messages != 3 {
		t.Errorf("stuck rule %+v", st)
	}
	if n := drivers(l); n != 2 {
		t.Errorf("after the stuck rule moved off: %d goroutines, want 2", n)
	}
	if log := logged(); !strings.Contains(log, `msg="rule slow: one turn of its callbacks took over 20ms; moved to a goroutine of its own" rule=stuck`) {
		t.Errorf("log:\n%s", log)
	}
	// the others still take reloads and dump notices
	if err := l.ReloadSource("ok0", "rule{name='ok0', topics='x'}\nfunction on_message(m) end"); err != nil {
		t.Errorf("reload beside a stuck rule: %v", err)
	}
}

// captureLog returns a logger and a function returning what it logged so
// far (safe while rules log from their goroutines).
func captureLog() (*slog.Logger, func() string) {
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	return logger, func() string {
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestLiveControlBehindAStuckRule: a reload and a dump notice for a rule
// waiting for its turn behind a stuck one are carried out once the stuck
// rule is moved off, within ControlWait.
func TestLiveControlBehindAStuckRule(t *testing.T) {
	rec, _ := newLiveRecorder(t, 64<<10)
	id, _ := rec.Discover(ingest.TopicInfo{Name: "x"})
	got := make(chan Trigger, 16)
	stuck, err := LoadSource("stuck.lua", "rule{name='stuck', topics='x'}\nfunction on_message(m) while true do end end",
		Options{Logger: quiet, Budget: Budget{Instructions: 1 << 60}})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := LoadSource("ok.lua", "rule{name='ok', topics='x'}\nfunction on_dump_finished(d) trigger{reason=d.path} end",
		Options{Logger: quiet, OnTrigger: func(tr Trigger) { got <- tr }})
	if err != nil {
		t.Fatal(err)
	}
	l, err := StartLive(rec, []*Rule{ok, stuck}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond,
		Detach: 200 * time.Millisecond, ControlWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	settle(l)
	rec.IngestAt(id, at(0), 0, nil)
	for deadline := time.Now().Add(20 * time.Second); l.Status()[1].CallNs == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the rule is not stuck: %+v", l.Status())
		}
	}
	// queued for the first rule while the goroutine they share is stuck in
	// the second's callback; the stuck rule misses it (ControlWait)
	l.DumpFinished(DumpResult{Path: "/d/1.pack"})
	select {
	case tr := <-got:
		if tr.Reason != "/d/1.pack" {
			t.Errorf("trigger %+v", tr)
		}
	default:
		t.Errorf("on_dump_finished not delivered to the rule behind the stuck one: %+v", l.Status())
	}
	if err := l.ReloadSource("ok", "rule{name='ok', topics='x'}\nfunction on_message(m) end"); err != nil {
		t.Errorf("reload behind a stuck rule: %v", err)
	}
	if st := l.Status(); st[1].Errors != 1 || st[0].Reloads != 1 {
		t.Errorf("status %+v", st)
	}
}

// TestLiveLaggingRuleMovesOff: rules sharing a goroutine that fall over
// MaxLag/4 behind the recorder (together they need more than one
// goroutine) are moved to goroutines of their own, one at a time, until
// one is left on the shared one.
func TestLiveLaggingRuleMovesOff(t *testing.T) {
	rec, vc := newLiveRecorder(t, 1<<20)
	id, _ := rec.Discover(ingest.TopicInfo{Name: "x"})
	logger, logged := captureLog()
	var rules []*Rule
	for _, name := range []string{"a", "b", "c"} {
		r, err := LoadSource(name+".lua", "rule{name='"+name+"', topics='x'}\nfunction on_message(m) end", Options{Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	l, err := StartLive(rec, rules, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, MaxLag: 4 * time.Second, Detach: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	settle(l)
	const n = 2000
	for i := range n {
		rec.IngestAt(id, at(time.Duration(i)*time.Millisecond), 0, []byte{1})
	}
	vc.Set(at(3 * time.Second)) // the messages' first batch is 2.7 s behind: over MaxLag/4
	waitFor(t, l, "every message delivered", func() bool {
		for _, st := range l.Status() {
			if st.Messages != n {
				return false
			}
		}
		return true
	})
	if g := drivers(l); g != 3 {
		t.Errorf("%d goroutines for 3 lagging rules, want 3", g)
	}
	log := logged()
	if c := strings.Count(log, `msg="rule slow: it lags over 1s behind the recorder; moved to a goroutine of its own"`); c != 2 {
		t.Errorf("%d rules moved off, want 2:\n%s", c, log)
	}
}

// drivers counts the goroutines running l's rules.
func drivers(l *Live) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[*driver]bool{}
	for _, ru := range l.runners {
		seen[ru.owner] = true
	}
	return len(seen)
}

// TestLiveCloseBehindAStuckRule: at stop, a rule still waiting for its
// turn behind one stuck in a Go function (not yet moved off) is
// abandoned with it, and the log says which is which.
func TestLiveCloseBehindAStuckRule(t *testing.T) {
	rec, _ := newLiveRecorder(t, 64<<10)
	id, _ := rec.Discover(ingest.TopicInfo{Name: "x"})
	logger, logged := captureLog()
	release := make(chan struct{})
	gostuck, err := LoadSource("go.lua", "rule{name='go', topics='x'}\nfunction on_message(m) block() end", Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	gostuck.L.SetGlobal("block", gostuck.L.NewFunction(func(*lua.LState) int { <-release; return 0 }))
	behind, err := LoadSource("behind.lua", "rule{name='behind', topics='x'}\nfunction on_message(m) end", Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := StartLive(rec, []*Rule{gostuck, behind}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, Detach: time.Hour})
	defer func() { close(release); l.wg.Wait() }()
	settle(l)
	rec.IngestAt(id, at(0), 0, nil)
	for deadline := time.Now().Add(20 * time.Second); l.Status()[0].CallNs == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the rule is not stuck: %+v", l.Status())
		}
	}
	if l.CloseWithin(50 * time.Millisecond) {
		t.Error("CloseWithin reported every rule stopped while one is stuck in Go")
	}
	log := logged()
	for _, want := range []string{`msg="rule stuck in a callback at stop; abandoned" rule=go`, `msg="rule waiting behind a rule stuck in a callback at stop; abandoned" rule=behind`} {
		if !strings.Contains(log, want) {
			t.Errorf("log has no %s:\n%s", want, log)
		}
	}
}
