package dump

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// TestTriggerPostZero: a trigger's post of zero is a zero window (not the
// recorder's 5s): the dump is due at once and holds nothing after T; the
// record says the trigger set it, and the window it selected.
func TestTriggerPostZero(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(100 * time.Millisecond), Post: new(5 * time.Second), Guard: new(time.Duration(0))}})
	ids := discover(t, r, "a")
	feed(r, vc, ids, t0, t0+1000*ms, 10*ms)
	T := t0 + 500*ms
	id, err := r.Trigger(TriggerParams{Reason: "zero-post", TimeNs: T, Post: new(time.Duration(0))})
	if err != nil {
		t.Fatal(err)
	}
	res := wait(t, r, id) // due at T: no clock advance needed
	msgs, info := readDump(t, res.Path)
	if len(msgs) != 11 || msgs[len(msgs)-1].ns != T || msgs[0].ns != T-100*ms {
		t.Fatalf("dump holds %d messages %v..%v, want the 11 of [T-100ms, T]", len(msgs), msgs[0].ns-T, msgs[len(msgs)-1].ns-T)
	}
	tr := info.Triggers[0]
	if !tr.PostSet || tr.PostNs != 0 || tr.PreSet || tr.FromNs != T-100*ms || tr.ToNs != T {
		t.Errorf("trigger record %+v, want post set to 0 and the window [T-100ms, T]", tr)
	}
	if a := info.Topics[0]; a.WindowFromNs != T-100*ms || a.WindowToNs != T || a.StartShort != "" || a.EndShort != "" {
		t.Errorf("topic account %+v, want the window [T-100ms, T] held whole", a)
	}
}

// TestTriggerAtLast: a trigger anchored at the last message, asked long
// after the producer went silent, holds the producer's last window; one at
// now holds nothing.
func TestTriggerAtLast(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(200 * time.Millisecond), Post: new(100 * time.Millisecond), Guard: new(time.Duration(0))},
		Dump: Config{Policy: PolicySeparate}})
	ids := discover(t, r, "a", "b")
	feed(r, vc, ids, t0, t0+1000*ms, 10*ms)
	last := t0 + 1000*ms
	asked := vc.Advance(15 * time.Second)
	now, err := r.Trigger(TriggerParams{Reason: "now"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := r.Trigger(TriggerParams{Reason: "last", At: dumpinfo.AtLast, Topics: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	vc.Advance(time.Second)
	if res := wait(t, r, now); res.Messages != 0 {
		t.Errorf("the dump at now holds %d messages, want 0 (the producer is silent)", res.Messages)
	}
	res := wait(t, r, at)
	msgs, info := readDump(t, res.Path)
	if len(msgs) != 21 || msgs[0].ns != last-200*ms || msgs[len(msgs)-1].ns != last {
		t.Fatalf("the dump at the last message holds %d messages, want the 21 of a's last 200ms", len(msgs))
	}
	tr := info.Triggers[0]
	if tr.At != dumpinfo.AtLast || tr.TimeNs != last || tr.RequestedNs != asked || tr.FromNs != last-200*ms || tr.ToNs != last+100*ms {
		t.Errorf("trigger record %+v, want at=last, time %d, asked at %d", tr, last, asked)
	}
	if _, err := r.Trigger(TriggerParams{Reason: "x", At: dumpinfo.AtLast, Topics: []string{"nothing/*"}}); !errors.Is(err, ErrNoTopics) {
		t.Errorf("at last on no topic: %v, want ErrNoTopics", err)
	}
	if _, err := r.Trigger(TriggerParams{Reason: "x", At: "soon"}); err == nil {
		t.Error(`At "soon" accepted`)
	}
}

// TestManualRateLimitApart: rules that spend their budget never eat an
// operator's trigger; operators have their own limit, and a refusal says
// whose limit it hit and is counted apart.
func TestManualRateLimitApart(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(10 * time.Millisecond), Post: new(time.Millisecond), Guard: new(time.Duration(0))},
		Dump: Config{Policy: PolicySeparate, MaxPerMinute: 2, MaxManualPerMinute: 1}})
	ids := discover(t, r, "a")
	feed(r, vc, ids, t0, t0+100*ms, 10*ms)
	for i := range 3 {
		_, err := r.Trigger(TriggerParams{Reason: "rule", Source: dumpinfo.SourceLua, Rule: "r"})
		if want := i == 2; errors.Is(err, ErrRateLimited) != want {
			t.Fatalf("rule trigger %d: %v", i, err)
		}
	}
	if _, err := r.Trigger(TriggerParams{Reason: "operator", Source: dumpinfo.SourceCommand}); err != nil {
		t.Fatalf("the operator's trigger was refused after the rules spent their budget: %v", err)
	}
	_, err := r.Trigger(TriggerParams{Reason: "again", Source: dumpinfo.SourceSignal})
	if !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), "manual") || !strings.Contains(err.Error(), "signal") {
		t.Fatalf("second manual trigger: %v, want ErrRateLimited naming the manual limit", err)
	}
	if s := r.Status(); s.TriggersRateLimited != 1 || s.ManualRateLimited != 1 {
		t.Errorf("status: rules rate-limited %d, manual %d; want 1 and 1", s.TriggersRateLimited, s.ManualRateLimited)
	}
}

