// Liveness: whether a segment's producer is finished (closed, or its
// process gone), silent (no heartbeat and no record for too long: offline
// until it speaks again) or alive; and leftovers, the segments of producers
// that finished before the consumer found them (FORMAT.md, "Liveness and
// closing").

package shm

import (
	"os"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// pidCheck reports whether the segment's pid can say its producer is gone:
// checks enabled and a pid that can name a producer here (usablePID).
func (f *follower) pidCheck(s *segment) bool {
	return !f.c.opts.NoPIDCheck && usablePID(s.h.pid)
}

// producerDone reports whether the producer of s closed it or its process
// is gone: the segment is read to its end, its topic goes offline and the
// file is removed.
func (f *follower) producerDone(s *segment) bool {
	return s.closed() || (f.pidCheck(s) && s.owner.gone())
}

// silence is how long the producer of s may give no sign of life (no
// heartbeat, no record) before its topic is offline; 0 when its liveness
// rests on its pid alone.
func (f *follower) silence(s *segment) time.Duration {
	t := f.c.opts.HeartbeatTimeout
	switch p := time.Duration(s.h.heartbeatPeriod); {
	case p > 0 && t > 0:
		return t
	case p > 0:
		return 2 * p
	case f.pidCheck(s):
		return 0
	case t > 0:
		return t
	}
	return DefaultSilence
}

// silent reports whether the producer of s has given no sign of life for
// longer than its silence; it notes the signs it sees (a new heartbeat, a
// moved write cursor) on the consumer's clock.
func (f *follower) silent(s *segment, limit time.Duration) bool {
	now := f.c.opts.Clock.Now()
	if w, hb := s.c.write.Load(), s.c.hbNs.Load(); w != f.lifeW || hb != f.lifeHb {
		f.lifeW, f.lifeHb, f.lifeNs = w, hb, now
	}
	last := max(f.lifeNs, s.c.hbNs.Load())
	return now-last > int64(limit)
}

// revive brings the topic of a silent producer back online at its first
// sign of life.
func (f *follower) revive(s *segment) {
	f.lifeW, f.lifeHb, f.lifeNs = s.c.write.Load(), s.c.hbNs.Load(), f.c.opts.Clock.Now()
	if id, err := f.c.sink.Discover(s.info); err == nil {
		f.id, f.online, f.silentOff = id, true, false
		f.publishState(nil)
	}
}

// leftoverMargin: a segment put in place up to this long before the
// consumer started counts as put in place after (inode times are coarse).
const leftoverMargin = 50 * time.Millisecond

// isLeftover reports whether s was finished before the consumer found it:
// put in place before the consumer started, and by now closed, its
// producer's process gone, or (a producer whose pid cannot be checked) its
// promised heartbeat long stale. A segment that appeared while the consumer
// runs is read as live data even if its producer closed it before the
// consumer opened it: its records are recent.
func (f *follower) isLeftover(s *segment) bool {
	if s.ctime >= f.c.startNs-int64(leftoverMargin) {
		return false
	}
	if f.producerDone(s) {
		return true
	}
	p := s.h.heartbeatPeriod
	return p > 0 && !f.pidCheck(s) && f.c.opts.Clock.Now()-s.c.hbNs.Load() > int64(f.silence(s))
}

// readLeftover counts the records a leftover segment holds (every check of
// a live read applies; nothing reaches the sink: these are no live data,
// their capture time is unknown), reports it, and removes the file unless
// KeepFiles. The segment is released.
func (f *follower) readLeftover(s *segment) {
	c := f.c
	var cnt countingSink
	st := SegmentStats{Path: f.path, Topic: s.info}
	_, _, err := drainGuarded(s, &cnt, 0, int(s.h.capacity/RecordAlign)+2)
	st.Messages, st.Bytes, st.Lost, st.Err = s.received.Load(), s.bytes.Load(), s.lost.Load(), err
	f.finished = true
	id := s.id
	s.close()
	if !c.opts.KeepFiles {
		if fi, err := lstat(f.path); err == nil && fi.id == id {
			os.Remove(f.path)
		}
	}
	c.mu.Lock()
	c.nLeft++
	c.leftover.Messages += st.Messages
	c.leftover.Bytes += st.Bytes
	c.leftover.Lost += st.Lost
	c.mu.Unlock()
	f.state.Store(&SegmentStats{Topic: s.info, Err: err})
	if c.opts.OnLeftover != nil {
		c.opts.OnLeftover(st)
	}
}

// countingSink takes a leftover segment's records without keeping them.
type countingSink struct{}

func (countingSink) Discover(ingest.TopicInfo) (ingest.TopicID, error) { return 0, nil }
func (countingSink) IngestAt(_ ingest.TopicID, _, _ int64, _ []byte) bool {
	return true
}
func (countingSink) Lost(ingest.TopicID, int64, uint64) {}
func (countingSink) Offline(ingest.TopicID)             {}
func (countingSink) Now() int64                         { return 0 }
