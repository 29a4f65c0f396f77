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
	"runtime/debug"
	"sync"
	"syscall"
	"unsafe"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
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
	mapped []byte // the file's mapping (edr_pack_open_read): never handed to C, its faults caught
	bytes  []byte // the file's bytes (mapped or the caller's): the filter's plan walks them
	skip   bool   // opened with skip_damaged
	ownPR  bool   // pr is not src's own (opened to read past damage): close it
	f      pack.Frame
	m      mirror
	fh     uint64  // the frame handle presenting f
	fo     *object // its object
	next   uint64  // MCAP: the id of the next frame (message)
	writer *C.char // edr_pack_summary's writer, made once

	tt       *topicTable  // the topics met, their C names and types
	win      window       // what the reads yield (edr_pack_set_filter)
	off      int64        // the offset of the frame in f (-1: MCAP)
	mcapType *ingest.Type // the type of the MCAP message in f
	nTypes   int          // a stream: its type sections seen so far
	pend     int          // the index in f of the next message edr_pack_read_records copies; -1: f is used up
}

// window is a reader's filter: every message when !on.
type window struct {
	on     bool
	from   int64 // the window's start, or a later time sought (edr_pack_seek_time)
	lo, hi int64 // the filter's bounds (math.MinInt64, math.MaxInt64 when unset)
	plan   *plan // a pack file's frames the filter can use (nil: read them all)
	done   bool  // MCAP: past hi (log-time order): the reads are over until a seek
}

// newReader registers r and the frame handle that presents its frame;
// both share one lock.
func newReader(r *reader) uint64 {
	r.pend, r.off = -1, -1
	if r.tt == nil {
		r.tt = newTopicTable()
	}
	mu := &sync.Mutex{}
	r.fo = &object{mu: mu, kind: kindFrame, f: &frame{pf: &r.f, m: &r.m, owner: r}}
	r.fh = register(r.fo)
	return register(&object{mu: mu, kind: kindReader, r: r})
}

// openBytes reads b as a pack or MCAP file: the file's mapping (mapped)
// or the caller's memory. The caller's bytes are not Go memory and are
// theirs: frame bytes inside them go to C in place. A mapping's are not:
// the file may shrink under it (truncated, re-created by a writer), and C
// touching a page past its new end would die of SIGBUS, so everything a
// view holds is copied into the handle's C memory, and the library's own
// reads of the mapping are guarded (guard).
func openBytes(name string, b []byte, unmap func() error, mapped, skip bool) (r *reader, err error) {
	r = &reader{name: name, unmap: unmap}
	if mapped {
		r.mapped = b
		defer r.guard(&err, debug.SetPanicOnFault(true))
	}
	if skip && len(b) >= 8 && [8]byte(b[:8]) == pack.FileMagic {
		// Read past damage: the reader's options, its type sections
		// walked the same way.
		pr, err := pack.NewBytesReader(name, b, pack.ReaderOptions{SkipDamaged: true})
		if err != nil {
			return nil, err
		}
		src, err := dumpfile.FromPack(pr)
		if err != nil {
			return nil, errors.Join(err, pr.Close())
		}
		r.src, r.pr, r.ownPR = src, pr, true
	} else {
		src, err := dumpfile.OpenBytes(name, b, mcap.ReaderOptions{})
		if err != nil {
			return nil, err
		}
		r.src, r.pr, r.mp = src, src.Pack(), src.MCAP()
	}
	if len(b) > 0 && !mapped {
		r.m.lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		r.m.hi = r.m.lo + uintptr(len(b))
	}
	r.bytes, r.skip = b, skip
	r.tt = newTopicTable()
	r.tt.accts = accountNames(r.src)
	if r.pr != nil {
		ts, err := r.pr.Types() // dumpfile.FromPack read them: no error left
		if err != nil {
			return nil, err
		}
		for i := range ts {
			r.tt.addSection(&ts[i])
		}
	}
	for _, t := range r.src.Topics() {
		r.tt.slot(t.Name, t.Channel)
	}
	return r, nil
}

