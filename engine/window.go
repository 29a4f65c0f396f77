package engine

import (
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// The window API is how the dump pipeline (package dump) reads the rings:
// Select resolves and pins the windows a trigger asks for, a WindowCursor
// walks one window entry by entry without blocking the writer, Drops counts
// the messages dropped inside a window, and Unpin lets a destroy_on_offline
// ring go once the dump no longer needs it. See ARCHITECTURE.md ("The
// recorder and the dump pipeline").

// Window is one topic's part of a dump: the messages captured in
// [From, To], plus the topic's KeepLast newest messages before From.
// Select returns windows pinned: the topic's ring stays allocated until
// Unpin.
type Window struct {
	Topic ingest.TopicID
	Info  ingest.TopicInfo
	// Types is the topic's type history (oldest first, never empty): the
	// dump writes each message under the span its Seq falls in (TypeAt).
	// Info.Type is the last span's type.
	Types []TypeSpan
	// From and To bound the window in capture time (ns).
	From, To int64
	// Post is the topic's post window (0 for an only_front topic): the
	// dump is due once Post (plus the guard) has passed after the trigger.
	Post int64
	// KeepLast is how many messages before From the dump also takes.
	KeepLast uint64

	t *topic
}

// Selection asks for the windows of a trigger at TimeNs.
type Selection struct {
	TimeNs int64
	// Pre and Post, when set, override every selected topic's windows
	// (nil = the topic's own; zero is zero).
	Pre, Post *time.Duration
	// Topics are globs selecting topics (empty = every recorded topic).
	Topics []string
}

// Select resolves the window of every topic s selects (topic settings,
// only_front / only_back, the overrides in s) and pins each topic's ring.
// The caller must Unpin every window it got.
func (r *Recorder) Select(s Selection) []Window {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sel []Window
	for _, t := range r.topics {
		if t.freed || !selected(s.Topics, &t.info) {
			continue
		}
		st := &t.settings
		pre, post := st.pre, st.post
		if s.Pre != nil {
			pre = int64(*s.Pre)
		}
		if s.Post != nil {
			post = int64(*s.Post)
		}
		w := Window{Topic: t.id, Info: t.info, Types: t.spans(), From: s.TimeNs - pre, To: s.TimeNs + post, Post: post,
			KeepLast: st.ring.keepLast, t: t}
		if st.onlyFront {
			w.To, w.Post = s.TimeNs, 0
		}
		if st.onlyBack {
			w.From = s.TimeNs
		}
		t.pins.Add(1)
		sel = append(sel, w)
	}
	return sel
}

// selected reports whether globs (empty = all) select the topic.
func selected(globs []string, info *ingest.TopicInfo) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if matchTopic(g, info) {
			return true
		}
	}
	return false
}

// Unpin releases the pin Select took on each window's ring; a
// destroy_on_offline topic that is offline and no longer needed returns
// its ring to the arena.
func (r *Recorder) Unpin(ws ...Window) {
	for i := range ws {
		t := ws[i].t
		t.pins.Add(-1)
		r.maybeFree(t)
	}
}

// Drops counts the messages of w's topic dropped inside [w.From, w.To]:
// rejected as oversize, skipped while busy (Config.BusySkipData) and lost
// at the source (Sink.Lost). exact is false when a burst of drops the
// recorder no longer times one by one straddles the window's edge; the
// counts are then an upper bound.
func (r *Recorder) Drops(w *Window) (oversize, busy, lostAtSource uint64, exact bool) {
	t := w.t
	var e1, e2, e3 bool
	oversize, e1 = t.ring.oversize.window(w.From, w.To)
	busy, e2 = t.skippedBusy.window(w.From, w.To)
	lostAtSource, e3 = t.sourceLost.window(w.From, w.To)
	return oversize, busy, lostAtSource, e1 && e2 && e3
}

// SetBusy tells the recorder whether a dump is being written. With
// Config.BusySkipData, messages arriving while busy are dropped (counted
// per topic as SkippedBusy).
func (r *Recorder) SetBusy(busy bool) { r.busy.Store(busy) }

// Retain keeps the cache mapped after Close until done is called: a
// dumper still reading windows must not see the rings unmapped.
func (r *Recorder) Retain() (done func() error, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	r.readers++
	return r.releaseReader, nil
}

// Entry is the fixed part of one ring entry, as a WindowCursor peeks it.
type Entry struct {
	Size      uint64 // payload bytes
	Seq       uint64 // the topic's message sequence number
	CaptureNs int64
	GenNs     int64 // producer time, 0 when unknown
}

