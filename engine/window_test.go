package engine

import (
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// TestZeroWindowsAreZero: a zero pre, post or guard (recorder, topic
// override, trigger) is a zero window, not the default; an unset one is
// the default (the recorder's, then DefaultPre / DefaultPost).
func TestZeroWindowsAreZero(t *testing.T) {
	const T = int64(100e9)
	windows := func(cfg Config, s Selection) map[string][2]int64 {
		t.Helper()
		r, _ := newTestRecorder(t, cfg)
		for _, n := range []string{"a", "b"} {
			if _, err := r.Discover(ingest.TopicInfo{Name: n}); err != nil {
				t.Fatal(err)
			}
		}
		s.TimeNs = T
		sel := r.Select(s)
		defer r.Unpin(sel...)
		out := map[string][2]int64{}
		for _, w := range sel {
			out[w.Info.Name] = [2]int64{T - w.From, w.To - T}
		}
		return out
	}
	eq := func(what string, got map[string][2]int64, want map[string][2]int64) {
		t.Helper()
		for n, w := range want {
			if got[n] != w {
				t.Errorf("%s: topic %s window (pre, post) = %v, want %v", what, n, got[n], w)
			}
		}
	}
	s := int64(time.Second)
	eq("unset", windows(Config{}, Selection{}), map[string][2]int64{"a": {int64(DefaultPre), int64(DefaultPost)}})
	eq("recorder post 0", windows(Config{Pre: new(2 * time.Second), Post: new(time.Duration(0))}, Selection{}),
		map[string][2]int64{"a": {2 * s, 0}, "b": {2 * s, 0}})
	eq("recorder pre 0", windows(Config{Pre: new(time.Duration(0))}, Selection{}), map[string][2]int64{"a": {0, int64(DefaultPost)}})
	eq("topic post 0", windows(Config{Post: new(3 * time.Second), Topics: []TopicOverride{{Match: "b", Post: new(time.Duration(0))}}}, Selection{}),
		map[string][2]int64{"a": {int64(DefaultPre), 3 * s}, "b": {int64(DefaultPre), 0}})
	eq("trigger post 0", windows(Config{Post: new(3 * time.Second)}, Selection{Post: new(time.Duration(0))}),
		map[string][2]int64{"a": {int64(DefaultPre), 0}, "b": {int64(DefaultPre), 0}})
	eq("trigger pre 0", windows(Config{}, Selection{Pre: new(time.Duration(0)), Post: new(time.Second)}),
		map[string][2]int64{"a": {0, s}})

	r, _ := newTestRecorder(t, Config{Guard: new(time.Duration(0))})
	if r.Guard() != 0 {
		t.Errorf("guard 0 = %v, want 0", r.Guard())
	}
	r, _ = newTestRecorder(t, Config{})
	if r.Guard() != DefaultGuard {
		t.Errorf("guard unset = %v, want DefaultGuard %v", r.Guard(), DefaultGuard)
	}
}

// TestNewestAndCoverage: Newest finds the capture time of the newest
// message of the selected topics; Coverage reports when a topic was
// discovered, when it went offline and up to when it evicted.
func TestNewestAndCoverage(t *testing.T) {
	r, vc := newTestRecorder(t, Config{Pre: new(100 * time.Millisecond), Post: new(time.Duration(0)), Guard: new(time.Duration(0))})
	if _, ok := r.Newest(nil); ok {
		t.Fatal("Newest of an empty recorder found a message")
	}
	discovered := vc.Now()
	a, _ := r.Discover(ingest.TopicInfo{Name: "a"})
	b, _ := r.Discover(ingest.TopicInfo{Name: "b"})
	var lastA int64
	for range 50 {
		lastA = vc.Advance(10 * time.Millisecond)
		r.Ingest(a, 0, []byte("x"))
	}
	vc.Advance(time.Second)
	r.Ingest(b, 0, []byte("y"))
	lastB := vc.Now()
	if n, ok := r.Newest([]string{"a"}); !ok || n != lastA {
		t.Errorf("Newest(a) = %d, %v; want %d", n, ok, lastA)
	}
	if n, ok := r.Newest(nil); !ok || n != lastB {
		t.Errorf("Newest(all) = %d, %v; want %d", n, ok, lastB)
	}
	offAt := vc.Advance(time.Second)
	r.Offline(a)
	sel := r.Select(Selection{TimeNs: lastA, Topics: []string{"a"}})
	defer r.Unpin(sel...)
	c := r.Coverage(&sel[0])
	if c.DiscoveredNs != discovered || c.OfflineNs != offAt {
		t.Errorf("coverage %+v, want discovered %d, offline %d", c, discovered, offAt)
	}
	// 500 ms of messages with a 100 ms retention: the older ones were
	// evicted, everything before ~lastA-100ms
	if c.EvictedBelowNs < lastA-int64(200*time.Millisecond) || c.EvictedBelowNs > lastA {
		t.Errorf("EvictedBelowNs = %d, want within 200ms before the last message %d", c.EvictedBelowNs, lastA)
	}
}

// TestWindowCursorBorrow: Borrow hands out the payload in the ring, not a
// copy, and consumes the entry; Intact holds until the writer overwrites
// the entry and never again after; Overwritten counts the entries given
// back as lost, in the cursor and in the topic's LostToReaders, so that
// delivered + lost is every message the cursor passed.
func TestWindowCursorBorrow(t *testing.T) {
	r, vc := newTestRecorder(t, Config{TopicBytes: 4 << 10, Pre: new(time.Hour), Post: new(time.Duration(0))})
	id, err := r.Discover(ingest.TopicInfo{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	payload := func(i int) []byte {
		p := make([]byte, 100)
		for j := range p {
			p[j] = byte(i*7 + j)
		}
		return p
	}
	const n = 40
	for i := range n {
		vc.Advance(time.Millisecond)
		r.Ingest(id, 0, payload(i))
	}
	ws := r.Select(Selection{TimeNs: vc.Now()})
	defer r.Unpin(ws...)
	c := NewWindowCursor(&ws[0])
	c.Position()
	var data [][]byte
	var at []RingPos
	var seqs []int
	for {
		e, ok := c.Peek()
		if !ok {
			break
		}
		d, p := c.Borrow(e)
		if len(d) != int(e.Size) || cap(d) != len(d) || string(d) != string(payload(int(e.Seq))) || !c.Intact(p) {
			t.Fatalf("entry %d: borrowed %d bytes (cap %d), intact %v", e.Seq, len(d), cap(d), c.Intact(p))
		}
		data, at, seqs = append(data, d), append(at, p), append(seqs, int(e.Seq))
	}
	if c.Next() != n || len(at) < 10 {
		t.Fatalf("Next %d after borrowing %d entries, want %d", c.Next(), len(at), n)
	}
	// Write until the oldest borrowed entry is overwritten: the newest stay.
	for i := 0; c.Intact(at[0]); i++ {
		if i > 1e5 {
			t.Fatal("the writer never overwrote the oldest entry")
		}
		vc.Advance(time.Millisecond)
		r.Ingest(id, 0, payload(100+i))
	}
	var lost uint64
	for i := range at {
		if !c.Intact(at[i]) {
			lost++
			continue
		}
		if string(data[i]) != string(payload(seqs[i])) {
			t.Fatalf("entry %d intact but changed", seqs[i])
		}
	}
	if lost == 0 || lost == uint64(len(at)) {
		t.Fatalf("%d of %d borrowed entries overwritten; the test wants some, not all", lost, len(at))
	}
	for i := range at[:lost] {
		if c.Intact(at[i]) {
			t.Fatalf("entry %d intact after a newer one was overwritten", i)
		}
	}
	before := c.Lost() // the entries evicted before the cursor reached them
	c.Overwritten(lost)
	if c.Lost() != before+lost || statusOf(t, r, id).Counters.LostToReaders != before+lost {
		t.Fatalf("Lost %d, LostToReaders %d, want %d", c.Lost(), statusOf(t, r, id).Counters.LostToReaders, before+lost)
	}
}
