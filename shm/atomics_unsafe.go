package shm

import (
	"sync/atomic"
	"unsafe"
)

// This file is the only one that turns mapped bytes into atomics. Every
// offset it is given is a constant from layout.go, 8-byte aligned, inside a
// mapping of at least HeaderSize bytes (checked by the callers).

// cursors are the run-time header fields, accessed atomically in place.
type cursors struct {
	write    *atomic.Uint64
	tail     *atomic.Uint64
	oversize *atomic.Uint64
	hbNs     *atomic.Int64
	state    *atomic.Uint32
	waiters  *atomic.Uint32 // nil when the header is mapped read-only
	futex    *uint32        // low 32 bits of write_cursor (little-endian)
	wakeCaps *atomic.Uint32 // producer: WakeDoorbell when it rings the doorbell
	bellIno  *atomic.Uint64 // producer: the inode of the doorbell it rings
	bellSlot *atomic.Uint32 // consumer: the hint bit to set; nil when read-only
}

func mapCursors(hdr []byte, writable bool) cursors {
	if len(hdr) < HeaderSize {
		panic("BUG: shm: header mapping shorter than HeaderSize")
	}
	p := unsafe.Pointer(unsafe.SliceData(hdr))
	c := cursors{
		write:    (*atomic.Uint64)(unsafe.Add(p, offWriteCursor)),
		tail:     (*atomic.Uint64)(unsafe.Add(p, offTailCursor)),
		oversize: (*atomic.Uint64)(unsafe.Add(p, offOversize)),
		hbNs:     (*atomic.Int64)(unsafe.Add(p, offHeartbeatNs)),
		state:    (*atomic.Uint32)(unsafe.Add(p, offState)),
		futex:    (*uint32)(unsafe.Add(p, offWriteCursor)),
		wakeCaps: (*atomic.Uint32)(unsafe.Add(p, offWakeCaps)),
		bellIno:  (*atomic.Uint64)(unsafe.Add(p, offDoorbellIno)),
	}
	if writable {
		c.waiters = (*atomic.Uint32)(unsafe.Add(p, offWaiters))
		c.bellSlot = (*atomic.Uint32)(unsafe.Add(p, offBellSlot))
	}
	return c
}

// mapBell returns the rings word and the hint bitmap of a doorbell mapping
// (DoorbellSize bytes, page-aligned).
func mapBell(mem []byte) (*atomic.Uint32, []atomic.Uint32) {
	if len(mem) != DoorbellSize {
		panic("BUG: shm: doorbell mapping is not DoorbellSize bytes")
	}
	p := unsafe.Pointer(unsafe.SliceData(mem))
	return (*atomic.Uint32)(unsafe.Add(p, offBellRings)),
		unsafe.Slice((*atomic.Uint32)(unsafe.Add(p, offBellHints)), DoorbellSlots/32)
}

// futexWord is an atomic word as a futex address.
func futexWord(a *atomic.Uint32) *uint32 { return (*uint32)(unsafe.Pointer(a)) }

// ringsWord is the rings word as a futex address.
func (b *bell) ringsWord() *uint32 { return futexWord(b.rings) }

func bigEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 0
}
