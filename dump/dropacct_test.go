package dump

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/pack"
)

// TestDumpDropsPerWindow: a dump's Oversize, SkippedBusy and LostAtSource
// (losses a source reports through Sink.Lost) count exactly the drops whose capture time falls in the topic's dumped window
// [T-pre, T+post] (edges included): not those before it, not those after
// it, not the running totals (which Status keeps).
func TestDumpDropsPerWindow(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var dumps atomic.Int32
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(50 * time.Millisecond), Post: new(10 * time.Millisecond), Guard: new(time.Duration(0)), BusySkipData: true, Topics: []engine.TopicOverride{{Match: "a", MaxPacket: 16}}}, Dump: Config{NewWriter: func(path string, o WriterOptions) (Writer, error) {
		w, err := NewPackMmapWriter(path, o)
		if dumps.Add(1) == 1 { // hold the first dump open
			return gateWriter{w, entered, release, &sync.Once{}}, err
		}
		return w, err
	}}})
	ids := discover(t, r, "a", "b")
	a := ids["a"]
	big := make([]byte, 17)
	at := func(ms_ int64, p []byte) bool { return r.IngestAt(a, t0+ms_*ms, t0+ms_*ms-1, p) }
	vc.Set(t0 + 100*ms)
	// Capture times passed explicitly (the clock stays before the first
	// dump is due), in time order: stored messages every 10 ms, oversize
	// drops at 5, 5 (before the window), 50 and 110 (its edges), 55
	// (inside), 115, 115, 115 (after it).
	oversize := map[int64]int{5: 2, 50: 1, 55: 1, 110: 1, 115: 3}
	// The source reports 3 lost at 40 ms (before the window), 4 at 60
	// (inside), 5 at 120 (after it).
	srcLost := map[int64]uint64{40: 3, 60: 4, 120: 5}
	for ms_ := int64(0); ms_ <= 130; ms_ += 5 {
		r.Lost(a, t0+ms_*ms, srcLost[ms_])
		for range oversize[ms_] {
			if at(ms_, big) {
				t.Fatalf("a %d-byte message over MaxPacket 16 was stored", len(big))
			}
		}
		if ms_%10 == 0 && !at(ms_, []byte("a")) {
			t.Fatalf("message at %d ms rejected", ms_)
		}
	}
	// Dump 1 at T=100 ms: window [50, 110] ms.
	id1, err := r.Trigger(TriggerParams{Reason: "one"})
	if err != nil {
		t.Fatal(err)
	}
	vc.Set(t0 + 200*ms)
	<-entered
	// While it is written, two messages captured at 140 ms are skipped.
	for range 2 {
		if at(140, []byte("a")) {
			t.Fatal("stored while busy with BusySkipData")
		}
	}
	r.Lost(a, t0+145*ms, 6)
	close(release)
	res1 := wait(t, r, id1)
	// Dump 2 at T=150 ms, pre 20 ms: window [130, 160] ms holds the busy
	// skips and the 6 lost at the source at 145 ms, but none of the
	// oversize drops.
	id2, err := r.Trigger(TriggerParams{Reason: "two", TimeNs: t0 + 150*ms, Pre: new(20 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	res2 := wait(t, r, id2)
	// Dump 3 at T=300 ms: no drop in [250, 310] ms.
	vc.Set(t0 + 300*ms)
	id3, err := r.Trigger(TriggerParams{Reason: "three"})
	if err != nil {
		t.Fatal(err)
	}
	vc.Set(t0 + 400*ms)
	res3 := wait(t, r, id3)

	type counts struct{ oversize, busy, lost uint64 }
	f := func(res Result, want counts) {
		t.Helper()
		if res.Err != nil {
			t.Fatalf("%v: %v", res.Reasons, res.Err)
		}
		_, info := readDump(t, res.Path)
		got := map[string]counts{}
		for _, ta := range info.Topics {
			got[ta.Topic] = counts{ta.Oversize, ta.SkippedBusy, ta.LostAtSource}
		}
		if got[pack.Topic("a", "")] != want {
			t.Errorf("%v: topic a drops in the window %+v, want %+v", res.Reasons, got[pack.Topic("a", "")], want)
		}
		if got[pack.Topic("b", "")] != (counts{}) {
			t.Errorf("%v: topic b drops %+v, want none", res.Reasons, got[pack.Topic("b", "")])
		}
		if l, ok := info.Labels[dumpinfo.DropsUpperBoundLabel]; ok {
			t.Errorf("%v: counts marked as upper bounds (%q), want exact", res.Reasons, l)
		}
	}
	f(res1, counts{oversize: 3, lost: 4})
	f(res2, counts{busy: 2, lost: 6})
	f(res3, counts{})
	c := r.Topics()[a].Counters
	if c.RejectedOversize != 8 || c.SkippedBusy != 2 || c.LostAtSource != 18 {
		t.Fatalf("running totals: oversize %d, skipped busy %d, lost at source %d; want 8, 2, 18",
			c.RejectedOversize, c.SkippedBusy, c.LostAtSource)
	}
}

// TestDumpDropsUpperBound: a burst of drops at more distinct times than the
// recorder times one by one, cut by a dump's window, is counted whole and
// the dump says so in its labels.
func TestDumpDropsUpperBound(t *testing.T) {
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(50 * time.Millisecond), Post: new(10 * time.Millisecond), Guard: new(time.Duration(0)), Topics: []engine.TopicOverride{{Match: "a", MaxPacket: 16}}}})
	ids := discover(t, r, "a")
	vc.Set(t0 + 100*ms)
	big := make([]byte, 17)
	for ms_ := int64(0); ms_ < 100; ms_++ { // one oversize drop every ms
		r.IngestAt(ids["a"], t0+ms_*ms, 0, big)
	}
	id, err := r.Trigger(TriggerParams{Reason: "burst"}) // window [50, 110] ms
	if err != nil {
		t.Fatal(err)
	}
	vc.Set(t0 + 200*ms)
	res := wait(t, r, id)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	_, info := readDump(t, res.Path)
	if got := info.Topics[0].Oversize; got < 50 || got > 100 {
		t.Fatalf("oversize %d, want an upper bound between the 50 in the window and the 100 in all", got)
	}
	if got := info.Labels[dumpinfo.DropsUpperBoundLabel]; got != pack.Topic("a", "") {
		t.Fatalf("label %s = %q, want topic a", dumpinfo.DropsUpperBoundLabel, got)
	}
}

