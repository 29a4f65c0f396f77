//go:build cgo

package main

/*
#include <stdlib.h>
#include "edr_pack.h"
*/
import "C"

import (
	"runtime/debug"

	"errors"
	"sync"
	"unsafe"

	"github.com/edr-lite/edr-lite/pack"
)

// frame is a frame handle's object: a standalone frame (edr_frame_create,
// _from_parts, _from_record) or the frame a reader reads into (owner set;
// it shares the reader's lock and dies with it).
type frame struct {
	pf    *pack.Frame
	m     *mirror
	owner *reader
}

// view returns f's messages in C memory, rebuilt after a change.
func (f *frame) view() *mirror {
	if !f.m.valid {
		f.m.build(f.pf, 0, f.owner)
	}
	return f.m
}

func (f *frame) changed() { f.m.valid = false }

func newFrame(pf *pack.Frame) C.uint64_t {
	return C.uint64_t(register(&object{mu: &sync.Mutex{}, kind: kindFrame, f: &frame{pf: pf, m: &mirror{}}}))
}

// view of C memory as a Go slice (nil for NULL): not copied.
func cbytes(p unsafe.Pointer, n C.size_t) []byte {
	if p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(p), int(n))
}

func gostr(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

//export edrgo_frame_create
func edrgo_frame_create(id C.uint64_t, ns C.int64_t, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_frame_create: NULL out"))
	}
	*out = newFrame(pack.NewFrame(uint64(id), int64(ns)))
	return C.EDR_OK
}

//export edrgo_frame_from_parts
func edrgo_frame_from_parts(parts *C.edr_bytes, n C.size_t, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if (parts == nil && n > 0) || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_frame_from_parts: NULL argument"))
	}
	var ps [][]byte
	if n > 0 {
		for _, p := range unsafe.Slice(parts, int(n)) {
			if p.data == nil && p.len > 0 {
				return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_frame_from_parts: a part with NULL data"))
			}
			ps = append(ps, append([]byte{}, cbytes(unsafe.Pointer(p.data), p.len)...))
		}
	}
	pf, err := pack.FrameFromParts(ps)
	if err != nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, err)
	}
	*out = newFrame(pf)
	return C.EDR_OK
}

//export edrgo_frame_from_record
func edrgo_frame_from_record(rec unsafe.Pointer, n C.size_t, out *C.uint64_t, used *C.size_t, errp **C.char, offp *C.int64_t) C.int {
	if (rec == nil && n > 0) || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_frame_from_record: NULL argument"))
	}
	pf := &pack.Frame{}
	k, err := pack.DecodeFrame(append([]byte{}, cbytes(rec, n)...), pf)
	if err != nil {
		return creatorFail(errp, offp, 0, err)
	}
	if used != nil {
		*used = C.size_t(k)
	}
	*out = newFrame(pf)
	return C.EDR_OK
}

//export edrgo_frame_destroy
func edrgo_frame_destroy(h C.uint64_t) C.int {
	o, code := acquire(h, kindFrame)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	if o.f.owner != nil {
		return o.failf(C.EDR_EINVAL, "edr_frame_destroy: this frame belongs to its reader (edr_pack_close ends it)")
	}
	unregister(uint64(h))
	o.f.m.free()
	o.release()
	return C.EDR_OK
}

// frameCall runs fn on frame h, locked.
func frameCall(h C.uint64_t, fn func(o *object, f *frame) C.int) (code C.int) {
	o, code := acquire(h, kindFrame)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	if r := o.f.owner; r != nil {
		// A reader's frame aliases the file's mapping.
		defer r.catch(o, &code, debug.SetPanicOnFault(true))
	}
	return fn(o, o.f)
}

func nullArg(o *object, fn string) C.int { return o.failf(C.EDR_EINVAL, "%s: NULL argument", fn) }

//export edrgo_frame_id
func edrgo_frame_id(h C.uint64_t, id *C.uint64_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if id == nil {
			return nullArg(o, "edr_frame_id")
		}
		*id = C.uint64_t(f.pf.ID())
		return C.EDR_OK
	})
}

