package shm

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// batchCounting is the real recorder (through offlineSignal) counting the
// runs the consumer commits and aborts.
type batchCounting struct {
	*offlineSignal
	runs, committed, aborts atomic.Uint64
}

func (b *batchCounting) CommitBatch(id ingest.TopicID) int {
	n := b.offlineSignal.CommitBatch(id)
	b.runs.Add(1)
	b.committed.Add(uint64(n))
	return n
}

func (b *batchCounting) AbortBatch(id ingest.TopicID) {
	b.aborts.Add(1)
	b.offlineSignal.AbortBatch(id)
}

var _ ingest.BatchSink = (*batchCounting)(nil)

// TestBatchStressRecorderIntact: a producer laps a small ring of small
// records (8 B to 1 KiB) as fast as it can while the consumer hands runs
// of them straight from the segment into the real recorder (stage, fence,
// tail, commit or abort). Every message the recorder holds is bit-exact
// and in order, held + lost = published, the losses counted the same by
// the consumer (sequence gaps) and the recorder (Sink.Lost), and messages
// went in runs (natively all of them; a run whose headers were torn takes
// the chunk path). Also under -race.
func TestBatchStressRecorderIntact(t *testing.T) {
	n, maxLen := uint64(400_000), 1024
	if testing.Short() || testutil.RaceEnabled {
		n = 60_000
	}
	dir := t.TempDir()
	sink := &batchCounting{offlineSignal: newTestRecorder(t, 256<<20)}
	c := startConsumer(t, dir, sink, ConsumerOptions{})
	p := newProducer(t, dir, ProducerOptions{Name: "batch/stress", Capacity: 16 << 10})
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
	st := c.Stats()
	if len(st.Errors) > 0 {
		t.Fatal(st.Errors)
	}
	held, missing := readBack(t, sink.Recorder, id, n, maxLen)
	ts := sink.Topics()[id]
	if held+st.Lost != n || missing != st.Lost || ts.Counters.LostAtSource != st.Lost || held != st.Messages {
		t.Fatalf("held %d + lost %d != %d (missing %d, consumer received %d, recorder's LostAtSource %d)",
			held, st.Lost, n, missing, st.Messages, ts.Counters.LostAtSource)
	}
	if sink.committed.Load() == 0 {
		t.Fatalf("none of %d held messages went in runs", held)
	}
	t.Logf("published %d: %d held bit-exact (%d in %d runs), %d lost, %d runs aborted",
		n, held, sink.committed.Load(), sink.runs.Load(), st.Lost, sink.aborts.Load())
}

// batchSegment opens the segment of p for a test that drives drain itself,
// with sink taking runs.
func batchSegment(t *testing.T, p *Producer, sink ingest.BatchSink) (*segment, ingest.TopicID) {
	t.Helper()
	opts := ConsumerOptions{}
	opts.setDefaults()
	s, err := openSegment(p.Path(), &opts, &bigBuffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	s.batcher = sink
	s.direct, _ = sink.(ingest.DirectSink)
	id, err := sink.Discover(s.info)
	if err != nil {
		t.Fatal(err)
	}
	return s, id
}

// TestBatchAbortCountsLost overwrites the start of a run while the consumer
// stages it (a hook between the staging and the re-check of the tail): the
// run is aborted, nothing of it is visible, reading resumes at the tail,
// and the overwritten records are counted lost through the sequence gap,
// by the consumer and by the recorder; held + lost = published.
func TestBatchAbortCountsLost(t *testing.T) {
	const size = 1000 // 4 records of 1024 bytes fill the 4 KiB ring
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "batch/abort", Capacity: MinCapacity})
	rec := newTestRecorder(t, 16<<20)
	sink := &batchCounting{offlineSignal: rec}
	s, id := batchSegment(t, p, sink)
	buf := make([]byte, size)
	publish := func(i uint64) {
		pl := payloadFor(buf, i, size)
		pl = append(pl[:len(pl):len(pl)], make([]byte, size-len(pl))...)
		if err := p.Publish(int64(i), pl); err != nil {
			t.Fatal(err)
		}
	}
	for i := range uint64(3) {
		publish(i)
	}
	calls := 0
	testHookBatchStaged = func() {
		if calls++; calls == 1 {
			for i := uint64(3); i < 6; i++ {
				publish(i) // laps records 0-2 while they are staged
			}
		}
	}
	defer func() { testHookBatchStaged = nil }()
	if _, done, err := s.drain(sink, id, 64); err != nil || !done {
		t.Fatalf("drain: done %v, %v", done, err)
	}
	if sink.aborts.Load() != 1 || sink.runs.Load() == 0 {
		t.Fatalf("%d runs aborted (want 1), %d committed", sink.aborts.Load(), sink.runs.Load())
	}
	seen := heldGens(t, rec.Recorder, id, size)
	lost := s.lost.Load()
	ts := rec.Topics()[id]
	if len(seen) == 0 || seen[0] == 0 || uint64(len(seen))+lost != 6 || ts.Counters.LostAtSource != lost || s.received.Load() != uint64(len(seen)) {
		t.Fatalf("held %v, lost %d (recorder %d), received %d: want record 0 lost, held + lost = 6",
			seen, lost, ts.Counters.LostAtSource, s.received.Load())
	}
	t.Logf("held %v, lost %d", seen, lost)
}

// TestBatchSmallRecorderRing: runs longer than the recorder's 4 KiB topic
// ring are staged in parts (a run never overwrites its own first entry):
// nothing is lost at the source, every record is written once, in order,
// and the ring holds the newest ones bit-exact.
func TestBatchSmallRecorderRing(t *testing.T) {
	const n, size = 300, 100
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "batch/small", Capacity: 64 << 10})
	rec, err := engine.New(engine.Config{CacheSize: 1 << 20, TopicBytes: engine.DefaultMinRingBytes, Pre: new(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	sink := &batchCounting{offlineSignal: &offlineSignal{Recorder: rec}}
	s, id := batchSegment(t, p, sink)
	buf := make([]byte, size)
	for i := range uint64(n) {
		pl := payloadFor(buf, i, size)
		if err := p.Publish(int64(i), append(pl[:len(pl):len(pl)], make([]byte, size-len(pl))...)); err != nil {
			t.Fatal(err)
		}
	}
	if _, done, err := s.drain(sink, id, 1000); err != nil || !done {
		t.Fatalf("drain: done %v, %v", done, err)
	}
	c := rec.Topics()[id].Counters
	if s.lost.Load() != 0 || s.received.Load() != n || c.Written != n || sink.committed.Load() != n || sink.runs.Load() < 2 {
		t.Fatalf("lost %d, received %d, written %d, %d in %d runs: want all %d in several runs",
			s.lost.Load(), s.received.Load(), c.Written, sink.committed.Load(), sink.runs.Load(), n)
	}
	rd, err := rec.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var m engine.Message
	next := int64(-1)
	for rd.ReadInto(&m) {
		if getU64(m.Data) != uint64(m.GenNs) || m.Seq != uint64(m.GenNs) || (next >= 0 && m.GenNs != next) {
			t.Fatalf("held seq %d gen %d index %d, want gen %d", m.Seq, m.GenNs, getU64(m.Data), next)
		}
		next = m.GenNs + 1
	}
	if next != n {
		t.Fatalf("newest held %d, want %d", next-1, n-1)
	}
	t.Logf("%d records in %d runs into a %d-byte ring", n, sink.runs.Load(), engine.DefaultMinRingBytes)
}
