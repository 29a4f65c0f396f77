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
	}
	if writable {
		c.waiters = (*atomic.Uint32)(unsafe.Add(p, offWaiters))
	}
	return c
}

func bigEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 0
}
