//go:build cgo

package main

/*
#include <stdlib.h>
#include "edr_pack.h"
ptrdiff_t edr_call_read(edr_read_fn fn, void *user, void *buf, size_t len);
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// reader is an open file, memory buffer or stream, with the frame it last
// read (presented by its own frame handle) and that frame's C view.
type reader struct {
	name   string
	src    *dumpfile.Source   // file or memory: pack or MCAP
	pr     *pack.Reader       // pack file or memory
	mp     *mcap.PackReader   // MCAP file or memory
	sr     *pack.StreamReader // pack stream (fd, callback)
	unmap  func() error
	f      pack.Frame
	m      mirror
	fh     uint64  // the frame handle presenting f
	fo     *object // its object
	next   uint64  // MCAP: the id of the next frame (message)
	writer *C.char // edr_pack_summary's writer, made once
}

// newReader registers r and the frame handle that presents its frame;
// both share one lock.
func newReader(r *reader) uint64 {
	mu := &sync.Mutex{}
	r.fo = &object{mu: mu, kind: kindFrame, f: &frame{pf: &r.f, m: &r.m, owner: r}}
	r.fh = register(r.fo)
	return register(&object{mu: mu, kind: kindReader, r: r})
}

// openBytes reads b (a mapping, or the caller's memory) as a pack or MCAP
// file: b is not Go memory, so frame bytes inside it go to C in place.
func openBytes(name string, b []byte, unmap func() error) (*reader, error) {
	src, err := dumpfile.OpenBytes(name, b, mcap.ReaderOptions{})
	if err != nil {
		return nil, err
	}
	r := &reader{name: name, src: src, pr: src.Pack(), mp: src.MCAP(), unmap: unmap}
	if len(b) > 0 {
		r.m.lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		r.m.hi = r.m.lo + uintptr(len(b))
	}
	return r, nil
}

func (r *reader) close() error {
	var errs []error
	if r.src != nil {
		errs = append(errs, r.src.Close())
	}
	if r.sr != nil {
		errs = append(errs, r.sr.Close())
	}
	if r.unmap != nil {
		errs = append(errs, r.unmap())
	}
	r.m.free()
	C.free(unsafe.Pointer(r.writer))
	r.writer = nil
	return errors.Join(errs...)
}

//export edrgo_pack_open_read
func edrgo_pack_open_read(path *C.char, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if path == nil || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_pack_open_read: NULL argument"))
	}
	p := C.GoString(path)
	b, unmap, err := mapFile(p)
	if err != nil {
		return creatorFail(errp, offp, C.EDR_EIO, err)
	}
	r, err := openBytes(p, b, unmap)
	if err != nil {
		unmap()
		return creatorFail(errp, offp, 0, err)
	}
	*out = C.uint64_t(newReader(r))
	return C.EDR_OK
}

//export edrgo_pack_open_mem
func edrgo_pack_open_mem(buf unsafe.Pointer, n C.size_t, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if (buf == nil && n > 0) || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_pack_open_mem: NULL argument"))
	}
	var b []byte
	if n > 0 {
		b = unsafe.Slice((*byte)(buf), int(n))
	}
	r, err := openBytes("<memory>", b, nil)
	if err != nil {
		return creatorFail(errp, offp, 0, err)
	}
	*out = C.uint64_t(newReader(r))
	return C.EDR_OK
}

// fdReader reads a file descriptor the caller owns (it is never closed;
// an os.File would close it when collected).
type fdReader struct{ fd int }

func (f fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(f.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, os.NewSyscallError("read", err)
		}
		if n == 0 && len(p) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// cbReader reads through the caller's callback.
type cbReader struct {
	fn   C.edr_read_fn
	user unsafe.Pointer // the caller's, not Go memory
}

func (c *cbReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	// p holds no Go pointers and the callback must not keep it (cgo rules).
	n := C.edr_call_read(c.fn, c.user, unsafe.Pointer(&p[0]), C.size_t(len(p)))
	switch {
	case n > 0 && int(n) <= len(p):
		return int(n), nil
	case n == 0:
		return 0, io.EOF
	}
	return 0, fmt.Errorf("edr: the read callback returned %d for %d bytes", int(n), len(p))
}

func openStream(name string, src io.Reader, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	sr, err := pack.NewStreamReader(src)
	if err != nil {
		return creatorFail(errp, offp, 0, fmt.Errorf("%s: %w", name, err))
	}
	*out = C.uint64_t(newReader(&reader{name: name, sr: sr}))
	return C.EDR_OK
}

//export edrgo_pack_open_fd
func edrgo_pack_open_fd(fd C.int, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if fd < 0 || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_pack_open_fd: bad fd or NULL out"))
	}
	return openStream(fmt.Sprintf("fd %d", int(fd)), fdReader{int(fd)}, out, errp, offp)
}

//export edrgo_pack_open_callback
func edrgo_pack_open_callback(fn C.edr_read_fn, user unsafe.Pointer, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if fn == nil || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_pack_open_callback: NULL argument"))
	}
	return openStream("<callback>", &cbReader{fn: fn, user: user}, out, errp, offp)
}

// read reads the next frame into r.f; off is its record's offset (-1 for
// MCAP).
func (r *reader) read(withData bool) (off int64, err error) {
	switch {
	case r.mp != nil:
		ok, err := r.mp.Next()
		if err != nil {
			return -1, err
		}
		if !ok {
			return -1, io.EOF
		}
		pm := r.mp.Message()
		r.f.Reset(r.next, pm.DoneTs)
		r.next++
		data := pm.Data
		if !withData {
			data = nil
		}
		r.f.AddMetaBorrowed(pm.Name, pm.Channel, pm.Meta, pm.GenTs, pm.DoneTs, data)
		return -1, nil
	case r.sr != nil:
		if withData {
			err = r.sr.ReadInto(&r.f)
		} else {
			err = r.sr.ReadMetaInto(&r.f)
		}
		return r.sr.FrameOffset(), err
	}
	if withData {
		err = r.pr.ReadInto(&r.f)
	} else {
		err = r.pr.ReadMetaInto(&r.f)
	}
	return r.pr.FrameOffset(), err
}

//export edrgo_pack_read_frame
func edrgo_pack_read_frame(h C.uint64_t, withData C.int, v *C.edr_frame_view) C.int {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	if v == nil {
		return o.failf(C.EDR_EINVAL, "edr_pack_read_frame: NULL view")
	}
	r := o.r
	*v = C.edr_frame_view{frame: C.uint64_t(r.fh), offset: -1}
	off, err := r.read(withData != 0)
	if err == io.EOF {
		r.m.n, r.m.valid = 0, false
		return C.EDR_EOF
	}
	if err != nil {
		r.m.n, r.m.valid = 0, false
		return o.fail(err)
	}
	r.m.build(&r.f, r.mp != nil)
	f := &r.f
	*v = C.edr_frame_view{frame: C.uint64_t(r.fh), id: C.uint64_t(f.ID()), time_ns: C.int64_t(f.Time()),
		done_ns: C.int64_t(f.DoneTime()), _type: C.int32_t(f.Type()), offset: C.int64_t(off),
		n_messages: C.size_t(r.m.n), messages: r.m.messages()}
	return C.EDR_OK
}

//export edrgo_pack_tell
func edrgo_pack_tell(h C.uint64_t, off *C.int64_t) C.int {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	r := o.r
	switch {
	case off == nil:
		return o.failf(C.EDR_EINVAL, "edr_pack_tell: NULL offset")
	case r.mp != nil:
		return o.failf(C.EDR_ENOTSUP, "%s: an MCAP file has no frame offsets (edr_pack_seek_time moves by time)", r.name)
	case r.sr != nil:
		*off = C.int64_t(r.sr.Tell())
	default:
		*off = C.int64_t(r.pr.Tell())
	}
	return C.EDR_OK
}

//export edrgo_pack_seek
func edrgo_pack_seek(h C.uint64_t, off C.int64_t) C.int {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	r := o.r
	if r.pr == nil {
		return o.failf(C.EDR_ENOTSUP, "%s: seeking needs a pack file (not a stream or MCAP)", r.name)
	}
	if err := r.pr.SeekFrame(int64(off)); err != nil {
		return o.setErr(C.EDR_EINVAL, fmt.Sprintf("%s: seek to %d: %v", r.name, int64(off), err), int64(off))
	}
	return C.EDR_OK
}

//export edrgo_pack_seek_time
func edrgo_pack_seek_time(h C.uint64_t, ns C.int64_t) C.int {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	r := o.r
	switch {
	case r.mp != nil:
		r.mp.SeekTime(int64(ns))
	case r.pr != nil:
		if err := r.pr.SeekTime(int64(ns)); err != nil {
			return o.fail(err)
		}
	default:
		return o.failf(C.EDR_ENOTSUP, "%s: a stream cannot seek", r.name)
	}
	return C.EDR_OK
}

//export edrgo_pack_summary
func edrgo_pack_summary(h C.uint64_t, out *C.edr_summary) C.int {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	r := o.r
	switch {
	case out == nil:
		return o.failf(C.EDR_EINVAL, "edr_pack_summary: NULL out")
	case r.src == nil:
		return o.failf(C.EDR_ENOTSUP, "%s: a stream is summarised by reading it", r.name)
	}
	var s C.edr_summary
	var writer string
	if r.pr != nil {
		sum := r.pr.Summary()
		s = C.edr_summary{format: C.EDR_FORMAT_PACK, frames: C.uint64_t(sum.Frames), messages: C.uint64_t(sum.Messages),
			first_ns: C.int64_t(sum.FirstNs), last_ns: C.int64_t(sum.LastNs), created_ns: C.int64_t(sum.Header.CreatedNs)}
		if sum.Indexed {
			s.indexed = 1
		}
		writer = sum.Header.Writer
	} else {
		info := r.mp.Info()
		var msgs uint64
		for _, t := range r.src.Topics() {
			msgs += t.Messages
		}
		var created int64
		writer, created = r.mp.Header()
		s = C.edr_summary{format: C.EDR_FORMAT_MCAP, frames: C.uint64_t(msgs), messages: C.uint64_t(msgs),
			first_ns: C.int64_t(min(info.StartTime, 1<<63-1)), last_ns: C.int64_t(min(info.EndTime, 1<<63-1)), created_ns: C.int64_t(created)}
		if sum, err := r.mp.Reader().Info(); err == nil && !sum.Scanned {
			s.indexed = 1 // a summary section the readers can use (dumpfile's "indexed")
		}
	}
	if r.writer == nil {
		r.writer = C.CString(writer)
	}
	s.writer = r.writer
	*out = s
	return C.EDR_OK
}

//export edrgo_pack_topics
func edrgo_pack_topics(h C.uint64_t, out **C.edr_topic, n *C.size_t) C.int {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	r := o.r
	switch {
	case out == nil || n == nil:
		return o.failf(C.EDR_EINVAL, "edr_pack_topics: NULL out")
	case r.src == nil:
		return o.failf(C.EDR_ENOTSUP, "%s: a stream's topics are known by reading it", r.name)
	}
	ts := r.src.Topics()
	size := len(ts) * int(unsafe.Sizeof(C.edr_topic{}))
	for _, t := range ts {
		size += len(t.Name) + len(t.Channel) + len(t.Type.Schema.Name) + 3
	}
	p := allocOwned(size)
	arr := unsafe.Slice((*C.edr_topic)(p), max(len(ts), 1))
	strs := unsafe.Slice((*byte)(p), size)
	at := len(ts) * int(unsafe.Sizeof(C.edr_topic{}))
	str := func(s string) *C.char {
		start := at
		at += copy(strs[at:], s)
		strs[at] = 0
		at++
		return (*C.char)(unsafe.Pointer(&strs[start]))
	}
	for i, t := range ts {
		arr[i] = C.edr_topic{name: str(t.Name), channel: str(t.Channel), _type: str(t.Type.Schema.Name), messages: C.uint64_t(t.Messages)}
	}
	*out, *n = (*C.edr_topic)(p), C.size_t(len(ts))
	return C.EDR_OK
}

//export edrgo_pack_close
func edrgo_pack_close(h C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	o, code := acquire(h, kindReader, kindWriter)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	unregister(uint64(h))
	var err error
	if o.r != nil {
		unregister(o.r.fh)
		o.r.fo.release()
		err = o.r.close()
	} else {
		err = o.w.close()
	}
	o.release()
	if err != nil {
		return creatorFail(errp, offp, 0, err)
	}
	return C.EDR_OK
}
