//go:build cgo

package main

/*
#include <stdlib.h>
#include "edr_pack.h"
*/
import "C"

import (
	"unsafe"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/pack"
)

// mirror is a frame's messages as C sees them: an edr_message array and an
// arena for the bytes that must be copied, both C memory owned by the
// handle and reused frame after frame (they grow to the largest frame and
// never shrink), so a read loop allocates nothing once they are grown.
//
// Bytes inside [lo, hi), the file's read-only mapping or the caller's own
// memory (edr_pack_open_mem), are not Go memory and outlive the view: they
// are handed out in place. Everything else (names, which are Go strings;
// decompressed data; anything read from a stream) is copied into the
// arena, so no Go pointer ever reaches C.
type mirror struct {
	msgs     *C.edr_message
	msgCap   int
	n        int
	arena    unsafe.Pointer
	arenaCap int
	lo, hi   uintptr
	valid    bool // msgs[:n] describes the frame as it is
}

func (m *mirror) free() {
	C.free(unsafe.Pointer(m.msgs))
	C.free(m.arena)
	*m = mirror{}
}

func (m *mirror) inPlace(b []byte) bool {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return len(b) > 0 && p >= m.lo && p+uintptr(len(b)) <= m.hi
}

// grow makes room for n messages and arena bytes.
func (m *mirror) grow(n, arena int) {
	if n > m.msgCap {
		c := max(n, 2*m.msgCap, 16)
		p := C.realloc(unsafe.Pointer(m.msgs), C.size_t(c)*C.size_t(unsafe.Sizeof(C.edr_message{})))
		if p == nil {
			panic("libedrpack: out of memory")
		}
		m.msgs, m.msgCap = (*C.edr_message)(p), c
	}
	if arena > m.arenaCap {
		c := max(arena, 2*m.arenaCap, 4096)
		C.free(m.arena) // nothing in it is kept across builds
		m.arena = C.malloc(C.size_t(c))
		if m.arena == nil {
			panic("libedrpack: out of memory")
		}
		m.arenaCap = c
	}
}

// build describes f in C memory. mcapTime: a message's time is its capture
// time as recorded (MCAP log_time), else dumpfile.MessageTime.
func (m *mirror) build(f *pack.Frame, mcapTime bool) {
	n := f.Len()
	need := 0
	for i := 0; i < n; i++ {
		msg := f.Message(i)
		need += len(msg.Name) + 1 + len(msg.Channel) + 1
		if !m.inPlace(msg.Meta) {
			need += len(msg.Meta)
		}
		if d := f.Data(i); !m.inPlace(d) {
			need += len(d)
		}
	}
	m.grow(n, need+1) // +1: a 0-length block at the very end still points at a byte
	arena := unsafe.Slice((*byte)(m.arena), m.arenaCap)
	p := 0
	str := func(s string) *C.char {
		at := p
		p += copy(arena[p:], s)
		arena[p] = 0
		p++
		return (*C.char)(unsafe.Pointer(&arena[at]))
	}
	bytes := func(b []byte, present bool) *C.uint8_t {
		switch {
		case !present:
			return nil
		case m.inPlace(b):
			return (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b)))
		}
		at := p
		p += copy(arena[p:], b)
		return (*C.uint8_t)(unsafe.Pointer(&arena[at])) // a 0-length block points at a valid byte
	}
	out := unsafe.Slice(m.msgs, max(n, 1))
	for i := 0; i < n; i++ {
		msg := f.Message(i)
		data := f.Data(i)
		t := dumpfile.MessageTime(&msg, f.Time())
		if mcapTime {
			t = msg.DoneTs
		}
		out[i] = C.edr_message{
			name: str(msg.Name), name_len: C.size_t(len(msg.Name)),
			channel: str(msg.Channel), channel_len: C.size_t(len(msg.Channel)),
			meta: bytes(msg.Meta, len(msg.Meta) > 0), meta_len: C.size_t(len(msg.Meta)),
			data: bytes(data, data != nil), data_len: C.size_t(len(data)),
			gen_ts: C.int64_t(msg.GenTs), done_ts: C.int64_t(msg.DoneTs), time_ns: C.int64_t(t),
			data_index: C.int32_t(msg.DataIndex),
		}
	}
	m.n, m.valid = n, true
}

// messages returns the built array (NULL when empty).
func (m *mirror) messages() *C.edr_message {
	if m.n == 0 {
		return nil
	}
	return m.msgs
}
