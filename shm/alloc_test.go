//go:build !race

package shm

import (
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

// countSink accepts everything and keeps nothing.
type countSink struct{ n, bytes uint64 }

func (s *countSink) Discover(ingest.TopicInfo) (ingest.TopicID, error) { return 0, nil }
func (s *countSink) Now() int64                                        { return 1 }
func (s *countSink) Offline(ingest.TopicID)                            {}
func (s *countSink) Lost(ingest.TopicID, int64, uint64)                {}
func (s *countSink) IngestAt(_ ingest.TopicID, _, _ int64, p []byte) bool {
	s.n++
	s.bytes += uint64(len(p))
	return true
}

// allocTypes: an untyped segment (version 1) and a typed one (version 2,
// its schema area before the ring): publishing and draining are the same
// code, allocation-free either way.
var allocTypes = []ingest.Type{{}, ingest.Packed("v.State", "f32le speed; u8 gear; pad 3")}

func TestPublishAllocs(t *testing.T) {
	for _, typ := range allocTypes {
		p := newProducer(t, t.TempDir(), ProducerOptions{Name: "allocs", Capacity: MinCapacity, Type: typ})
		payload := make([]byte, 64)
		big := make([]byte, 5000)
		if n := testing.AllocsPerRun(10_000, func() {
			p.Publish(1, payload)
			p.Publish(2, big) // ErrTooLarge: counted, no allocation either
			if r, err := p.Reserve(len(payload)); err == nil {
				copy(r, payload)
				p.Commit(3, len(payload)/2)
			}
		}); n != 0 {
			t.Fatalf("type %v: Publish, Reserve and Commit allocate %v times per call", typ, n)
		}
	}
}

func TestDrainAllocs(t *testing.T) {
	for _, typ := range allocTypes {
		testDrainAllocs(t, typ)
	}
}

func testDrainAllocs(t *testing.T, typ ingest.Type) {
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "drain", Capacity: 64 << 10, Type: typ})
	opts := ConsumerOptions{}
	opts.setDefaults()
	s, err := openSegment(p.Path(), &opts, &bigBuffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	sink := &countSink{}
	payload := make([]byte, 100)
	step := func() {
		for range 16 {
			p.Publish(1, payload)
		}
		if _, done, err := s.drain(sink, 0, 4); err != nil || !done {
			t.Fatalf("drain: done %v, %v", done, err)
		}
	}
	step() // allocates the private chunk buffer once
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Fatalf("drain allocates %v times per batch", n)
	}
	if sink.n != 16*1002 {
		t.Fatalf("ingested %d, want %d", sink.n, 16*1002)
	}
}

// TestBatchRecordAllocs: draining small records in runs straight into the
// real recorder allocates nothing (the run's buffers are the segment's,
// made on its first data).
func TestBatchRecordAllocs(t *testing.T) {
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "batch/allocs", Capacity: 1 << 20})
	rec := newTestRecorder(t, 16<<20)
	s, id := batchSegment(t, p, rec)
	payload := make([]byte, 64)
	step := func() {
		for range 300 {
			p.Publish(1, payload)
		}
		if _, done, err := s.drain(rec, id, 8); err != nil || !done {
			t.Fatalf("drain: done %v, %v", done, err)
		}
	}
	step()
	if n := testing.AllocsPerRun(200, step); n != 0 {
		t.Fatalf("batch drain allocates %v times per step", n)
	}
	if got := rec.Topics()[id].Counters.Written; got != 300*202 {
		t.Fatalf("recorder holds %d written, want %d", got, 300*202)
	}
}
