package engine

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync/atomic"
)

// Ring layout. A ring is a byte buffer whose size is a power of two (an
// arena block). Positions are monotonically increasing byte offsets; the
// physical offset of position p is p & mask. Each entry is
//
//	+--------+--------+--------+--------+--------+------------------+-----+
//	| word0  |  seq   | capNs  | genNs  | cumLen | payload (len)    | pad |
//	+--------+--------+--------+--------+--------+------------------+-----+
//	0        8        16       24       32       40               40+len  to 8
//
// word0 holds the payload length (low 32 bits; the high 32 bits are zero).
// cumLen is the sum of the payload lengths of every message the ring has
// stored up to and including this one, so the byte counter costs no extra
// atomic store. An entry never straddles the end of the buffer: when the
// space left before the end is too small, the writer stores wrapMark in
// word0 there and continues at physical offset 0.
const (
	entryHeaderSize = 40
	entryAlign      = 8
	wrapMark        = ^uint64(0)
	// noEntry is the value of ring.last before the first message.
	noEntry = ^uint64(0)
	// minRingSize is the smallest ring buffer accepted.
	minRingSize = 256
)

// entrySize is the space an entry with an n-byte payload takes in the ring.
func entrySize(n uint64) uint64 {
	return (entryHeaderSize + n + entryAlign - 1) &^ (entryAlign - 1)
}

// ringConfig are the per-topic limits a ring enforces.
type ringConfig struct {
	// maxPacket is the largest payload accepted (0 = as large as fits).
	maxPacket int
	// retentionNs evicts entries whose capture time is older than the
	// newest capture time minus retentionNs (0 = keep until space runs out).
	retentionNs int64
	// keepLast pins the last keepLast entries against age eviction (never
	// against the byte cap).
	keepLast uint64
}

// TopicCounters is a snapshot of one topic's counters. Written, Bytes and the
// Held figures describe the ring; the rest count drops by cause.
type TopicCounters struct {
	Written          uint64 // messages stored
	Bytes            uint64 // payload bytes stored
	EvictedAge       uint64 // entries evicted because they were older than the retention
	EvictedSize      uint64 // entries evicted to make room (byte cap)
	RejectedOversize uint64 // messages larger than max packet or the ring, never stored
	LostToReaders    uint64 // entries readers skipped because the writer overwrote them first
	RejectedOffline  uint64 // messages ingested while the topic was offline, never stored
	SkippedBusy      uint64 // messages dropped while a dump was written (BusySkipData)
	LostAtSource     uint64 // messages the source reported lost before they reached the recorder (Sink.Lost)
	HeldBytes        uint64 // bytes of ring space currently holding entries
	HeldMessages     uint64 // entries currently held
	OldestNs         int64  // capture time of the oldest entry held (0 when empty)
	NewestNs         int64  // capture time of the newest entry held (0 when empty)
}

type pad [64]byte

// maxSegments is how many segments a ring is divided into for eviction
// (fewer for small rings: at least minSegmentBytes each, at least 4).
// The writer remembers the first entry starting in each segment (a
// checkpoint), so evicting for space jumps the tail from checkpoint to
// checkpoint instead of reading every evicted entry's header, and the tail
// is published about once per segment.
const (
	maxSegments     = 64
	minSegments     = 4
	minSegmentBytes = 1024
)

// checkpoint describes the first entry starting in a segment.
type checkpoint struct {
	pos   uint64 // its position (absolute: identifies the segment and lap)
	seq   uint64
	cum   uint64 // payload bytes stored before it
	capNs int64
}

