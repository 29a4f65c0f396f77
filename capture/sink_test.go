package capture

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// record is one message a recordingSink took.
type record struct {
	topic     string
	captureNs int64
	payload   []byte
}

// recordingSink is an ingest.Sink that keeps copies of everything it is
// given, for tests. Safe for concurrent use.
type recordingSink struct {
	mu      sync.Mutex
	reject  map[string]bool // names Discover refuses
	names   []string        // by TopicID
	infos   []ingest.TopicInfo
	recs    []record
	offline map[string]int
	lost    map[string]uint64 // what the source reported through Lost, by topic
	now     int64
	notify  chan struct{}
}

func newRecordingSink() *recordingSink {
	return &recordingSink{reject: map[string]bool{}, offline: map[string]int{}, lost: map[string]uint64{}, now: 1_000_000_000, notify: make(chan struct{}, 1)}
}

var errRejected = errors.New("test: topic excluded")

func (s *recordingSink) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reject[info.Name] {
		return 0, errRejected
	}
	for i, n := range s.names {
		if n == info.Name {
			return ingest.TopicID(i), nil
		}
	}
	s.names = append(s.names, info.Name)
	s.infos = append(s.infos, info)
	return ingest.TopicID(len(s.names) - 1), nil
}

func (s *recordingSink) Now() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now++
	return s.now
}

func (s *recordingSink) IngestAt(id ingest.TopicID, captureNs, genNs int64, payload []byte) bool {
	s.mu.Lock()
	s.recs = append(s.recs, record{topic: s.names[id], captureNs: captureNs, payload: append([]byte(nil), payload...)})
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return true
}

func (s *recordingSink) Lost(id ingest.TopicID, _ int64, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[s.names[id]] += n
}

func (s *recordingSink) Offline(id ingest.TopicID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offline[s.names[id]]++
}

func (s *recordingSink) records() []record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]record(nil), s.recs...)
}

// waitRecords waits until at least n records arrived, failing the test
// after a generous timeout (the packets are on loopback; a timeout means
// they were lost, not slow).
func (s *recordingSink) waitRecords(t *testing.T, n int) []record {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if r := s.records(); len(r) >= n {
			return r
		}
		select {
		case <-s.notify:
		case <-deadline:
			t.Fatalf("got %d records, want %d", len(s.records()), n)
		}
	}
}

// countingSink is an ingest.Sink that only counts and sums, allocating
// nothing per message: for allocation tests and benchmarks.
type countingSink struct {
	topics  int
	n       int
	bytes   int
	sum     uint64 // of payload lengths and first bytes, so the work is not elided
	lastCap int64
	now     int64
}

func (s *countingSink) Discover(ingest.TopicInfo) (ingest.TopicID, error) {
	s.topics++
	return ingest.TopicID(s.topics - 1), nil
}
func (s *countingSink) Now() int64 { s.now++; return s.now }
func (s *countingSink) IngestAt(id ingest.TopicID, captureNs, genNs int64, payload []byte) bool {
	s.n++
	s.bytes += len(payload)
	if len(payload) > 0 {
		s.sum += uint64(payload[0])
	}
	s.lastCap = captureNs
	return true
}
func (s *countingSink) Offline(ingest.TopicID)             {}
func (s *countingSink) Lost(ingest.TopicID, int64, uint64) {}

// waitRecordsFor waits up to d for a new record and returns all records.
func (s *recordingSink) waitRecordsFor(d time.Duration) []record {
	select {
	case <-s.notify:
	case <-time.After(d):
	}
	return s.records()
}