// accountNames maps the topics of a dump's accounting (as it spells them)
// to their type names: an untyped topic's raw bytes are named by it.
func accountNames(src *dumpfile.Source) map[string]string {
	d, _ := src.DumpInfo()
	out := map[string]string{}
	for _, a := range d.Topics {
		if a.Type != "" {
			out[a.Topic] = a.Type
		}
	}
	return out
}

// guard turns a fault on the file's mapping (the file shrank while it was
// read: pack's and mcap's readers touch it) into *err, naming the offset,
// where the process would otherwise die; use as
// defer r.guard(&err, debug.SetPanicOnFault(true)).
func (r *reader) guard(err *error, old bool) {
	debug.SetPanicOnFault(old)
	if e := recover(); e != nil {
		off, ok := pack.FaultOffset(e, r.mapped)
		if !ok {
			panic(e)
		}
		*err = pack.ShrunkError(r.name, off)
	}
}

// catch is guard for the exported calls that read the mapping (with the
// frame handle's, which alias it): a fault is the call's error, EDR_EIO
// naming the offset, on o. Use as
// defer r.catch(o, &code, debug.SetPanicOnFault(true)).
func (r *reader) catch(o *object, code *C.int, old bool) {
	debug.SetPanicOnFault(old)
	if e := recover(); e != nil {
		off, ok := pack.FaultOffset(e, r.mapped)
		if !ok {
			panic(e)
		}
		*code = o.fail(pack.ShrunkError(r.name, off))
		r.m.n, r.m.valid = 0, false
	}
}

func (r *reader) close() error {
	var errs []error
	if r.src != nil {
		errs = append(errs, r.src.Close())
	}
	if r.ownPR {
		errs = append(errs, r.pr.Close())
	}
	if r.sr != nil {
		errs = append(errs, r.sr.Close())
	}
	if r.unmap != nil {
		errs = append(errs, r.unmap())
	}
	r.m.free()
	r.tt.free()
	C.free(unsafe.Pointer(r.writer))
	r.writer = nil
	return errors.Join(errs...)
}

//export edrgo_pack_open_read
func edrgo_pack_open_read(path *C.char, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	return edrgo_pack_open_read_with(path, nil, out, errp, offp)
}

//export edrgo_pack_open_read_with
func edrgo_pack_open_read_with(path *C.char, opts *C.edr_read_options, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if path == nil || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_pack_open_read: NULL argument"))
	}
	o, err := readOptions("edr_pack_open_read_with", opts)
	if err != nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, err)
	}
	p := C.GoString(path)
	b, unmap, err := mapFile(p)
	if err != nil {
		return creatorFail(errp, offp, C.EDR_EIO, err)
	}
	r, err := openBytes(p, b, unmap, true, o.SkipDamaged)
	if err != nil {
		unmap()
		return creatorFail(errp, offp, 0, err)
	}
	*out = C.uint64_t(newReader(r))
	return C.EDR_OK
}

//export edrgo_pack_open_mem_with
func edrgo_pack_open_mem_with(buf unsafe.Pointer, n C.size_t, opts *C.edr_read_options, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if (buf == nil && n > 0) || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_pack_open_mem: NULL argument"))
	}
	o, err := readOptions("edr_pack_open_mem_with", opts)
	if err != nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, err)
	}
	var b []byte
	if n > 0 {
		b = unsafe.Slice((*byte)(buf), int(n))
	}
	r, err := openBytes("<memory>", b, nil, false, o.SkipDamaged)
	if err != nil {
		return creatorFail(errp, offp, 0, err)
	}
	*out = C.uint64_t(newReader(r))
	return C.EDR_OK
}