// ring is a single-writer byte ring of timestamped messages living in
// caller-provided memory (an arena block).
//
// The writer (append) is not safe for concurrent use: exactly one goroutine
// at a time may call it. Readers (cursors, snapshot) may run concurrently with
// the writer and with each other; see ring_read.go for how they validate what
// they read.
type ring struct {
	_ noCopy
	// Writer-owned fields: read and written only by the writer goroutine.
	buf      []byte
	mask     uint64
	size     uint64
	segShift uint         // log2 of the segment size
	segMask  uint64       // len(cps) - 1
	curSeg   uint64       // absolute segment of the newest entry's start
	cps      []checkpoint // one per segment, indexed by absolute segment & segMask
	ageSlack int64        // extra age tolerated before evicting, for the same reason
	cfg      ringConfig
	maxLen   uint64 // effective max payload
	wHead    uint64 // position where the next entry goes
	wTail    uint64 // position of the oldest entry (== wHead when empty)
	nextSeq  uint64 // seq of the next entry
	tailSeq  uint64 // seq of the entry at wTail
	tailCap  int64  // capture time of the entry at wTail
	tailCum  uint64 // payload bytes stored before the entry at wTail
	lastCap  int64  // newest capture time stored (capture times never go back)
	cumLen   uint64 // payload bytes stored so far
	evAge    uint64
	evSize   uint64
	// evictedBelow: every entry evicted so far was captured before it.
	evictedBelow int64
	res          reservation // the entry reserved and not yet committed
	st           staging     // the run of entries staged and not yet committed (ring_batch.go)

	_ pad
	// last is the position of the newest committed entry (noEntry before
	// the first). Stored once per message, after the entry's bytes.
	last atomic.Uint64
	_    pad
	// tail is the position of the oldest entry that may still be read.
	// Stored before any byte at or behind it is overwritten.
	tail atomic.Uint64
	_    pad
	// Counters published by the writer when they change (rare events) and
	// by readers.
	pubEvAge  atomic.Uint64
	pubEvSize atomic.Uint64
	// pubEvictedBelow publishes evictedBelow with the tail.
	pubEvictedBelow atomic.Int64
	// oversize logs when messages too large were rejected (its own lock;
	// touched only on that rare path).
	oversize dropLog
	// tailVer versions (tail, pubTailSeq, pubTailCum): odd while the
	// writer updates them, so a reader can take the three consistently.
	tailVer    atomic.Uint64
	pubTailSeq atomic.Uint64 // seq of the entry at tail
	pubTailCum atomic.Uint64 // payload bytes stored before the entry at tail
	lost       atomic.Uint64
}

// noCopy makes go vet's copylocks check flag copies of types holding atomics.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// newRing makes a ring over buf, whose length must be a power of two >=
// minRingSize. The ring does not own buf.
func newRing(buf []byte, cfg ringConfig) (*ring, error) {
	n := uint64(len(buf))
	if n < minRingSize || n&(n-1) != 0 {
		return nil, fmt.Errorf("engine: ring buffer of %d bytes is not a power of two >= %d", n, minRingSize)
	}
	maxLen := n - entryHeaderSize
	if cfg.maxPacket > 0 && uint64(cfg.maxPacket) < maxLen {
		maxLen = uint64(cfg.maxPacket)
	}
	nseg := uint64(maxSegments)
	for nseg > minSegments && n/nseg < minSegmentBytes {
		nseg /= 2
	}
	r := &ring{buf: buf, mask: n - 1, size: n, segShift: uint(bits.TrailingZeros64(n / nseg)), segMask: nseg - 1,
		cps: make([]checkpoint, nseg), curSeg: ^uint64(0), cfg: cfg, maxLen: maxLen}
	if cfg.retentionNs > 0 {
		r.ageSlack = cfg.retentionNs / 32
	}
	r.last.Store(noEntry)
	return r, nil
}

// append stores one message. It returns false (and counts the message) when
// the payload is larger than the ring's max packet. It never blocks, never
// allocates and makes no system call; it may evict many old entries.
// Capture times are clamped so they never go back within one ring.
func (r *ring) append(capNs, genNs int64, p []byte) bool {
	n := uint64(len(p))
	pos, capNs, ok := r.place(capNs, n)
	if !ok {
		return false
	}
	phys := pos & r.mask
	copy(r.buf[phys+entryHeaderSize:phys+entryHeaderSize+n], p)
	r.publish(pos, n, capNs, genNs)
	return true
}

// reservation is an entry whose room the writer has made (reserve) but not
// yet published (commit) or dropped (abort). Writer only.
type reservation struct {
	active       bool
	pos          uint64 // the entry's position (after any wrap marker)
	n            uint64
	capNs, genNs int64
}