// TestMergedTriggersKeepTheirWindows: a trigger merged into a waiting dump
// is recorded with its own source and window; the result lists both.
func TestMergedTriggersKeepTheirWindows(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(100 * time.Millisecond), Post: new(100 * time.Millisecond), Guard: new(time.Duration(0))}})
	ids := discover(t, r, "a")
	// the clock stops before the first trigger's post window ends, so its
	// dump is still waiting when the second trigger joins it
	feed(r, vc, ids, t0, t0+350*ms, 10*ms)
	first, err := r.Trigger(TriggerParams{Reason: "brake", Source: dumpinfo.SourceLua, Rule: "hard_brake", TimeNs: t0 + 300*ms})
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Trigger(TriggerParams{Reason: "operator", Source: dumpinfo.SourceCommand, TimeNs: t0 + 350*ms, Pre: new(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	feed(r, vc, ids, t0+360*ms, t0+600*ms, 10*ms)
	res := wait(t, r, second)
	if len(res.Triggers) != 2 || res.Triggers[0] != first || len(res.Records) != 2 {
		t.Fatalf("result %+v, want both triggers, the first first", res)
	}
	a, b := res.Records[0], res.Records[1]
	if a.Source != dumpinfo.SourceLua || a.FromNs != t0+200*ms || a.ToNs != t0+400*ms ||
		b.Source != dumpinfo.SourceCommand || b.FromNs != t0+150*ms || b.ToNs != t0+450*ms || !b.PreSet {
		t.Errorf("records %+v / %+v, want each with its own source and window", a, b)
	}
	if res.StartNs != t0+150*ms || res.EndNs != t0+450*ms {
		t.Errorf("dump window %d..%d, want the union", res.StartNs-t0, res.EndNs-t0)
	}
}

// TestHooksHearFailures: a refused (low disk) and an abandoned (stopped)
// dump reach the hooks with their status and error.
func TestHooksHearFailures(t *testing.T) {
	var mu sync.Mutex
	var got []Result
	hook := HookFunc(func(res Result) { mu.Lock(); got = append(got, res); mu.Unlock() })
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(10 * time.Millisecond), Post: new(time.Millisecond), Guard: new(time.Duration(0))},
		Dump: Config{MinFreeDisk: 1 << 62, Hooks: []Hook{hook}}})
	ids := discover(t, r, "a")
	feed(r, vc, ids, t0, t0+100*ms, 10*ms)
	id, err := r.Trigger(TriggerParams{Reason: "refused"})
	if err != nil {
		t.Fatal(err)
	}
	vc.Advance(time.Second)
	if res := wait(t, r, id); res.Status != StatusRefused || !errors.Is(res.Err, ErrDiskLow) {
		t.Fatalf("result %+v, want refused", res)
	}
	r.Dumper.Stop() // hooks have run for every queued result
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Status != StatusRefused || got[0].Err == nil || got[0].Reasons[0] != "refused" {
		t.Fatalf("hooks got %+v, want the refused dump", got)
	}
}

