package engine

import "sync"

// dropSpans is how many time spans a dropLog keeps. More distinct drop
// times than that merge the two spans closest in time, so the log always
// holds every drop, exactly timed while drops are few.
const dropSpans = 8

// dropSpan is count drops captured in [first, last]; first and last are
// actual drop times.
type dropSpan struct {
	first, last int64
	count       uint64
}

// dropLog records when a topic's messages of one cause (oversize, skipped
// while busy) were dropped, so a dump can count the drops that fall in its
// window rather than the running total. Drops are rare and off the ingest
// fast path; a short mutex makes the log safe for concurrent use (concurrent
// producers of a MultiProducer topic, the dumper reading).
//
// The log holds at most dropSpans spans. A drop at the time of the newest
// span joins it; otherwise it opens a span, and when all are in use the two
// adjacent spans with the smallest gap between them merge first. Windows
// that do not cut through a merged span are counted exactly.
type dropLog struct {
	mu    sync.Mutex
	n     int // spans in use, oldest first
	total uint64
	spans [dropSpans]dropSpan
}

// record counts one drop at ns. Times never go back within the log: an
// earlier ns (concurrent producers) counts at the newest time recorded.
// It never allocates.
func (l *dropLog) record(ns int64) { l.recordN(ns, 1) }

// recordN counts n drops at ns (a source reporting a gap it found at once).
func (l *dropLog) recordN(ns int64, n uint64) {
	l.mu.Lock()
	l.total += n
	if l.n > 0 {
		s := &l.spans[l.n-1]
		if ns <= s.last {
			s.count += n
			l.mu.Unlock()
			return
		}
	}
	if l.n == dropSpans {
		l.mergeClosest()
	}
	l.spans[l.n] = dropSpan{first: ns, last: ns, count: n}
	l.n++
	l.mu.Unlock()
}

// mergeClosest merges the two adjacent spans with the smallest time gap
// (the older pair on a tie), freeing the last slot (l.mu held).
func (l *dropLog) mergeClosest() {
	best := 0
	for i := 1; i < l.n-1; i++ {
		if l.spans[i+1].first-l.spans[i].last < l.spans[best+1].first-l.spans[best].last {
			best = i
		}
	}
	a, b := &l.spans[best], l.spans[best+1]
	a.last = b.last
	a.count += b.count
	copy(l.spans[best+1:l.n], l.spans[best+2:l.n])
	l.n--
}

// window returns the drops captured in [from, to] and whether that count is
// exact. A merged span cut by the window is counted whole (never hiding a
// loss) and makes the count inexact: only its end points are known drop
// times.
func (l *dropLog) window(from, to int64) (n uint64, exact bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	exact = true
	for _, s := range l.spans[:l.n] {
		switch {
		case s.last < from || s.first > to:
		case s.first >= from && s.last <= to:
			n += s.count
		default:
			// Cut by the window: the end points inside are known drops,
			// the count-2 between them are not placed.
			if s.first >= from {
				n++
			}
			if s.last <= to {
				n++
			}
			if s.count > 2 {
				n += s.count - 2
				exact = false
			}
		}
	}
	return n, exact
}

// load returns the running total.
func (l *dropLog) load() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}
