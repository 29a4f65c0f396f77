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