//export edrgo_frame_type
func edrgo_frame_type(h C.uint64_t, t *C.int32_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if t == nil {
			return nullArg(o, "edr_frame_type")
		}
		*t = C.int32_t(f.pf.Type())
		return C.EDR_OK
	})
}

//export edrgo_frame_time
func edrgo_frame_time(h C.uint64_t, ns *C.int64_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if ns == nil {
			return nullArg(o, "edr_frame_time")
		}
		*ns = C.int64_t(f.pf.Time())
		return C.EDR_OK
	})
}

//export edrgo_frame_done_time
func edrgo_frame_done_time(h C.uint64_t, ns *C.int64_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if ns == nil {
			return nullArg(o, "edr_frame_done_time")
		}
		*ns = C.int64_t(f.pf.DoneTime())
		return C.EDR_OK
	})
}

//export edrgo_frame_set_id
func edrgo_frame_set_id(h C.uint64_t, id C.uint64_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int { f.pf.SetID(uint64(id)); return C.EDR_OK })
}

//export edrgo_frame_set_type
func edrgo_frame_set_type(h C.uint64_t, t C.int32_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if t != C.EDR_FRAME_BUNDLE && t != C.EDR_FRAME_FREESYNC {
			return o.failf(C.EDR_EINVAL, "edr_frame_set_type: %d is not EDR_FRAME_BUNDLE or EDR_FRAME_FREESYNC", int32(t))
		}
		f.pf.SetType(pack.FrameType(t))
		return C.EDR_OK
	})
}

//export edrgo_frame_set_time
func edrgo_frame_set_time(h C.uint64_t, ns C.int64_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int { f.pf.SetTime(int64(ns)); return C.EDR_OK })
}

//export edrgo_frame_set_done_time
func edrgo_frame_set_done_time(h C.uint64_t, ns C.int64_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int { f.pf.SetDoneTime(int64(ns)); return C.EDR_OK })
}

//export edrgo_frame_set_seq
func edrgo_frame_set_seq(h C.uint64_t, i C.size_t, seq C.uint64_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if uint64(i) >= uint64(f.pf.Len()) {
			return o.failf(C.EDR_EINVAL, "edr_frame_set_seq: message %d of a frame of %d", uint64(i), f.pf.Len())
		}
		f.pf.SetSeq(int(i), uint64(seq))
		f.changed()
		return C.EDR_OK
	})
}

// How edrgo_frame_add keeps the bytes.
const (
	addMeta     = iota // meta copied, no data
	addCopied          // meta and data copied
	addBorrowed        // meta and data kept where they are (the caller's memory)
)

//export edrgo_frame_add
func edrgo_frame_add(h C.uint64_t, how C.int, name, channel *C.char, meta unsafe.Pointer, metaLen C.size_t,
	gen, done C.int64_t, data unsafe.Pointer, dataLen C.size_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if name == nil || (meta == nil && metaLen > 0) || (data == nil && dataLen > 0) {
			return nullArg(o, "edr_frame_add_meta")
		}
		n, ch, m, d := C.GoString(name), gostr(channel), cbytes(meta, metaLen), cbytes(data, dataLen)
		switch how {
		case addMeta:
			f.pf.AddMeta(n, ch, m, int64(gen), int64(done))
		case addCopied:
			f.pf.AddMetaWithData(n, ch, m, int64(gen), int64(done), d)
		default:
			f.pf.AddMetaBorrowed(n, ch, m, int64(gen), int64(done), d)
		}
		f.changed()
		return C.EDR_OK
	})
}

//export edrgo_frame_remove
func edrgo_frame_remove(h C.uint64_t, name, channel *C.char, byChannel C.int, removed *C.size_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if name == nil || (byChannel != 0 && channel == nil) {
			return nullArg(o, "edr_frame_remove")
		}
		var k int
		if byChannel != 0 {
			k = f.pf.RemoveChannel(C.GoString(name), C.GoString(channel))
		} else {
			k = f.pf.Remove(C.GoString(name))
		}
		if removed != nil {
			*removed = C.size_t(k)
		}
		f.changed()
		return C.EDR_OK
	})
}

