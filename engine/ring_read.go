package engine

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
)

// Reading a ring without ever blocking its writer (a seqlock-style protocol).
//
// The writer publishes two positions:
//
//   - last: the start of the newest committed entry, stored (atomically)
//     after the entry's bytes are written;
//   - tail: the oldest position whose bytes are still intact, stored
//     (atomically, with Swap) *before* the writer overwrites any byte at a
//     position below it. tail only grows.
//
// A reader at position pos, with pos <= last, reads the entry's header and
// copies its payload with plain loads, then checks tail again (validate). If
// tail <= pos after the copy, no byte of the entry had been overwritten when
// it was read, because the writer announces every overwrite through tail
// before doing it. If tail > pos, the copy may be torn: it is discarded,
// never returned, and the reader resumes at tail, counting the entries it
// skipped as lost. A header whose length is impossible is treated the same
// way (it can only be torn); if it validates, the ring is corrupt and we
// panic with "BUG:".
//
// Memory-model reasoning. The Go memory model gives no guarantee to the
// racy plain loads of the payload, so the protocol rests on two ordering
// facts, which the integrity stress test (TestRingStressIntegrity) checks:
//
//  1. Writer: the Swap that publishes tail is a full read-modify-write
//     (XCHG on amd64, SWPAL or LDAXR/STLXR on arm64); plain stores after it
//     are not made visible before it on amd64 (TSO) or arm64 with LSE.
//  2. Reader: the payload loads must complete before the validating load
//     of tail. On amd64 loads are not reordered with older loads. On
//     weakly ordered CPUs an acquire load alone does not order *earlier*
//     loads, so before the validating load the reader performs an atomic
//     read-modify-write on a reader-private word (fence): its release half
//     orders the payload loads before it, its acquire half orders the
//     validating load after it.
//
// The reader's bookkeeping (tail, seq of the entry at tail) comes from a
// second, ordinary seqlock made only of atomics (tailVer, odd while the
// writer updates), so lost counts are exact: for every reader, delivered +
// lost == the entries written between its start and its position.
//
// The race detector does not see ring bytes (they live in an mmap'd arena
// outside the Go heap), so -race checks the atomics only; the checksummed
// stress test checks the bytes.

// cursor reads one ring. It is not safe for concurrent use; each reader owns
// its cursor. It never blocks the writer.
type cursor struct {
	_     noCopy
	r     *ring
	pos   uint64 // position of the next entry to read
	next  uint64 // seq of the entry at pos
	lost  uint64 // entries skipped because they were overwritten first
	fence atomic.Uint64
}

// entryHeader is the decoded fixed part of an entry.
type entryHeader struct {
	n     uint64
	seq   uint64
	capNs int64
	genNs int64
	cum   uint64
}

// tailState reads (tail, seq at tail, bytes before tail) consistently.
// While the writer is inside its update (tailVer odd) it spins, yielding
// its P every 64 loads: the writer may have been preempted there, and a
// reader spinning on every P without a call would keep it from running
// until the reader itself is preempted by a signal (seen under qemu-user,
// which delivers none to such a loop: TestRingStressIntegrity hung).
func (r *ring) tailState() (pos, seq, cum uint64) {
	for spins := 1; ; spins++ {
		v := r.tailVer.Load()
		if v&1 != 0 {
			if spins%64 == 0 {
				runtime.Gosched()
			}
			continue
		}
		pos, seq, cum = r.tail.Load(), r.pubTailSeq.Load(), r.pubTailCum.Load()
		if r.tailVer.Load() == v {
			return pos, seq, cum
		}
	}
}

// valid reports whether the entry at pos was intact when it was read (see
// the file comment for the fence).
func (c *cursor) valid(pos uint64) bool {
	c.fence.Add(1)
	return c.r.tail.Load() <= pos
}

// readHeader reads the header at pos (pos <= last, not a wrap marker check
// done by the caller). ok is false when the bytes cannot be a header; the
// caller validates before trusting either result.
func (r *ring) readHeader(phys uint64) (h entryHeader, ok bool) {
	b := r.buf[phys : phys+entryHeaderSize]
	h.n = binary.LittleEndian.Uint64(b[0:])
	if h.n > r.size-entryHeaderSize || phys+entrySize(h.n) > r.size {
		return h, false
	}
	h.seq = binary.LittleEndian.Uint64(b[8:])
	h.capNs = int64(binary.LittleEndian.Uint64(b[16:]))
	h.genNs = int64(binary.LittleEndian.Uint64(b[24:]))
	h.cum = binary.LittleEndian.Uint64(b[32:])
	return h, true
}

// peek returns the header of the entry at c.pos without consuming it.
// It returns false when c is caught up. Skipped and overwritten entries are
// counted as lost on the way.
func (c *cursor) peek() (entryHeader, bool) {
	r := c.r
	for {
		l := r.last.Load()
		if l == noEntry || c.pos > l {
			return entryHeader{}, false
		}
		if c.pos < r.tail.Load() {
			c.resync()
			continue
		}
		phys := c.pos & r.mask
		if binary.LittleEndian.Uint64(r.buf[phys:]) == wrapMark {
			if c.valid(c.pos) {
				c.pos += r.size - phys
			}
			continue
		}
		h, ok := r.readHeader(phys)
		if !c.valid(c.pos) {
			continue
		}
		if !ok {
			panic("BUG: engine: corrupt entry header in a ring")
		}
		return h, true
	}
}

// copyEntry copies the payload of the entry at c.pos, whose header peek
// returned as h, into dst (len(dst) == h.n) and consumes the entry. It
// returns false, consuming nothing, when the entry was overwritten while
// being copied; dst then holds garbage.
func (c *cursor) copyEntry(h entryHeader, dst []byte) bool {
	if !c.copyAt(c.pos, h.n, dst) {
		return false
	}
	c.deliver(h)
	return true
}

// copyAt copies the n-byte payload of the entry at pos into dst (len n)
// and reports whether the entry was still intact after the copy (else dst
// holds garbage).
func (c *cursor) copyAt(pos, n uint64, dst []byte) bool {
	phys := pos & c.r.mask
	copy(dst, c.r.buf[phys+entryHeaderSize:phys+entryHeaderSize+n])
	return c.valid(pos)
}

// skip consumes the entry at c.pos (whose header peek returned) without
// copying it.
func (c *cursor) skip(h entryHeader) {
	c.deliver(h)
}

// deliver advances past a validated entry.
func (c *cursor) deliver(h entryHeader) {
	if h.seq != c.next {
		// Cannot happen with exact bookkeeping; count rather than hide it.
		if h.seq > c.next {
			c.addLost(h.seq - c.next)
		}
	}
	c.next = h.seq + 1
	c.pos += entrySize(h.n)
}

// resync moves a cursor that fell behind the tail to the tail, counting the
// entries it skipped.
func (c *cursor) resync() {
	t, ts, _ := c.r.tailState()
	if c.pos >= t {
		return
	}
	if ts > c.next {
		c.addLost(ts - c.next)
	}
	c.pos, c.next = t, ts
}

func (c *cursor) addLost(n uint64) {
	c.lost += n
	c.r.lost.Add(n)
}