// TestShortCauses: each topic's account says why it holds less than the
// window asked, when the recorder knows.
func TestShortCauses(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(300 * time.Millisecond), Guard: new(time.Duration(0)),
		Topics: []engine.TopicOverride{{Match: "small", MaxBytes: 4096}}}})
	ids := discover(t, r, "full", "small", "leaves")
	feed(r, vc, ids, t0, t0+1000*ms, 10*ms)
	late, err := r.Discover(ingest.TopicInfo{Name: "late"}) // discovered after the window began
	if err != nil {
		t.Fatal(err)
	}
	r.Ingest(late, vc.Now()-1, []byte("late@1000"))
	T := t0 + 1000*ms
	id, err := r.Trigger(TriggerParams{Reason: "short", TimeNs: T})
	if err != nil {
		t.Fatal(err)
	}
	delete(ids, "leaves")
	feed(r, vc, ids, T+10*ms, T+100*ms, 10*ms)
	r.Offline(discover(t, r, "leaves")["leaves"]) // rediscovered: the same id
	feed(r, vc, ids, T+110*ms, T+300*ms, 10*ms)
	vc.Set(T + 400*ms)
	res := wait(t, r, id)
	_, info := readDump(t, res.Path)
	want := map[string][2]string{
		"full":   {"", ""},
		"small":  {dumpinfo.ShortOverwritten, ""},
		"late":   {dumpinfo.ShortNotRecorded, ""},
		"leaves": {"", dumpinfo.ShortOffline},
	}
	for _, a := range info.Topics {
		w := want[strings.TrimSuffix(a.Topic, "#")]
		if a.StartShort != w[0] || a.EndShort != w[1] || a.WindowFromNs != T-1000*ms || a.WindowToNs != T+300*ms {
			t.Errorf("%s: window %d..%d held %d..%d, short %q/%q; want %q/%q", a.Topic, a.WindowFromNs-T, a.WindowToNs-T,
				a.FirstNs-T, a.LastNs-T, a.StartShort, a.EndShort, w[0], w[1])
		}
	}

	// stopped before the post window passed
	id, err = r.Trigger(TriggerParams{Reason: "stopped", TimeNs: vc.Now(), Topics: []string{"full"}})
	if err != nil {
		t.Fatal(err)
	}
	r.Dumper.Stop()
	res = wait(t, r, id)
	if _, info := readDump(t, res.Path); info.Topics[0].EndShort != dumpinfo.ShortStopped {
		t.Errorf("stopped dump: %+v, want end short %q", info.Topics[0], dumpinfo.ShortStopped)
	}
}

// TestTriggerAtLastFromARule: a rule's trigger at the last message records
// the rule's message time as when it was asked.
func TestTriggerAtLastFromARule(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(100 * time.Millisecond), Post: new(time.Duration(0)), Guard: new(time.Duration(0))}})
	ids := discover(t, r, "a")
	feed(r, vc, ids, t0, t0+500*ms, 10*ms)
	ruleTime := t0 + 2000*ms
	vc.Set(t0 + 2100*ms)
	id, err := r.Trigger(TriggerParams{Reason: "silent", Source: dumpinfo.SourceLua, Rule: "hb", TimeNs: ruleTime, At: dumpinfo.AtLast})
	if err != nil {
		t.Fatal(err)
	}
	res := wait(t, r, id)
	if tr := res.Records[0]; tr.TimeNs != t0+500*ms || tr.RequestedNs != ruleTime || res.Messages != 11 {
		t.Errorf("record %+v with %d messages, want anchored at the last message, asked at the rule's time", tr, res.Messages)
	}
	now, err := r.Trigger(TriggerParams{Reason: "now", TimeNs: t0 + 400*ms})
	if err != nil {
		t.Fatal(err)
	}
	if tr := wait(t, r, now).Records[0]; tr.RequestedNs != 0 || tr.At != "" {
		t.Errorf("a trigger at a given time records %+v, want no RequestedNs", tr)
	}
}

// TestFrameSizeWithinReadersLimit (issue #31, item 4): a frame size over
// pack.MaxTargetFrameSize is refused by the configuration check, where the
// dump's frames would otherwise be refused by the pack writer (over the
// readers' default memory limit) when the dump is written.
func TestFrameSizeWithinReadersLimit(t *testing.T) {
	for _, tc := range []struct {
		size int
		ok   bool
	}{{1 << 20, true}, {pack.MaxTargetFrameSize, true}, {pack.MaxTargetFrameSize + 1, false}, {1 << 30, false}} {
		err := Config{Dir: t.TempDir(), FrameSize: tc.size}.Validate()
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "MaxTargetFrameSize")) {
			t.Errorf("FrameSize %d: %v", tc.size, err)
		}
	}
}