//export edrgo_frame_messages
func edrgo_frame_messages(h C.uint64_t, msgs **C.edr_message, n *C.size_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if msgs == nil || n == nil {
			return nullArg(o, "edr_frame_messages")
		}
		m := f.view()
		*msgs, *n = m.messages(), C.size_t(m.n)
		return C.EDR_OK
	})
}

// ownedStrings returns list as an owned char*[] with the strings in the
// same allocation.
func ownedStrings(list []string) **C.char {
	ptrs := len(list) * int(unsafe.Sizeof((*C.char)(nil)))
	size := ptrs
	for _, s := range list {
		size += len(s) + 1
	}
	p := allocOwned(size)
	arr := unsafe.Slice((**C.char)(p), max(len(list), 1))
	b := unsafe.Slice((*byte)(p), size)
	at := ptrs
	for i, s := range list {
		arr[i] = (*C.char)(unsafe.Pointer(&b[at]))
		at += copy(b[at:], s)
		b[at] = 0
		at++
	}
	return (**C.char)(p)
}

//export edrgo_frame_topics
func edrgo_frame_topics(h C.uint64_t, list ***C.char, n *C.size_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if n == nil {
			return nullArg(o, "edr_frame_topics")
		}
		ts := f.pf.Topics()
		*n = C.size_t(len(ts))
		if list != nil {
			*list = ownedStrings(ts)
		}
		return C.EDR_OK
	})
}

//export edrgo_frame_channels
func edrgo_frame_channels(h C.uint64_t, name *C.char, list ***C.char, n *C.size_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if name == nil || n == nil {
			return nullArg(o, "edr_frame_channels")
		}
		cs := f.pf.Channels(C.GoString(name))
		*n = C.size_t(len(cs))
		if list != nil {
			*list = ownedStrings(cs)
		}
		return C.EDR_OK
	})
}

//export edrgo_frame_blocks
func edrgo_frame_blocks(h C.uint64_t, name, channel *C.char, blocks **C.edr_block, n *C.size_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if name == nil || n == nil {
			return nullArg(o, "edr_frame_blocks")
		}
		nm, ch := C.GoString(name), gostr(channel)
		// The messages the view lists: a reader's filter's, else all.
		m := f.view()
		var idx []int
		for i := range m.n {
			if pm := f.pf.Message(int(m.src[i])); pm.Name == nm && pm.Channel == ch {
				idx = append(idx, i)
			}
		}
		*n = C.size_t(len(idx))
		if blocks == nil {
			return C.EDR_OK
		}
		p := allocOwned(len(idx) * int(unsafe.Sizeof(C.edr_block{})))
		out := unsafe.Slice((*C.edr_block)(p), max(len(idx), 1))
		msgs := unsafe.Slice(m.msgs, max(m.n, 1))
		for j, i := range idx {
			msg := &msgs[i]
			out[j] = C.edr_block{gen_ts: msg.gen_ts, done_ts: msg.done_ts, meta: msg.meta, meta_len: msg.meta_len,
				data: msg.data, data_len: msg.data_len}
		}
		*blocks = (*C.edr_block)(p)
		return C.EDR_OK
	})
}

//export edrgo_frame_parts
func edrgo_frame_parts(h C.uint64_t, parts **C.edr_bytes, n *C.size_t) C.int {
	return frameCall(h, func(o *object, f *frame) C.int {
		if n == nil {
			return nullArg(o, "edr_frame_parts")
		}
		if parts == nil {
			*n = C.size_t(1 + f.pf.NumBlocks())
			return C.EDR_OK
		}
		ps := f.pf.Parts()
		head := len(ps) * int(unsafe.Sizeof(C.edr_bytes{}))
		size := head
		for _, b := range ps {
			size += len(b)
		}
		p := allocOwned(size)
		arr := unsafe.Slice((*C.edr_bytes)(p), len(ps))
		b := unsafe.Slice((*byte)(p), size)
		at := head
		for i, part := range ps {
			arr[i] = C.edr_bytes{data: (*C.uint8_t)(unsafe.Pointer(&b[min(at, size-1)])), len: C.size_t(len(part))}
			at += copy(b[at:], part)
		}
		*parts, *n = (*C.edr_bytes)(p), C.size_t(len(ps))
		return C.EDR_OK
	})
}
