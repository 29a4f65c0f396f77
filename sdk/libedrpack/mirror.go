//go:build cgo

package main

/*
#include <stdlib.h>
#include "edr_pack.h"
*/
import "C"

import (
	"unsafe"

	"github.com/edr-lite/edr-lite/pack"
)

// mirror is a frame's messages as C sees them: an edr_message array and an
// arena for the bytes that must be copied, both C memory owned by the
// handle and reused frame after frame (they grow to the largest frame and
// never shrink), so a read loop allocates nothing once they are grown.
//
// Bytes inside [lo, hi), the caller's own memory (edr_pack_open_mem), are
// not Go memory and outlive the view: they are handed out in place.
// Everything else (data read from a file's mapping, which may shrink under
// it; decompressed data; anything read from a stream) is copied into the
// arena, so no Go pointer ever reaches C. A reader's messages point at
// their topic's names and type, C memory the reader made once (topics.go);
// a built frame's names are copied into the arena.
type mirror struct {
	msgs     *C.edr_message
	msgCap   int
	n        int
	arena    unsafe.Pointer
	arenaCap int
	lo, hi   uintptr
	valid    bool // msgs[:n] describes the frame as it is

	src []int32 // for each message of the view, its index in the frame
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

// build describes in C memory the messages of f from index from on that
// the reader r gives (its filter, their topics' names and types); r nil:
// a frame built by the caller, all its messages, names copied, no types.
func (m *mirror) build(f *pack.Frame, from int, r *reader) {
	n := f.Len()
	// The arena's size: every message's bytes, whether the filter keeps it
	// or not (the arena grows to the largest frame and is reused).
	need := 0
	for i := from; i < n; i++ {
		if !m.inPlace(f.Message(i).Meta) {
			need += len(f.Message(i).Meta)
		}
		if d := f.Data(i); !m.inPlace(d) {
			need += len(d)
		}
		if r == nil {
			need += len(f.Message(i).Name) + 1 + len(f.Message(i).Channel) + 1
		}
	}
	m.grow(n-from, need+1) // +1: a 0-length block at the very end still points at a byte
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
	var out []C.edr_message
	if n > from {
		out = unsafe.Slice(m.msgs, n-from)
	}
	m.src = m.src[:0]
	for i := from; i < n; i++ {
		msg := f.Message(i)
		o := &out[len(m.src)]
		if r != nil {
			s, t, ok := r.keep(&msg, f.Time())
			if !ok {
				continue
			}
			o.name, o.channel, o._type, o.time_ns = s.cname, s.cchan, r.typeOf(s), C.int64_t(t)
		} else {
			o.name, o.channel, o._type, o.time_ns = str(msg.Name), str(msg.Channel), nil, C.int64_t(pack.MessageTime(&msg, f.Time()))
		}
		data := f.Data(i)
		o.name_len, o.channel_len = C.size_t(len(msg.Name)), C.size_t(len(msg.Channel))
		o.meta, o.meta_len = bytes(msg.Meta, len(msg.Meta) > 0), C.size_t(len(msg.Meta))
		o.data, o.data_len = bytes(data, data != nil), C.size_t(len(data))
		o.gen_ts, o.done_ts = C.int64_t(msg.GenTs), C.int64_t(msg.DoneTs)
		o.data_index, o.has_seq, o.seq = C.int32_t(msg.DataIndex), 0, C.uint64_t(msg.Seq)
		if msg.HasSeq {
			o.has_seq = 1
		}
		m.src = append(m.src, int32(i))
	}
	m.n, m.valid = len(m.src), true
}

// messages returns the built array (NULL when empty).
func (m *mirror) messages() *C.edr_message {
	if m.n == 0 {
		return nil
	}
	return m.msgs
}