// WindowCursor reads one Window of a ring, entry by entry, in capture
// order, without blocking the writer: Peek the next entry, then Copy its
// payload out (or Skip it). An entry overwritten while it was copied is
// not delivered; it is counted in Lost. A WindowCursor is for one
// goroutine; it does not pin the ring (the Window does).
type WindowCursor struct {
	w *Window
	c cursor
}

// NewWindowCursor returns a cursor over w, not yet positioned (see
// Position and Anchor).
func NewWindowCursor(w *Window) *WindowCursor {
	wc := &WindowCursor{w: w}
	wc.c.r = w.t.ring
	return wc
}

// Position places the cursor at the window's first message, or at the
// KeepLast messages before it.
func (wc *WindowCursor) Position() {
	c := &wc.c
	c.seekTime(wc.w.From)
	keep := wc.w.KeepLast
	if keep == 0 {
		return
	}
	start := c.next
	c.seekOldest()
	for {
		h, ok := c.peek()
		if !ok || h.seq+keep >= start {
			return
		}
		c.skip(h)
	}
}

// Anchor finds the seq of the window's first message, so that a dump can
// count the messages of its window overwritten before it read them (the
// window's messages are the seqs from the anchor on). It moves the cursor
// (Position it again before reading). found reports whether such a
// message is held. exact is false when the seq cannot be known: the
// messages just before the oldest one held were evicted and may have been
// in the window, or none is found and final is false (a message written
// later may still be older than From). With final set (every message of
// the window is in), a scan that finds none anchors at the next seq.
func (wc *WindowCursor) Anchor(final bool) (seq uint64, exact, found bool) {
	return wc.c.anchor(wc.w.From, final)
}

// Peek returns the next entry of the window without consuming it; false
// when the cursor is caught up or the next entry was captured after To.
func (wc *WindowCursor) Peek() (Entry, bool) {
	h, ok := wc.c.peek()
	if !ok || h.capNs > wc.w.To {
		return Entry{}, false
	}
	return Entry{Size: h.n, Seq: h.seq, CaptureNs: h.capNs, GenNs: h.genNs}, true
}

// Copy copies the payload of the entry Peek returned as e into dst
// (len(dst) == e.Size) and consumes it. It returns false, consuming
// nothing, when the entry was overwritten while being copied: dst then
// holds garbage, and the next Peek counts the loss and moves on.
func (wc *WindowCursor) Copy(e Entry, dst []byte) bool {
	return wc.c.copyEntry(entryHeader{n: e.Size, seq: e.Seq, capNs: e.CaptureNs, genNs: e.GenNs}, dst)
}

// Skip consumes the entry Peek returned as e without copying it.
func (wc *WindowCursor) Skip(e Entry) {
	wc.c.skip(entryHeader{n: e.Size, seq: e.Seq, capNs: e.CaptureNs, genNs: e.GenNs})
}

// RingPos is where a borrowed entry lies in its ring (WindowCursor.Borrow).
type RingPos uint64

// Borrow consumes the entry Peek returned as e and returns its payload
// where it lies in the ring, not copied (its capacity is its length), and
// its place. The writer goes on overwriting the ring: whatever is read
// from data (a CRC, a copy, a write(2) from it) is intact only if
// Intact(at) reports true after the reading is done. An entry found
// overwritten must not be used: give it back with Overwritten, which
// counts it lost as Copy's torn entries are.
func (wc *WindowCursor) Borrow(e Entry) (data []byte, at RingPos) {
	c := &wc.c
	pos := c.pos
	start := pos&c.r.mask + entryHeaderSize
	data = c.r.buf[start : start+e.Size : start+e.Size]
	c.deliver(entryHeader{n: e.Size, seq: e.Seq, capNs: e.CaptureNs, genNs: e.GenNs})
	return data, RingPos(pos)
}

// Intact reports whether the entry Borrow placed at at is still intact:
// the writer has not begun overwriting it. What was read from it before
// the call (on this goroutine, or by a system call it made) was then read
// intact. Once false, it stays false.
func (wc *WindowCursor) Intact(at RingPos) bool { return wc.c.valid(uint64(at)) }

// Overwritten counts n borrowed entries that Intact found overwritten as
// lost (Lost, and the topic's LostToReaders).
func (wc *WindowCursor) Overwritten(n uint64) { wc.c.addLost(n) }

// Next is the seq of the next entry the cursor would deliver.
func (wc *WindowCursor) Next() uint64 { return wc.c.next }

// Lost is how many entries the cursor skipped because they were
// overwritten before it read them.
func (wc *WindowCursor) Lost() uint64 { return wc.c.lost }

// Guard is the padding of window boundaries (Config.Guard resolved): a
// dump is due its largest post window plus Guard after the trigger.
func (r *Recorder) Guard() time.Duration { return *r.cfg.Guard }
