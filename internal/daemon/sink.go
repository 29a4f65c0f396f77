package daemon

import (
	"fmt"
	"sync"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
)

// owners remembers which network source feeds each topic. Two sources
// writing one topic would be two writers on a single-writer ring, so the
// second one's Discover is refused, naming the first: the user gives one
// of them a channel (topic names never change silently when a source is
// added). Discover is off the per-message path.
type owners struct {
	mu sync.Mutex
	by map[ingest.TopicID]string
}

func newOwners() *owners { return &owners{by: map[ingest.TopicID]string{}} }

// claim returns the source that owns id, making it src when id has none.
func (o *owners) claim(id ingest.TopicID, src string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if have, ok := o.by[id]; ok {
		return have
	}
	o.by[id] = src
	return src
}

// ownedSink is the recorder as one network source (key, e.g.
// "source.udp[1]") sees it: Discover refuses a topic another source
// feeds; the hot path is the recorder's own, called directly.
type ownedSink struct {
	rec    *engine.Recorder
	owners *owners
	key    string
}

func (d *Daemon) sourceSink(key string) *ownedSink {
	return &ownedSink{rec: d.rec, owners: d.owners, key: key}
}

// Discover registers the topic with the recorder unless another source
// already feeds it.
func (s *ownedSink) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	id, err := s.rec.Discover(info)
	if err != nil {
		return 0, err
	}
	if o := s.owners.claim(id, s.key); o != s.key {
		name := info.Name
		if info.Channel != "" {
			name += "#" + info.Channel
		}
		return 0, fmt.Errorf("daemon: %s: topic %q is already fed by %s: give one of the two a channel", s.key, name, o)
	}
	return id, nil
}

// Now reads the recorder's clock.
func (s *ownedSink) Now() int64 { return s.rec.Now() }

// IngestAt is the recorder's IngestAt.
func (s *ownedSink) IngestAt(id ingest.TopicID, captureNs, genNs int64, payload []byte) bool {
	return s.rec.IngestAt(id, captureNs, genNs, payload)
}

// Offline is the recorder's Offline.
func (s *ownedSink) Offline(id ingest.TopicID) { s.rec.Offline(id) }

// Lost is the recorder's Lost.
func (s *ownedSink) Lost(id ingest.TopicID, atNs int64, n uint64) { s.rec.Lost(id, atNs, n) }

var _ ingest.Sink = (*ownedSink)(nil)
