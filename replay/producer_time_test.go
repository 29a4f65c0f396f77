package replay

import (
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/scripts"
)

// TestRulesTestAndLiveAgreeOnJitteredCaptures: a recording made from a
// replay (producer times exact, every 10 ms; capture times jittered, every
// other sample 8 ms late) gives the same hard_brake trigger — tag and time
// — in "rules test" (RunRules) and in a live recorder fed the same
// messages, and the tag is the recording's 8 m/s², not the 40 m/s² the
// jittered capture intervals (2 ms) would give.
func TestRulesTestAndLiveAgreeOnJitteredCaptures(t *testing.T) {
	msgs := speedDump(t0, 500, 8)
	for i := range msgs {
		msgs[i].gen = msgs[i].done - 1000 // exact 10 ms steps
		if i%2 == 0 {
			msgs[i].done += int64(8 * time.Millisecond)
		}
	}
	path := writeDump(t, "jittered.pack", msgs, nil)
	res, err := RunRules([]string{path}, []string{"builtin:hard_brake"}, RulesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Fired) != 1 {
		t.Fatalf("rules test fired %+v, want one trigger", res.Fired)
	}
	offline := res.Fired[0]

	vc := clock.NewVirtual(t0)
	rec, err := engine.New(engine.Config{CacheSize: 4 << 20, TopicBytes: 1 << 20, Clock: vc})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	id, err := rec.Discover(ingest.TopicInfo{Name: "vehicle/speed", Source: "api"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var live []scripts.Trigger
	r, err := scripts.LoadShipped("hard_brake", scripts.Options{OnTrigger: func(tr scripts.Trigger) {
		mu.Lock()
		live = append(live, tr)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := scripts.StartLive(rec, []*scripts.Rule{r}, scripts.LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, MaxLag: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// the live rule starts at the newest message of a topic it discovers:
	// feed steady samples before the recording until it sees them
	deadline := time.Now().Add(10 * time.Second)
	for warm := t0 - int64(time.Second); l.Status()[0].Messages == 0; warm += 1000 {
		if time.Now().After(deadline) {
			t.Fatal("the live rule never saw a sample")
		}
		rec.IngestAt(id, warm, warm, msgs[0].data)
		time.Sleep(time.Millisecond)
	}
	for _, m := range msgs {
		vc.Set(m.done)
		rec.IngestAt(id, m.done, m.gen, m.data)
	}
	for {
		mu.Lock()
		n := len(live)
		mu.Unlock()
		if n > 0 && l.Status()[0].Messages >= uint64(len(msgs)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(live) != 1 || live[0].Tag != offline.Tag || live[0].TimeNs != offline.TimeNs {
		t.Fatalf("live %+v, rules test %+v: want the same trigger", live, offline)
	}
	if offline.Tag[:3] != "8.0" {
		t.Errorf("tag %q, want the recording's 8.0 m/s^2", offline.Tag)
	}
}