// TestDumpOverwrittenInWindow: a ring too small for its window loses the
// window's oldest messages before the dump is written; the dump counts
// them exactly in Overwritten (found soon after the trigger), and says so
// when the window start was already gone at the trigger.
func TestDumpOverwrittenInWindow(t *testing.T) {
	f := func(pre time.Duration, wantExact bool) {
		t.Helper()
		r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(pre), Post: new(300 * time.Millisecond), Guard: new(time.Duration(0)), Topics: []engine.TopicOverride{{Match: "small", MaxBytes: 8 << 10}}}})
		ids := discover(t, r, "small", "big")
		p := make([]byte, 100)
		in := func(from, to int64) {
			for ns := from; ns <= to; ns += 10 * ms {
				vc.Set(ns)
				for _, id := range ids {
					r.IngestAt(id, ns, ns-1, p)
				}
			}
		}
		in(t0, t0+1000*ms)
		held := r.Topics()[ids["small"]].Counters
		if held.OldestNs > t0+700*ms || held.EvictedSize == 0 {
			t.Fatalf("setup: small ring holds from %d ms, evicted %d; want a start before 700 ms and evictions",
				(held.OldestNs-t0)/ms, held.EvictedSize)
		}
		id, err := r.Trigger(TriggerParams{Reason: "small"})
		if err != nil {
			t.Fatal(err)
		}
		r.anchorPending() // what the dumper does right after a trigger
		in(t0+1010*ms, t0+1300*ms)
		vc.Set(t0 + 1400*ms)
		res := wait(t, r, id)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		_, info := readDump(t, res.Path)
		window := uint64((1300*ms-(1000*ms-int64(pre)))/(10*ms)) + 1
		for _, a := range info.Topics {
			if a.Topic == pack.Topic("big", "") {
				if a.Messages != window || a.Overwritten != 0 {
					t.Errorf("pre %v: big: %d messages, %d overwritten; want %d, 0", pre, a.Messages, a.Overwritten, window)
				}
				continue
			}
			lost := window - a.Messages
			if wantExact {
				if a.Overwritten != lost || lost == 0 || a.FirstNs != t0+1000*ms-int64(pre)+int64(lost)*10*ms {
					t.Errorf("pre %v: small: %d messages from %d ms, %d overwritten; want %d overwritten of %d",
						pre, a.Messages, (a.FirstNs-t0)/ms, a.Overwritten, lost, window)
				}
				if res.Lost != lost {
					t.Errorf("pre %v: result Lost %d, want %d", pre, res.Lost, lost)
				}
			}
		}
		got, ok := info.Labels[dumpinfo.StartLostLabel]
		if wantExact && ok {
			t.Errorf("pre %v: label %s = %q, want none", pre, dumpinfo.StartLostLabel, got)
		}
		if !wantExact && got != pack.Topic("small", "") {
			t.Errorf("pre %v: label %s = %q, want the small topic", pre, dumpinfo.StartLostLabel, got)
		}
	}
	f(300*time.Millisecond, true)   // window [700, 1300] ms: its start is held at the trigger
	f(1000*time.Millisecond, false) // window [0, 1300] ms: its start is gone already
}
