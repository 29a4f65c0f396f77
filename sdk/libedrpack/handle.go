//go:build cgo

package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -std=gnu11 -Wall
#include <stdlib.h>
#include "edr_pack.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

func main() {}

// kind is what a handle names.
type kind uint8

const (
	kindReader kind = iota + 1
	kindWriter
	kindFrame
)

// object is what a handle names: a reader, a writer or a frame, with the
// last error of a call on it. mu is shared by a reader and the frame handle
// it reads into.
type object struct {
	mu     *sync.Mutex
	kind   kind
	closed bool
	err    string
	errOff int64
	cerr   *C.char // err as C memory, handed out by edr_last_error

	r *reader
	w *writer
	f *frame
}

// handles is the table of live objects. Handles count up from 1 and are
// never reused, so a closed handle stays unknown.
var handles = struct {
	sync.RWMutex
	m    map[uint64]*object
	next uint64
}{m: map[uint64]*object{}}

func register(o *object) uint64 {
	handles.Lock()
	defer handles.Unlock()
	handles.next++
	handles.m[handles.next] = o
	return handles.next
}

func unregister(h uint64) {
	handles.Lock()
	delete(handles.m, h)
	handles.Unlock()
}

func find(h C.uint64_t) *object {
	handles.RLock()
	o := handles.m[uint64(h)]
	handles.RUnlock()
	return o
}

// acquire looks h up, checks its kind and locks it; the caller unlocks.
func acquire(h C.uint64_t, kinds ...kind) (*object, C.int) {
	o := find(h)
	if o == nil {
		return nil, C.EDR_EBADHANDLE
	}
	ok := false
	for _, k := range kinds {
		ok = ok || o.kind == k
	}
	if !ok {
		return nil, C.EDR_EBADHANDLE
	}
	if !o.mu.TryLock() {
		return nil, C.EDR_EBUSY
	}
	if o.closed {
		o.mu.Unlock()
		return nil, C.EDR_EBADHANDLE
	}
	return o, C.EDR_OK
}

func (o *object) setErr(code C.int, msg string, off int64) C.int {
	o.err, o.errOff = msg, off
	return code
}

// fail records err on o and returns its code.
func (o *object) fail(err error) C.int {
	code, off := classify(err)
	return o.setErr(code, err.Error(), off)
}

func (o *object) failf(code C.int, format string, args ...any) C.int {
	return o.setErr(code, fmt.Sprintf("edr: "+format, args...), -1)
}

// classify maps an error to its code and the byte offset of the damage.
func classify(err error) (C.int, int64) {
	var pe *pack.CorruptError
	var me *mcap.CorruptError
	switch {
	case errors.Is(err, pack.ErrBadMagic), errors.Is(err, pack.ErrUnsupportedVersion),
		errors.Is(err, mcap.ErrBadMagic), errors.Is(err, dumpfile.ErrUnknownFormat):
		if errors.As(err, &pe) {
			return C.EDR_EFORMAT, pe.Offset
		}
		return C.EDR_EFORMAT, -1
	case errors.Is(err, pack.ErrShrunk) && errors.As(err, &pe):
		return C.EDR_EIO, pe.Offset // the file shrank while it was read: not damage
	case errors.As(err, &pe):
		return C.EDR_ECORRUPT, pe.Offset
	case errors.As(err, &me):
		return C.EDR_ECORRUPT, me.Offset
	case errors.Is(err, pack.ErrFrameTooLarge), errors.Is(err, pack.ErrUnsupportedCodec), errors.Is(err, pack.ErrBadMeta):
		return C.EDR_EINVAL, -1
	}
	return C.EDR_EIO, -1
}

// creatorFail reports a failure of a call that makes a handle through the
// wrapper's per-thread slot (edr_pack.c): msg is C memory the wrapper owns.
func creatorFail(errp **C.char, offp *C.int64_t, code C.int, err error) C.int {
	off := int64(-1)
	if code == 0 {
		code, off = classify(err)
	}
	if errp != nil {
		*errp = C.CString(err.Error())
	}
	if offp != nil {
		*offp = C.int64_t(off)
	}
	return code
}

// edrgo_last_error returns h's last failure as C memory the handle owns
// (replaced when a later failure is asked for, freed by close), "" when
// none, NULL when h is unknown or busy.
//
//export edrgo_last_error
func edrgo_last_error(h C.uint64_t) *C.char {
	o := find(h)
	if o == nil || !o.mu.TryLock() {
		return nil
	}
	defer o.mu.Unlock()
	if o.cerr == nil || C.GoString(o.cerr) != o.err {
		C.free(unsafe.Pointer(o.cerr))
		o.cerr = C.CString(o.err)
	}
	return o.cerr
}

// release frees what every object holds in C memory; o is locked.
func (o *object) release() {
	C.free(unsafe.Pointer(o.cerr))
	o.cerr = nil
	o.closed = true
}

//export edrgo_error_offset
func edrgo_error_offset(h C.uint64_t) C.int64_t {
	o := find(h)
	if o == nil || !o.mu.TryLock() {
		return -1
	}
	defer o.mu.Unlock()
	return C.int64_t(o.errOff)
}

// owned records the C allocations handed to the caller, so edr_free can
// refuse a pointer it did not hand out (or has already freed).
var owned = struct {
	sync.Mutex
	m map[uintptr]struct{}
}{m: map[uintptr]struct{}{}}

// allocOwned allocates n bytes (at least 1) of C memory for the caller.
func allocOwned(n int) unsafe.Pointer {
	p := C.malloc(C.size_t(max(n, 1)))
	if p == nil {
		panic("libedrpack: out of memory")
	}
	owned.Lock()
	owned.m[uintptr(p)] = struct{}{}
	owned.Unlock()
	return p
}

//export edrgo_free
func edrgo_free(p unsafe.Pointer) C.int {
	if p == nil {
		return C.EDR_OK
	}
	owned.Lock()
	_, ok := owned.m[uintptr(p)]
	delete(owned.m, uintptr(p))
	owned.Unlock()
	if !ok {
		return C.EDR_EINVAL
	}
	C.free(p)
	return C.EDR_OK
}

// cpack lays strings and bytes out one after the other in the tail of a C
// allocation whose head holds the structs that point into them (one
// allocation per result: one edr_free, or one free at close).
type cpack struct {
	b  []byte
	at int
}

// newCPack packs into the size bytes at p, after a head of head bytes.
func newCPack(p unsafe.Pointer, size, head int) cpack {
	return cpack{b: unsafe.Slice((*byte)(p), max(size, 1)), at: head}
}

// packSize is what cpack needs for strs (each with its NUL) and data.
func packSize(data int, strs ...string) int {
	n := data
	for _, s := range strs {
		n += len(s) + 1
	}
	return n
}

// str copies s, NUL-terminated.
func (c *cpack) str(s string) *C.char {
	p := (*C.char)(unsafe.Pointer(&c.b[c.at]))
	c.at += copy(c.b[c.at:], s)
	c.b[c.at] = 0
	c.at++
	return p
}

// bytes copies b; nil when b is empty and orNil, else a pointer to its
// first byte (a valid byte of the allocation even for 0 bytes).
func (c *cpack) bytes(b []byte, orNil bool) *C.uint8_t {
	if len(b) == 0 && orNil {
		return nil
	}
	p := (*C.uint8_t)(unsafe.Pointer(&c.b[min(c.at, len(c.b)-1)]))
	c.at += copy(c.b[c.at:], b)
	return p
}
