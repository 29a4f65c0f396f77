package engine

import "encoding/binary"

// Cursor positioning on top of the read protocol of ring_read.go: seeking
// to the oldest, newest or a time, reading into a Message, and anchoring a
// dump window's first sequence number.

// seekOldest positions c at the oldest entry held.
func (c *cursor) seekOldest() {
	c.pos, c.next, _ = c.r.tailState()
}

// seekNewest positions c just after the newest entry, so it returns only
// messages written from now on.
func (c *cursor) seekNewest() {
	r := c.r
	for {
		l := r.last.Load()
		if l == noEntry {
			c.pos, c.next = 0, 0
			return
		}
		t, ts, _ := r.tailState()
		if t > l {
			// Everything evicted: the next entry starts at or after t.
			c.pos, c.next = t, ts
			return
		}
		phys := l & r.mask
		if binary.LittleEndian.Uint64(r.buf[phys:]) == wrapMark {
			panic("BUG: engine: ring.last points at a wrap marker")
		}
		h, ok := r.readHeader(phys)
		if !c.valid(l) {
			continue
		}
		if !ok {
			panic("BUG: engine: corrupt entry header at the ring's newest position")
		}
		c.pos, c.next = l+entrySize(h.n), h.seq+1
		return
	}
}

// readInto copies the entry at c.pos into m (m.Data grown or reused) and
// advances. It returns false when c is caught up or the entry was captured
// after toNs (then it is not consumed). An entry overwritten while
// it was copied is never returned: it is counted as lost and skipped.
func (c *cursor) readInto(m *Message, toNs int64) bool {
	for {
		h, ok := c.peek()
		if !ok || h.capNs > toNs {
			return false
		}
		n := int(h.n)
		if cap(m.Data) < n {
			m.Data = make([]byte, n)
		}
		m.Data = m.Data[:n]
		if c.copyEntry(h, m.Data) {
			m.Seq, m.CaptureNs, m.GenNs = h.seq, h.capNs, h.genNs
			return true
		}
		// torn: peek resyncs and counts the loss
	}
}

// seekTime positions c at the first entry whose capture time is >= ns (or
// caught up when there is none). It scans headers from the oldest entry.
func (c *cursor) seekTime(ns int64) {
	c.seekOldest()
	for {
		h, ok := c.peek()
		if !ok || h.capNs >= ns {
			return
		}
		c.skip(h)
	}
}

// anchor finds the seq of the first entry captured at or after from, so
// that a dump can count the messages of its window that were overwritten
// before it read them (window messages = seqs from the anchor on). found
// reports whether such an entry is held. exact is false when the seq cannot
// be known: the entries just before the oldest one held were evicted and
// may have been in the window (the ring's evictedBelow bound is after
// from), or none is found and final is false (an
// entry written later may still be older than from). With final set
// (every message of the window is in), a scan that finds none anchors at
// the next seq to be written.
func (c *cursor) anchor(from int64, final bool) (seq uint64, exact, found bool) {
	c.seekOldest()
	prev, havePrev := uint64(0), false
	for {
		h, ok := c.peek()
		if !ok {
			exact = c.next == 0 || havePrev && prev+1 == c.next || c.r.pubEvictedBelow.Load() <= from
			return c.next, final && exact, false
		}
		if h.capNs >= from {
			// Exact when the entry before it was seen (older than from),
			// or nothing evicted can have been captured at or after from.
			exact = h.seq == 0 || havePrev && prev+1 == h.seq || c.r.pubEvictedBelow.Load() <= from
			return h.seq, exact, true
		}
		prev, havePrev = h.seq, true
		c.skip(h)
	}
}