// readOptions checks and converts the options of an opener (NULL: zero).
func readOptions(fn string, opts *C.edr_read_options) (pack.ReaderOptions, error) {
	var o C.edr_read_options
	if opts != nil {
		o = *opts
	}
	if o.skip_damaged != 0 && o.skip_damaged != 1 || o.reserved != 0 {
		return pack.ReaderOptions{}, fmt.Errorf("%s: skip_damaged %d (want 0 or 1), reserved %d (want 0)", fn, int(o.skip_damaged), int(o.reserved))
	}
	return pack.ReaderOptions{SkipDamaged: o.skip_damaged == 1}, nil
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

// cbChunk bounds one call of the caller's read callback.
const cbChunk = 1 << 20

// cbReader reads through the caller's callback.
type cbReader struct {
	fn   C.edr_read_fn
	user unsafe.Pointer // the caller's, not Go memory
}

func (c *cbReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	// The callback is handed C memory, never the Go heap: what C is given
	// is C's (the SDK's rule), and a memory checker run on the caller's
	// program sees an ordinary malloc'd buffer (valgrind took a Go heap
	// buffer given to read(2) for unaddressable, now and then). One copy;
	// a read asks for at most cbChunk bytes (a short read, as io.Reader
	// allows).
	if len(p) > cbChunk {
		p = p[:cbChunk]
	}
	buf := C.malloc(C.size_t(len(p)))
	if buf == nil {
		return 0, errors.New("edr: out of memory for the read callback's buffer")
	}
	defer C.free(buf)
	n := C.edr_call_read(c.fn, c.user, buf, C.size_t(len(p)))
	switch {
	case n > 0 && int(n) <= len(p):
		copy(p, unsafe.Slice((*byte)(buf), int(n)))
		return int(n), nil
	case n == 0:
		return 0, io.EOF
	}
	return 0, fmt.Errorf("edr: the read callback returned %d for %d bytes", int(n), len(p))
}

func openStream(name string, src io.Reader, opts pack.ReaderOptions, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	sr, err := pack.NewStreamReaderWith(src, opts)
	if err != nil {
		return creatorFail(errp, offp, 0, fmt.Errorf("%s: %w", name, err))
	}
	tt := newTopicTable()
	tt.stream = true
	*out = C.uint64_t(newReader(&reader{name: name, sr: sr, skip: opts.SkipDamaged, tt: tt}))
	return C.EDR_OK
}

//export edrgo_pack_open_fd_with
func edrgo_pack_open_fd_with(fd C.int, opts *C.edr_read_options, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if fd < 0 || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_pack_open_fd: bad fd or NULL out"))
	}
	o, err := readOptions("edr_pack_open_fd_with", opts)
	if err != nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, err)
	}
	return openStream(fmt.Sprintf("fd %d", int(fd)), fdReader{int(fd)}, o, out, errp, offp)
}

//export edrgo_pack_open_callback_with
func edrgo_pack_open_callback_with(fn C.edr_read_fn, user unsafe.Pointer, opts *C.edr_read_options, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if fn == nil || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_pack_open_callback: NULL argument"))
	}
	o, err := readOptions("edr_pack_open_callback_with", opts)
	if err != nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, err)
	}
	return openStream("<callback>", &cbReader{fn: fn, user: user}, o, out, errp, offp)
}

// read reads the next frame into r.f (its offset in r.off, -1 for MCAP):
// one the filter's plan says can hold a message it selects.
func (r *reader) read(withData bool) (err error) {
	r.pend = -1
	switch {
	case r.mp != nil:
		if r.win.done {
			return io.EOF
		}
		ok, err := r.mp.Next()
		if err != nil {
			return err
		}
		if !ok {
			return io.EOF
		}
		pm := r.mp.Message()
		if r.win.on && pm.DoneTs > r.win.hi { // log-time order: no later message is in the window
			r.win.done = true
			return io.EOF
		}
		r.f.Reset(r.next, pm.DoneTs)
		r.next++
		data := pm.Data
		if !withData {
			data = nil
		}
		r.f.AddMetaBorrowed(pm.Name, pm.Channel, pm.Meta, pm.GenTs, pm.DoneTs, data)
		if pm.HasSeq {
			r.f.SetSeq(0, pm.Seq)
		}
		r.off, r.mcapType = -1, pm.Type
		return nil
	case r.sr != nil:
		if withData {
			err = r.sr.ReadInto(&r.f)
		} else {
			err = r.sr.ReadMetaInto(&r.f)
		}
		if ts := r.sr.Types(); len(ts) > r.nTypes { // the type sections read before this frame
			for i := r.nTypes; i < len(ts); i++ {
				r.tt.addSection(&ts[i])
			}
			r.nTypes = len(ts)
		}
		r.off = r.sr.FrameOffset()
		return err
	}
	if p := r.win.plan; p != nil {
		if err := p.skip(r.pr); err != nil {
			return err
		}
	}
	if withData {
		err = r.pr.ReadInto(&r.f)
	} else {
		err = r.pr.ReadMetaInto(&r.f)
	}
	r.off = r.pr.FrameOffset()
	return err
}