// reserve makes room for an n-byte entry, as append does, and returns the
// space for its payload: the caller fills it, then calls commit to publish
// the entry or abort to drop it. Until commit, readers see nothing of it:
// its bytes lie at or past wHead, beyond last. Making room (eviction, the
// wrap marker, the tail) is done here and stays done after an abort; that
// leaves the ring consistent (an aborted entry is as if it had never been
// asked for, except for the evictions). The same rejections as append
// (false, counted). Writer only.
func (r *ring) reserve(capNs, genNs int64, n uint64) ([]byte, bool) {
	pos, capNs, ok := r.place(capNs, n)
	if !ok {
		return nil, false
	}
	r.res = reservation{active: true, pos: pos, n: n, capNs: capNs, genNs: genNs}
	phys := pos & r.mask
	return r.buf[phys+entryHeaderSize : phys+entryHeaderSize+n : phys+entryHeaderSize+n], true
}

// commit publishes the reserved entry; false when there is none.
func (r *ring) commit() bool {
	if !r.res.active {
		return false
	}
	r.res.active = false
	r.publish(r.res.pos, r.res.n, r.res.capNs, r.res.genNs)
	return true
}

// abort drops the reserved entry. Nothing of it was published.
func (r *ring) abort() { r.res.active = false }

// place makes room for an entry with an n-byte payload and returns its
// position (after a wrap marker, which it writes and makes part of the
// ring: wHead moves past it) and its clamped capture time. Everything it
// changes is consistent on its own, so an entry that is never published
// (an aborted or abandoned reservation) leaves a valid ring. It drops any
// reservation or staged run still open. Writer only.
func (r *ring) place(capNs int64, n uint64) (pos uint64, _ int64, _ bool) {
	r.res.active = false
	if r.st.active {
		r.abortBatch()
	}
	if n > r.maxLen {
		r.oversize.record(max(capNs, r.lastCap))
		return 0, 0, false
	}
	pos, capNs = r.placeRoom(capNs, entrySize(n))
	return pos, capNs, true
}

// placeRoom is place for sz bytes of ring (one entry, or a staged run of
// entries as one block, ring_batch.go), sz <= the ring's size.
func (r *ring) placeRoom(capNs int64, sz uint64) (pos uint64, _ int64) {
	if capNs < r.lastCap {
		capNs = r.lastCap
	}
	r.lastCap = capNs
	pos = r.wHead
	phys := pos & r.mask
	var skip uint64
	if r.size-phys < sz {
		skip = r.size - phys
	}
	oldTail := r.wTail
	// Every entry starting below end-size shares physical bytes with the
	// new entry (or its wrap marker) and must go first.
	if end := pos + skip + sz; end > r.size && end-r.size > r.wTail {
		r.evictTo(end - r.size)
	}
	if r.cfg.retentionNs > 0 && r.wTail != r.wHead && capNs-r.tailCap > r.cfg.retentionNs+r.ageSlack {
		r.evictOlder(capNs - r.cfg.retentionNs)
	}
	if r.wTail == r.wHead {
		// Empty (at start, or everything evicted): the new entry will be
		// the oldest. Readers behind it jump here and wait for it.
		r.wTail = pos + skip
		r.tailSeq = r.nextSeq
		r.tailCap = capNs
		r.tailCum = r.cumLen
	}
	if r.wTail != oldTail {
		r.publishTail()
	}
	if skip > 0 {
		binary.LittleEndian.PutUint64(r.buf[phys:], wrapMark)
		pos += skip
		r.wHead = pos // the marker is part of the ring whether or not the entry is published
	}
	return pos, capNs
}

// publish writes the header of the entry at pos (its payload is in place)
// and commits it: readers may read it from the store of last on.
func (r *ring) publish(pos, n uint64, capNs, genNs int64) {
	if g := pos >> r.segShift; g != r.curSeg {
		r.curSeg = g
		r.cps[g&r.segMask] = checkpoint{pos: pos, seq: r.nextSeq, cum: r.cumLen, capNs: capNs}
	}
	phys := pos & r.mask
	e := r.buf[phys : phys+entryHeaderSize]
	binary.LittleEndian.PutUint64(e[0:], n)
	binary.LittleEndian.PutUint64(e[8:], r.nextSeq)
	binary.LittleEndian.PutUint64(e[16:], uint64(capNs))
	binary.LittleEndian.PutUint64(e[24:], uint64(genNs))
	r.cumLen += n
	binary.LittleEndian.PutUint64(e[32:], r.cumLen)
	r.nextSeq++
	r.wHead = pos + entrySize(n)
	r.last.Store(pos) // commit: readers may now read the entry at pos
}

