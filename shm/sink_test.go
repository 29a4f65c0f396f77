package shm

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// recSink is an ingest.Sink that records everything it is given, for tests.
type recSink struct {
	mu      sync.Mutex
	topics  []ingest.TopicInfo
	byKey   map[string]ingest.TopicID
	msgs    map[ingest.TopicID][]recMsg
	online  map[ingest.TopicID]bool
	offline map[ingest.TopicID]time.Time
	lost    map[ingest.TopicID]uint64
	refuse  func(ingest.TopicInfo) error
	// discovered is every Discover call's info, in order.
	discovered []ingest.TopicInfo
	now        atomic.Int64
	changed    chan struct{}
}

type recMsg struct {
	capture, gen int64
	payload      []byte
}

func newRecSink() *recSink {
	return &recSink{
		byKey: map[string]ingest.TopicID{}, msgs: map[ingest.TopicID][]recMsg{},
		online: map[ingest.TopicID]bool{}, offline: map[ingest.TopicID]time.Time{},
		changed: make(chan struct{}, 1),
	}
}

func (r *recSink) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recSink) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.signal()
	if r.refuse != nil {
		if err := r.refuse(info); err != nil {
			return 0, err
		}
	}
	r.discovered = append(r.discovered, info)
	key := info.Name + "#" + info.Channel
	id, ok := r.byKey[key]
	if !ok {
		id = ingest.TopicID(len(r.topics))
		r.topics = append(r.topics, info)
		r.byKey[key] = id
	}
	r.online[id] = true
	return id, nil
}

func (r *recSink) Now() int64 { return r.now.Add(1) }

func (r *recSink) IngestAt(id ingest.TopicID, captureNs, genNs int64, payload []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.online[id] {
		return false
	}
	r.msgs[id] = append(r.msgs[id], recMsg{captureNs, genNs, append([]byte(nil), payload...)})
	r.signal()
	return true
}

func (r *recSink) Lost(id ingest.TopicID, _ int64, n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost == nil {
		r.lost = map[ingest.TopicID]uint64{}
	}
	r.lost[id] += n
}

func (r *recSink) Offline(id ingest.TopicID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.online[id] = false
	r.offline[id] = time.Now()
	r.signal()
}

// topic returns the id of name#channel and whether it was discovered.
func (r *recSink) topic(name, channel string) (ingest.TopicID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.byKey[name+"#"+channel]
	return id, ok
}

func (r *recSink) messages(id ingest.TopicID) []recMsg {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recMsg(nil), r.msgs[id]...)
}

func (r *recSink) isOnline(id ingest.TopicID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.online[id]
}

// waitFor blocks until cond holds (checked whenever the sink changes, and
// every 10ms for conditions on other state), failing the test after 20s.
func (r *recSink) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-r.changed:
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// startConsumer runs a consumer over dir until the test ends.
func startConsumer(t testing.TB, dir string, sink ingest.Sink, opts ConsumerOptions) *Consumer {
	t.Helper()
	c, err := NewConsumer(dir, sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newProducer(t testing.TB, dir string, opts ProducerOptions) *Producer {
	t.Helper()
	p, err := NewProducer(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// payloadFor is a checkable payload for message i: its length varies with i
// and every byte depends on i, so a torn or misplaced copy shows.
func payloadFor(buf []byte, i uint64, maxLen int) []byte {
	n := 8 + int((i*2654435761)%uint64(maxLen-7))
	buf = buf[:n]
	x := i*0x9E3779B97F4A7C15 + 1
	for j := range buf {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		buf[j] = byte(x)
	}
	putU64(buf, i)
	return buf
}

func putU64(b []byte, v uint64) {
	for k := range 8 {
		b[k] = byte(v >> (8 * k))
	}
}

func getU64(b []byte) uint64 {
	var v uint64
	for k := range 8 {
		v |= uint64(b[k]) << (8 * k)
	}
	return v
}

// checkPayload verifies a payload made by payloadFor and returns its index.
func checkPayload(b []byte, maxLen int) (uint64, error) {
	if len(b) < 8 {
		return 0, fmt.Errorf("payload of %d bytes", len(b))
	}
	i := getU64(b)
	want := payloadFor(make([]byte, maxLen), i, maxLen)
	if string(want) != string(b) {
		return i, fmt.Errorf("payload %d is not bit-exact (len %d, want %d)", i, len(b), len(want))
	}
	return i, nil
}
