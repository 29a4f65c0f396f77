package live

import (
	"context"
	"sync"
	"sync/atomic"
)

// kinds of queued items
const (
	kData = iota // a message of a subscription
	kTime        // the server's time
	kText        // a JSON message (control: never dropped)
)

// itemOverhead is what one queued item costs beside its bytes, counted
// against the queue's bound so that many tiny messages are bounded too.
const itemOverhead = 64

// maxControlBytes bounds a client's queue of JSON messages (server info,
// advertisements, statuses, parameter values), which are never dropped:
// a client that lets more pile up is disconnected.
const maxControlBytes = 64 << 20

// item is one message waiting to be sent to a client.
type item struct {
	kind uint8
	sub  uint32 // subscription id (kData)
	ns   int64  // message or server time
	data []byte // payload (kData, shared between clients: read only) or JSON (kText)
	cnt  *topicCounts
}

func (it *item) size() int64 { return int64(len(it.data)) + itemOverhead }

// queue is a client's bounded queue: data items up to limit bytes (what
// does not fit is refused, and the caller counts it dropped), and
// control messages up to maxControlBytes. The pump and the client's
// reader add; the client's writer takes. Safe for concurrent use.
type queue struct {
	mu        sync.Mutex
	data      []item
	dataHead  int
	ctl       [][]byte
	ctlHead   int
	bytes     int64 // data bytes queued (with itemOverhead each)
	ctlBytes  int64
	limit     int64
	fullSince int64 // when an item was first refused since the writer last took one (0: not full)
	closed    bool
	wake      chan struct{}
	peak      atomic.Int64 // largest bytes seen
}

func newQueue(limit int64) *queue { return &queue{limit: limit, wake: make(chan struct{}, 1)} }

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// offer queues a data or time item unless it does not fit; a refused item
// marks the queue full at now (nowNs). An item larger than the whole
// bound is taken when the queue is empty, so every message can go out.
// A closed queue takes everything and sends nothing.
func (q *queue) offer(it item, nowNs int64) bool {
	n := it.size()
	q.mu.Lock()
	if q.closed { // the client is going: nothing more to count
		q.mu.Unlock()
		return true
	}
	if q.bytes > 0 && q.bytes+n > q.limit {
		if q.fullSince == 0 {
			q.fullSince = nowNs
		}
		q.mu.Unlock()
		return false
	}
	q.data = append(q.data, it)
	q.bytes += n
	if q.bytes > q.peak.Load() {
		q.peak.Store(q.bytes)
	}
	q.mu.Unlock()
	q.signal()
	return true
}

// fits reports whether an item of n bytes would be taken now; when it
// would not, the queue is marked full at nowNs as a refused offer does. The
// pump asks before copying a message no subscriber can take.
func (q *queue) fits(n int, nowNs int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.bytes == 0 || q.bytes+int64(n)+itemOverhead <= q.limit {
		return true
	}
	if q.fullSince == 0 {
		q.fullSince = nowNs
	}
	return false
}

// offerText queues a JSON message; false when the control bound is
// exceeded (the client must go).
func (q *queue) offerText(b []byte) bool {
	q.mu.Lock()
	if q.closed || q.ctlBytes+int64(len(b)) > maxControlBytes {
		q.mu.Unlock()
		return false
	}
	q.ctl = append(q.ctl, b)
	q.ctlBytes += int64(len(b))
	q.mu.Unlock()
	q.signal()
	return true
}

// next returns the next item to send, control messages first, waiting
// until there is one or ctx ends.
func (q *queue) next(ctx context.Context) (item, bool) {
	for {
		q.mu.Lock()
		if q.ctlHead < len(q.ctl) {
			b := q.ctl[q.ctlHead]
			q.ctl[q.ctlHead] = nil
			q.ctlHead++
			q.ctlBytes -= int64(len(b))
			if q.ctlHead == len(q.ctl) {
				q.ctl, q.ctlHead = q.ctl[:0], 0
			}
			q.mu.Unlock()
			return item{kind: kText, data: b}, true
		}
		if q.dataHead < len(q.data) {
			it := q.data[q.dataHead]
			q.data[q.dataHead] = item{}
			q.dataHead++
			q.bytes -= it.size()
			q.fullSince = 0
			if q.dataHead == len(q.data) {
				q.data, q.dataHead = q.data[:0], 0
			} else if q.dataHead > 1024 && q.dataHead*2 > len(q.data) {
				n := copy(q.data, q.data[q.dataHead:])
				clear(q.data[n:])
				q.data, q.dataHead = q.data[:n], 0
			}
			q.mu.Unlock()
			return it, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return item{}, false
		}
	}
}

// state returns the bytes queued and since when the queue is full (0:
// not full).
func (q *queue) state() (bytes, fullSince int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes, q.fullSince
}

// close empties the queue and refuses what comes after.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.data, q.ctl = nil, nil
	q.dataHead, q.ctlHead = 0, 0
	q.bytes, q.ctlBytes = 0, 0
	q.mu.Unlock()
}