// evictTo evicts every entry starting below need, and more up to a
// checkpoint at least one segment further, so the next eviction (and tail
// publication) is a segment away. It reads no entry header. When that
// empties the ring the tail jumps to the head.
func (r *ring) evictTo(need uint64) {
	k := need >> r.segShift
	for g := k + 2; g<<r.segShift < r.wHead; g++ {
		if r.tailToCheckpoint(g, need) {
			return
		}
	}
	// No entry starts two or more segments on: try the nearer ones before
	// emptying the ring (a few large entries).
	if r.tailToCheckpoint(k+1, need) || r.tailToCheckpoint(k, need) {
		return
	}
	r.evSize += r.nextSeq - r.tailSeq
	r.evictedBelow = max(r.evictedBelow, r.lastCap+1)
	r.wTail, r.tailSeq, r.tailCum = r.wHead, r.nextSeq, r.cumLen
}

// tailToCheckpoint evicts up to the first entry starting in segment g if
// there is one, at or after need, still held.
func (r *ring) tailToCheckpoint(g, need uint64) bool {
	cp := &r.cps[g&r.segMask]
	if cp.pos>>r.segShift != g || cp.pos < need || cp.pos >= r.wHead {
		return false // no entry starts in segment g (this lap)
	}
	r.evSize += cp.seq - r.tailSeq
	r.evictedBelow = max(r.evictedBelow, cp.capNs+1)
	r.setTail(cp)
	return true
}

// setTail moves the tail to a checkpointed entry.
func (r *ring) setTail(cp *checkpoint) {
	r.wTail, r.tailSeq, r.tailCum, r.tailCap = cp.pos, cp.seq, cp.cum, cp.capNs
}

// evictOlder evicts entries captured before cutoff, keeping the last
// keepLast entries: whole segments first (capture times never go back, so
// every entry before a checkpoint older than cutoff is older too), then
// entry by entry.
func (r *ring) evictOlder(cutoff int64) {
	for g := r.wTail>>r.segShift + 1; g<<r.segShift < r.wHead; g++ {
		cp := &r.cps[g&r.segMask]
		if cp.pos>>r.segShift != g || cp.pos <= r.wTail || cp.pos >= r.wHead {
			continue
		}
		if cp.capNs >= cutoff || r.nextSeq+1-cp.seq < r.cfg.keepLast {
			break
		}
		r.evAge += cp.seq - r.tailSeq
		r.evictedBelow = max(r.evictedBelow, cutoff)
		r.setTail(cp)
	}
	for r.wTail != r.wHead && r.tailCap < cutoff && r.nextSeq+1-r.tailSeq > r.cfg.keepLast {
		r.evictedBelow = max(r.evictedBelow, cutoff)
		r.evictOne(&r.evAge)
		r.loadTailCap()
	}
}

// evictOne drops the entry (or wrap marker) at wTail. Writer only.
func (r *ring) evictOne(counter *uint64) {
	phys := r.wTail & r.mask
	w0 := binary.LittleEndian.Uint64(r.buf[phys:])
	if w0 == wrapMark {
		r.wTail += r.size - phys
		return
	}
	r.wTail += entrySize(w0)
	r.tailSeq++
	r.tailCum += w0
	*counter++
}

// loadTailCap skips a wrap marker at wTail and caches the capture time of the
// oldest entry. Writer only.
func (r *ring) loadTailCap() {
	if r.wTail == r.wHead {
		return
	}
	phys := r.wTail & r.mask
	if binary.LittleEndian.Uint64(r.buf[phys:]) == wrapMark {
		r.wTail += r.size - phys
		if r.wTail == r.wHead {
			return
		}
		phys = 0
	}
	r.tailCap = int64(binary.LittleEndian.Uint64(r.buf[phys+16:]))
}

// publishTail makes the new tail visible to readers before the writer
// overwrites anything behind it. Swap (not Store) so that on weakly ordered
// CPUs the following plain stores cannot become visible before it (see
// ring_read.go).
func (r *ring) publishTail() {
	// Before the tail: a reader that sees the new tail sees this bound.
	r.pubEvictedBelow.Store(r.evictedBelow)
	r.tailVer.Add(1)
	r.pubTailSeq.Store(r.tailSeq)
	r.pubTailCum.Store(r.tailCum)
	r.tail.Swap(r.wTail)
	r.tailVer.Add(1)
	r.pubEvSize.Store(r.evSize)
	r.pubEvAge.Store(r.evAge)
}
