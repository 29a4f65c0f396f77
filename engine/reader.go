package engine

import (
	"math"
	"sync/atomic"

	"github.com/edr-lite/edr-lite/ingest"
)

// Reader follows one topic's ring without ever blocking its writer. A new
// Reader is positioned at the oldest message held.
//
// A Reader is not safe for concurrent use (one goroutine per Reader; several
// Readers of one topic are fine). Close it when done: an open Reader keeps
// the recorder's cache mapped after Recorder.Close.
type Reader struct {
	rec    *Recorder
	t      *topic
	c      cursor
	closed atomic.Bool
	// the entry ReadHeader returned last, for CopyPayload (lazyOK false:
	// none, or its payload was copied or found overwritten)
	lazyPos uint64
	lazyN   uint64
	lazyOK  bool
}

// NewReader returns a Reader of topic id positioned at its oldest message.
func (r *Recorder) NewReader(id ingest.TopicID) (*Reader, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	t := r.topic(id)
	if t == nil {
		return nil, errTopic(id)
	}
	r.readers++
	t.pins.Add(1)
	rd := &Reader{rec: r, t: t}
	rd.c.r = t.ring
	rd.c.seekOldest()
	return rd, nil
}

// Topic returns the id of the topic the Reader follows.
func (rd *Reader) Topic() ingest.TopicID { return rd.t.id }

// SeekOldest positions the Reader at the oldest message held.
func (rd *Reader) SeekOldest() { rd.c.seekOldest() }

// SeekNewest positions the Reader after the newest message: ReadInto returns
// only messages ingested from now on.
func (rd *Reader) SeekNewest() { rd.c.seekNewest() }

// SeekTime positions the Reader at the first message captured at or after
// ns (caught up when there is none). It scans from the oldest message.
func (rd *Reader) SeekTime(ns int64) { rd.c.seekTime(ns) }

// ReadInto copies the next message into m, reusing and growing m.Data. It
// returns false when the Reader is caught up (or closed). It never returns a
// message that was overwritten while being copied: such messages, and any
// the Reader fell behind on, are counted in Lost.
func (rd *Reader) ReadInto(m *Message) bool {
	return rd.ReadUntil(m, math.MaxInt64)
}

// ReadUntil is ReadInto limited to messages captured at or before toNs: it
// returns false, without consuming it, at the first later message.
func (rd *Reader) ReadUntil(m *Message, toNs int64) bool {
	rd.lazyOK = false
	if rd.closed.Load() || !rd.c.readInto(m, toNs) {
		return false
	}
	m.Topic = rd.t.id
	return true
}

// ReadHeader is ReadInto without the payload: it fills m's Topic, Seq,
// CaptureNs and GenNs, leaves m.Data alone, returns the payload's length
// and consumes the message. The payload stays in the ring: CopyPayload
// copies it for as long as the writer has not overwritten it, so a reader
// that needs a message's bytes only sometimes does not copy the others.
// It returns false when the Reader is caught up (or closed).
func (rd *Reader) ReadHeader(m *Message) (n int, ok bool) {
	rd.lazyOK = false
	if rd.closed.Load() {
		return 0, false
	}
	h, ok := rd.c.peek()
	if !ok {
		return 0, false
	}
	rd.lazyPos, rd.lazyN, rd.lazyOK = rd.c.pos, h.n, true
	rd.c.deliver(h)
	m.Topic, m.Seq, m.CaptureNs, m.GenNs = rd.t.id, h.seq, h.capNs, h.genNs
	return int(h.n), true
}

// CopyPayload copies the payload of the message the last ReadHeader
// returned into dst (reused and grown) and returns it. ok is false when
// there is none (no ReadHeader since the last read, or the Reader is
// closed) or the writer overwrote the message since ReadHeader: bytes that
// may be torn are never returned (the message is not counted in Lost: its
// header was delivered; the caller counts it).
func (rd *Reader) CopyPayload(dst []byte) (out []byte, ok bool) {
	if !rd.lazyOK || rd.closed.Load() {
		return dst[:0], false
	}
	rd.lazyOK = false
	pos, n := rd.lazyPos, rd.lazyN
	if !rd.c.valid(pos) {
		return dst[:0], false
	}
	if uint64(cap(dst)) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	if !rd.c.copyAt(pos, n, dst) {
		return dst[:0], false
	}
	return dst, true
}

// Lost returns how many messages this Reader skipped because the writer
// overwrote them before they were read.
func (rd *Reader) Lost() uint64 { return rd.c.lost }

// Close releases the Reader. It is idempotent.
func (rd *Reader) Close() error {
	if rd.closed.Swap(true) {
		return nil
	}
	rd.t.pins.Add(-1)
	rd.rec.maybeFree(rd.t)
	return rd.rec.releaseReader()
}

// ReadRange calls fn for every message of topic id captured in [fromNs,
// toNs], in order, with a Message reused between calls (copy what you keep).
// It stops early when fn returns false. It returns how many messages it
// delivered and how many in the range it lost to overwriting.
func (r *Recorder) ReadRange(id ingest.TopicID, fromNs, toNs int64, fn func(m *Message) bool) (delivered, lost uint64, err error) {
	rd, err := r.NewReader(id)
	if err != nil {
		return 0, 0, err
	}
	defer rd.Close()
	rd.SeekTime(fromNs)
	lost0 := rd.Lost()
	var m Message
	for rd.ReadUntil(&m, toNs) {
		delivered++
		if !fn(&m) {
			break
		}
	}
	return delivered, rd.Lost() - lost0, nil
}
