package shm

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// checkSink verifies every payload as it arrives (no copies kept): a torn
// read, a reordering or a duplicate fails the test.
type checkSink struct {
	maxLen    int
	slowEvery uint64 // when > 0, sleep 1ms every slowEvery messages
	calls     uint64
	next      uint64 // index expected at least
	got       atomic.Uint64
	last      atomic.Uint64
	bad       atomic.Pointer[string]
	offline   atomic.Bool
	lost      atomic.Uint64 // what the consumer reported through Sink.Lost
	discovery atomic.Bool
}

func (s *checkSink) Discover(ingest.TopicInfo) (ingest.TopicID, error) {
	s.discovery.Store(true)
	return 7, nil
}
func (s *checkSink) Now() int64             { return 1 }
func (s *checkSink) Offline(ingest.TopicID) { s.offline.Store(true) }
func (s *checkSink) Lost(_ ingest.TopicID, _ int64, n uint64) {
	s.lost.Add(n)
}
func (s *checkSink) IngestAt(id ingest.TopicID, _, gen int64, p []byte) bool {
	i, err := checkPayload(p, s.maxLen)
	switch {
	case err != nil:
		msg := err.Error()
		s.bad.CompareAndSwap(nil, &msg)
	case i < s.next || uint64(gen) != i:
		msg := "out of order or wrong gen_ns"
		s.bad.CompareAndSwap(nil, &msg)
	}
	s.next = i + 1
	s.got.Add(1)
	if s.calls++; s.slowEvery > 0 && s.calls%s.slowEvery == 0 {
		time.Sleep(time.Millisecond) // a deliberately slow recorder
	}
	s.last.Store(i)
	return true
}

// TestStressLappingReadsNeverTorn publishes checksummed messages into a
// small ring as fast as possible while the consumer reads: the producer laps
// the consumer constantly, and every message the consumer hands on must be
// intact, in order, with received + lost = published.
func TestStressLappingReadsNeverTorn(t *testing.T) {
	for _, tc := range []struct {
		name         string
		n            uint64
		maxLen, capa int
	}{
		{"small", 300_000, 700, 16 << 10},
		{"large", 20_000, 30_000, 128 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			if testing.Short() {
				n /= 10
			}
			stress(t, n, tc.maxLen, tc.capa)
		})
	}
}

// TestStressReserveCommitLapping is TestStressLappingReadsNeverTorn with
// the messages written in place (Reserve of the largest size, Commit of
// the payload's) and every seventh reservation scribbled on and dropped:
// nothing torn, nothing of a dropped reservation, received + lost =
// committed.
func TestStressReserveCommitLapping(t *testing.T) {
	n := uint64(300_000)
	if testing.Short() {
		n /= 10
	}
	stressVia(t, &checkSink{maxLen: 700}, n, 700, 16<<10, true)
}

// TestSlowConsumerLossCountedExactly: a recorder that stalls 1ms every 50
// messages while the producer runs flat out loses most messages, and
// exactly those are counted.
func TestSlowConsumerLossCountedExactly(t *testing.T) {
	stressWith(t, &checkSink{maxLen: 300, slowEvery: 50}, 100_000, 300, 64<<10)
}

func stress(t *testing.T, n uint64, maxLen, capa int) {
	stressWith(t, &checkSink{maxLen: maxLen}, n, maxLen, capa)
}

func stressWith(t *testing.T, sink *checkSink, n uint64, maxLen, capa int) {
	stressVia(t, sink, n, maxLen, capa, false)
}

// stressVia publishes n checkable messages with Publish, or in place with
// Reserve and Commit (every seventh reservation dropped).
func stressVia(t *testing.T, sink *checkSink, n uint64, maxLen, capa int, inPlace bool) {
	stressOpts(t, sink, n, maxLen, capa, inPlace, ConsumerOptions{BatchBytes: 1})
}

// stressOpts is stressVia with the consumer's options.
func stressOpts(t *testing.T, sink *checkSink, n uint64, maxLen, capa int, inPlace bool, opts ConsumerOptions) {
	dir := t.TempDir()
	c := startConsumer(t, dir, sink, opts)
	p := newProducer(t, dir, ProducerOptions{Name: "stress", Capacity: capa})
	buf := make([]byte, maxLen)
	for i := range n {
		if !inPlace {
			if err := p.Publish(int64(i), payloadFor(buf, i, maxLen)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if i%7 == 0 {
			r, err := p.Reserve(maxLen)
			if err != nil {
				t.Fatal(err)
			}
			payloadFor(r, i+n, maxLen) // checkable, but not a message: the test fails if it arrives
		}
		r, err := p.Reserve(maxLen)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Commit(int64(i), len(payloadFor(r, i, maxLen))); err != nil {
			t.Fatal(err)
		}
	}
	newRecSink().waitFor(t, "the last message", func() bool {
		return sink.bad.Load() != nil || c.Stats().Quarantined > 0 || (sink.got.Load() > 0 && sink.last.Load() == n-1)
	})
	if errs := c.Stats().Errors; len(errs) > 0 {
		t.Fatal(errs)
	}
	if b := sink.bad.Load(); b != nil {
		t.Fatal(*b)
	}
	// The segment's counters are added after each batch reaches the sink.
	newRecSink().waitFor(t, "the counts to settle", func() bool { st := c.Stats(); return st.Messages+st.Lost >= n })
	st := c.Stats()
	if st.Messages+st.Lost != n || sink.lost.Load() != st.Lost {
		t.Fatalf("received %d + lost %d = %d, published %d; %d reported to the sink", st.Messages, st.Lost, st.Messages+st.Lost, n, sink.lost.Load())
	}
	t.Logf("published %d, received %d, lost %d", n, st.Messages, st.Lost)
}

// TestLargeRecordsThroughSharedBuffer: records larger than each segment's
// private buffer are read, bit-exact and in order, through the buffer the
// consumer shares between segments, from several segments at once.
func TestLargeRecordsThroughSharedBuffer(t *testing.T) {
	const n, maxLen, producers = 300, 20_000, 3
	dir := t.TempDir()
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{BatchBytes: 4096})
	done := make(chan error, producers)
	for k := range producers {
		p := newProducer(t, dir, ProducerOptions{Name: fmt.Sprintf("big/%d", k), Capacity: 16 << 20})
		go func() {
			buf := make([]byte, maxLen)
			for i := range uint64(n) {
				if err := p.Publish(int64(i), payloadFor(buf, i, maxLen)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range producers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for k := range producers {
		id := waitTopic(t, sink, fmt.Sprintf("big/%d", k), "")
		sink.waitFor(t, "all messages", func() bool { return len(sink.messages(id)) == n })
		for i, m := range sink.messages(id) {
			if got, err := checkPayload(m.payload, maxLen); err != nil || got != uint64(i) {
				t.Fatalf("topic %d message %d: index %d, %v", k, i, got, err)
			}
		}
	}
}
