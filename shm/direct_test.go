package shm

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// directCounting is the real recorder (through offlineSignal) counting the
// reservations the consumer commits and aborts.
type directCounting struct {
	*offlineSignal
	commits, aborts atomic.Uint64
}

func (d *directCounting) Commit(id ingest.TopicID) bool {
	d.commits.Add(1)
	return d.offlineSignal.Commit(id)
}

func (d *directCounting) Abort(id ingest.TopicID) {
	d.aborts.Add(1)
	d.offlineSignal.Abort(id)
}

var _ ingest.DirectSink = (*directCounting)(nil)

// readBack reads every message the recorder holds for id and checks each
// is bit-exact (payloadFor: its index, and every byte derived from it),
// in order, with gen_ns = index. It returns how many it holds and how many
// indexes below n are missing.
func readBack(t *testing.T, rec *engine.Recorder, id ingest.TopicID, n uint64, maxLen int) (held, missing uint64) {
	t.Helper()
	rd, err := rec.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var m engine.Message
	next := uint64(0)
	for rd.ReadInto(&m) {
		i, err := checkPayload(m.Data, maxLen)
		if err != nil || i < next || m.GenNs != int64(i) {
			t.Fatalf("held message %d: index %d (want >= %d), gen %d: %v", held, i, next, m.GenNs, err)
		}
		missing += i - next
		next = i + 1
		held++
	}
	if rd.Lost() != 0 {
		t.Fatalf("the reader lost %d (the ring holds everything)", rd.Lost())
	}
	return held, missing + n - next
}

// TestDirectStressRecorderIntact: a producer overwrites a small ring of
// large records as fast as it can while the consumer copies them straight
// into the real recorder (reserve, copy from the mapping, re-check the
// tail, commit or abort). Every message the recorder holds is bit-exact
// and in order, and held + lost = published, the losses counted the same
// by the consumer (sequence gaps) and the recorder (Sink.Lost). Also
// under -race.
func TestDirectStressRecorderIntact(t *testing.T) {
	n, maxLen := uint64(6000), 16_000
	if testing.Short() || testutil.RaceEnabled {
		n = 1500
	}
	dir := t.TempDir()
	sink := &directCounting{offlineSignal: newTestRecorder(t, 128<<20)}
	// Records of 1 KiB and more go direct (most of them: lengths are
	// spread over 8..maxLen), the others through the chunk path.
	c := startConsumer(t, dir, sink, ConsumerOptions{DirectMin: 1024})
	p := newProducer(t, dir, ProducerOptions{Name: "direct/stress", Capacity: 64 << 10})
	buf := make([]byte, maxLen)
	for i := range n {
		if err := p.Publish(int64(i), payloadFor(buf, i, maxLen)); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	var id ingest.TopicID
	select {
	case id = <-sink.offline:
	case <-time.After(60 * time.Second):
		t.Fatal("topic never went offline")
	}
	if errs := c.Stats().Errors; len(errs) > 0 {
		t.Fatal(errs)
	}
	st := c.Stats()
	held, missing := readBack(t, sink.Recorder, id, n, maxLen)
	ts := sink.Topics()[id]
	if held+st.Lost != n || missing != st.Lost || ts.Counters.LostAtSource != st.Lost || held != st.Messages {
		t.Fatalf("held %d + lost %d != %d (missing %d, consumer received %d, recorder's LostAtSource %d)",
			held, st.Lost, n, missing, st.Messages, ts.Counters.LostAtSource)
	}
	if sink.commits.Load() == 0 {
		t.Fatal("no record went the direct way")
	}
	t.Logf("published %d: %d held bit-exact (%d committed directly), %d lost, %d reservations aborted",
		n, held, sink.commits.Load(), st.Lost, sink.aborts.Load())
}

// TestDirectAbortCountsLost overwrites a record while the consumer copies
// it straight into the recorder (a hook between the copy and the re-check
// of the tail): the reservation is aborted, nothing of it is visible, and
// the record is counted lost through the sequence gap, by the consumer and
// by the recorder, exactly like a record overwritten during a chunk copy.
func TestDirectAbortCountsLost(t *testing.T) {
	const size = 20_000 // three fit in the 64 KiB ring
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "direct/abort", Capacity: 64 << 10})
	rec := newTestRecorder(t, 16<<20)
	sink := &directCounting{offlineSignal: rec}
	opts := ConsumerOptions{}
	opts.setDefaults()
	s, err := openSegment(p.Path(), &opts, &bigBuffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.direct = sink
	id, err := sink.Discover(s.info)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, size)
	publish := func(i uint64) {
		pl := payloadFor(buf, i, size)
		pl = append(pl[:len(pl):len(pl)], make([]byte, size-len(pl))...) // all size bytes: direct
		if err := p.Publish(int64(i), pl); err != nil {
			t.Fatal(err)
		}
	}
	for i := range uint64(3) {
		publish(i)
	}
	calls := 0
	testHookDirectCopied = func() {
		if calls++; calls == 1 {
			for i := uint64(3); i < 5; i++ {
				publish(i) // laps record 0 (and 1) while it is being copied
			}
		}
	}
	defer func() { testHookDirectCopied = nil }()
	if _, done, err := s.drain(sink, id, 64); err != nil || !done {
		t.Fatalf("drain: done %v, %v", done, err)
	}
	if got := sink.aborts.Load(); got != 1 {
		t.Fatalf("%d reservations aborted, want 1", got)
	}
	seen := heldGens(t, rec.Recorder, id, size)
	lost := s.lost.Load()
	ts := rec.Topics()[id]
	if len(seen) == 0 || seen[0] == 0 || uint64(len(seen))+lost != 5 || ts.Counters.LostAtSource != lost || sink.commits.Load() != uint64(len(seen)) {
		t.Fatalf("held %v, lost %d (recorder %d), committed %d: want record 0 lost, held + lost = 5",
			seen, lost, ts.Counters.LostAtSource, sink.commits.Load())
	}
	t.Logf("held %v, lost %d", seen, lost)
}

// heldGens reads every message the recorder holds for id, checks each is
// size bytes starting with its gen_ns (the index payloadFor wrote), and
// returns their gen_ns in order.
func heldGens(t *testing.T, rec *engine.Recorder, id ingest.TopicID, size int) []int64 {
	t.Helper()
	rd, err := rec.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var m engine.Message
	var seen []int64
	for rd.ReadInto(&m) {
		if len(m.Data) != size || getU64(m.Data) != uint64(m.GenNs) {
			t.Fatalf("held message gen %d: %d bytes, index %d", m.GenNs, len(m.Data), getU64(m.Data))
		}
		seen = append(seen, m.GenNs)
	}
	return seen
}

// TestDirectRecordAllocs: draining large records straight into the real
// recorder allocates nothing.
func TestDirectRecordAllocs(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "direct/allocs", Capacity: 1 << 20})
	rec := newTestRecorder(t, 16<<20)
	opts := ConsumerOptions{}
	opts.setDefaults()
	s, err := openSegment(p.Path(), &opts, &bigBuffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.direct = rec
	id, err := rec.Discover(s.info)
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 32<<10)
	step := func() {
		for range 4 {
			p.Publish(1, payload)
		}
		if _, done, err := s.drain(rec, id, 8); err != nil || !done {
			t.Fatalf("drain: done %v, %v", done, err)
		}
	}
	step()
	if n := testing.AllocsPerRun(200, step); n != 0 {
		t.Fatalf("direct drain allocates %v times per batch", n)
	}
	if got := rec.Topics()[id].Counters.Written; got != 4*202 {
		t.Fatalf("recorder holds %d written, want %d", got, 4*202)
	}
}