// keep says whether the reads yield message m of the frame read (whose
// time is frameNs), with its topic's slot and its time.
func (r *reader) keep(m *pack.Message, frameNs int64) (*topicSlot, int64, bool) {
	s := r.tt.slot(m.Name, m.Channel)
	t := m.DoneTs // MCAP: the log time
	if r.mp == nil {
		t = pack.MessageTime(m, frameNs)
	}
	if r.win.on && (!s.sel || t < r.win.from || t > r.win.hi) {
		return s, t, false
	}
	return s, t, true
}

// typeOf returns the type of the messages of s in the frame read.
func (r *reader) typeOf(s *topicSlot) *C.edr_type {
	if r.mp != nil {
		return r.tt.ctype(r.mcapType)
	}
	return s.typeAt(r.off)
}

// nextView reads frames until one holds a message the reads yield (all of
// them without a filter) and describes those in r.m.
func (r *reader) nextView(withData bool) error {
	for {
		if err := r.read(withData); err != nil {
			r.m.n, r.m.valid = 0, false
			return err
		}
		r.m.build(&r.f, 0, r)
		if r.m.n > 0 || !r.win.on {
			return nil
		}
	}
}

//export edrgo_pack_read_frame
func edrgo_pack_read_frame(h C.uint64_t, withData C.int, v *C.edr_frame_view) (code C.int) {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	defer o.r.catch(o, &code, debug.SetPanicOnFault(true))
	if v == nil {
		return o.failf(C.EDR_EINVAL, "edr_pack_read_frame: NULL view")
	}
	r := o.r
	*v = C.edr_frame_view{frame: C.uint64_t(r.fh), offset: -1}
	rest := false
	if r.pend >= 0 && r.pend < r.f.Len() {
		// edr_pack_read_records stopped inside this frame: the rest of it.
		r.m.build(&r.f, r.pend, r)
		rest = r.m.n > 0
	}
	r.pend = -1
	if !rest {
		if err := r.nextView(withData != 0); err == io.EOF {
			return C.EDR_EOF
		} else if err != nil {
			return o.fail(err)
		}
	}
	f := &r.f
	*v = C.edr_frame_view{frame: C.uint64_t(r.fh), id: C.uint64_t(f.ID()), time_ns: C.int64_t(f.Time()),
		done_ns: C.int64_t(f.DoneTime()), _type: C.int32_t(f.Type()), offset: C.int64_t(r.off),
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
func edrgo_pack_seek(h C.uint64_t, off C.int64_t) (code C.int) {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	defer o.r.catch(o, &code, debug.SetPanicOnFault(true))
	r := o.r
	if r.pr == nil {
		return o.failf(C.EDR_ENOTSUP, "%s: seeking needs a pack file (not a stream or MCAP)", r.name)
	}
	if err := r.pr.SeekFrame(int64(off)); err != nil {
		return o.setErr(C.EDR_EINVAL, fmt.Sprintf("%s: seek to %d: %v", r.name, int64(off), err), int64(off))
	}
	r.pend, r.win.from = -1, r.win.lo // frames whole again (within the filter)
	return C.EDR_OK
}

//export edrgo_pack_seek_time
func edrgo_pack_seek_time(h C.uint64_t, ns C.int64_t) (code C.int) {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	defer o.r.catch(o, &code, debug.SetPanicOnFault(true))
	r := o.r
	if r.sr != nil {
		return o.failf(C.EDR_ENOTSUP, "%s: a stream cannot seek", r.name)
	}
	r.pend = -1
	t := int64(ns)
	if r.win.on {
		t = max(t, r.win.lo) // the filter's window still holds
		r.win.from = t
	}
	return r.moveTo(o, t)
}

//export edrgo_pack_skipped
func edrgo_pack_skipped(h C.uint64_t, out *C.edr_skipped) C.int {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	if out == nil {
		return o.failf(C.EDR_EINVAL, "edr_pack_skipped: NULL out")
	}
	*out = C.edr_skipped{first_offset: -1}
	var sk pack.Skipped
	switch r := o.r; {
	case r.pr != nil:
		sk = r.pr.Skipped()
	case r.sr != nil:
		sk = r.sr.Skipped()
	}
	out.regions, out.frames, out.bytes, out.types = C.uint64_t(sk.Regions), C.uint64_t(sk.Frames), C.uint64_t(sk.Bytes), C.uint64_t(sk.Types)
	if len(sk.Lost) > 0 {
		out.first_offset = C.int64_t(sk.Lost[0].Offset)
	}
	return C.EDR_OK
}

//export edrgo_pack_summary
func edrgo_pack_summary(h C.uint64_t, out *C.edr_summary) (code C.int) {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	defer o.r.catch(o, &code, debug.SetPanicOnFault(true))
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
		if err := r.pr.Fault(); err != nil {
			return o.fail(err) // the file shrank: the summary is empty
		}
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
func edrgo_pack_topics(h C.uint64_t, out **C.edr_topic, n *C.size_t) (code C.int) {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	defer o.r.catch(o, &code, debug.SetPanicOnFault(true))
	r := o.r
	switch {
	case out == nil || n == nil:
		return o.failf(C.EDR_EINVAL, "edr_pack_topics: NULL out")
	case r.src == nil:
		return o.failf(C.EDR_ENOTSUP, "%s: a stream's topics are known by reading it", r.name)
	}
	ts := r.src.Topics()
	head := len(ts) * int(unsafe.Sizeof(C.edr_topic{}))
	size := head
	for _, t := range ts {
		ty := t.Type.OrRaw()
		size += packSize(len(ty.Schema.Data), t.Name, t.Channel, ty.MessageEncoding, ty.Schema.Name, ty.Schema.Encoding)
	}
	p := allocOwned(size)
	arr := unsafe.Slice((*C.edr_topic)(p), max(len(ts), 1))
	c := newCPack(p, size, head)
	for i, t := range ts {
		ty := t.Type.OrRaw()
		name := c.str(ty.Schema.Name)
		arr[i] = C.edr_topic{name: c.str(t.Name), channel: c.str(t.Channel), _type: name, messages: C.uint64_t(t.Messages),
			first_type: C.edr_type{message_encoding: c.str(ty.MessageEncoding), schema_name: name, schema_encoding: c.str(ty.Schema.Encoding),
				schema_data: c.bytes(ty.Schema.Data, true), schema_len: C.size_t(len(ty.Schema.Data))},
			n_types: C.size_t(max(len(t.Types), 1))}
	}
	*out, *n = (*C.edr_topic)(p), C.size_t(len(ts))
	return C.EDR_OK
}

//export edrgo_pack_attachments
func edrgo_pack_attachments(h C.uint64_t, out **C.edr_attachment, n *C.size_t) (code C.int) {
	o, code := acquire(h, kindReader)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	defer o.r.catch(o, &code, debug.SetPanicOnFault(true))
	r := o.r
	switch {
	case out == nil || n == nil:
		return o.failf(C.EDR_EINVAL, "edr_pack_attachments: NULL out")
	case r.src == nil:
		return o.failf(C.EDR_ENOTSUP, "%s: a stream's attachments are not kept (read the file)", r.name)
	}
	as, err := r.src.Attachments()
	if err != nil {
		return o.fail(err)
	}
	head := len(as) * int(unsafe.Sizeof(C.edr_attachment{}))
	size := head
	for _, a := range as {
		size += packSize(len(a.Data), a.Name, a.MediaType)
	}
	p := allocOwned(size)
	arr := unsafe.Slice((*C.edr_attachment)(p), max(len(as), 1))
	c := newCPack(p, size, head)
	for i, a := range as {
		arr[i] = C.edr_attachment{name: c.str(a.Name), media_type: c.str(a.MediaType), log_ns: C.int64_t(a.LogNs), create_ns: C.int64_t(a.CreateNs),
			data: c.bytes(a.Data, false), len: C.size_t(len(a.Data))}
	}
	*out, *n = (*C.edr_attachment)(p), C.size_t(len(as))
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
