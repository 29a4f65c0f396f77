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

func TestPublishAllocs(t *testing.T) {
	p := newProducer(t, t.TempDir(), ProducerOptions{Name: "allocs", Capacity: MinCapacity})
	payload := make([]byte, 64)
	big := make([]byte, 5000)
	if n := testing.AllocsPerRun(10_000, func() {
		p.Publish(1, payload)
		p.Publish(2, big) // ErrTooLarge: counted, no allocation either
	}); n != 0 {
		t.Fatalf("Publish allocates %v times per call", n)
	}
}

func TestDrainAllocs(t *testing.T) {
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "drain", Capacity: 64 << 10})
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
