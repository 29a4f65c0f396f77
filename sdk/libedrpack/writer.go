//go:build cgo

package main

/*
#include <stdlib.h>
#include "edr_pack.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/edr-lite/edr-lite/pack"
)

// writer is a pack file being written (pack.Create: write(2), durable at
// Close).
type writer struct {
	path string
	w    *pack.Writer
}

func (w *writer) close() error { return w.w.Close() }

//export edrgo_pack_open_write
func edrgo_pack_open_write(path *C.char, opts *C.edr_write_options, out *C.uint64_t, errp **C.char, offp *C.int64_t) C.int {
	if path == nil || out == nil {
		return creatorFail(errp, offp, C.EDR_EINVAL, errors.New("edr_pack_open_write: NULL argument"))
	}
	wo := pack.WriterOptions{Writer: "libedrpack"}
	if opts != nil {
		if opts.compression < C.EDR_COMPRESS_NONE || opts.compression > C.EDR_COMPRESS_ZSTD {
			return creatorFail(errp, offp, C.EDR_EINVAL, fmt.Errorf("edr_pack_open_write: compression %d is not an EDR_COMPRESS_* value", int32(opts.compression)))
		}
		wo.Compression = pack.Compression(opts.compression)
		if opts.writer != nil {
			wo.Writer = C.GoString(opts.writer)
		}
		wo.CreatedNs = int64(opts.created_ns)
	}
	p := C.GoString(path)
	w, err := pack.Create(p, wo)
	if err != nil {
		return creatorFail(errp, offp, C.EDR_EIO, err)
	}
	*out = C.uint64_t(register(&object{mu: &sync.Mutex{}, kind: kindWriter, w: &writer{path: p, w: w}}))
	return C.EDR_OK
}

func writerCall(h C.uint64_t, fn func(o *object, w *writer) C.int) C.int {
	o, code := acquire(h, kindWriter)
	if code != C.EDR_OK {
		return code
	}
	defer o.mu.Unlock()
	return fn(o, o.w)
}

//export edrgo_pack_write_frame
func edrgo_pack_write_frame(h, fh C.uint64_t) C.int {
	return writerCall(h, func(o *object, w *writer) C.int {
		fo, code := acquire(fh, kindFrame)
		if code != C.EDR_OK {
			return o.failf(code, "edr_pack_write_frame: frame handle %d is unknown, destroyed or busy", uint64(fh))
		}
		defer fo.mu.Unlock()
		if err := w.w.WriteFrame(fo.f.pf); err != nil {
			return o.fail(fmt.Errorf("%s: %w", w.path, err))
		}
		return C.EDR_OK
	})
}

//export edrgo_pack_add_metadata
func edrgo_pack_add_metadata(h C.uint64_t, name *C.char, data unsafe.Pointer, n C.size_t) C.int {
	return writerCall(h, func(o *object, w *writer) C.int {
		if name == nil || (data == nil && n > 0) {
			return nullArg(o, "edr_pack_add_metadata")
		}
		if err := w.w.AddMetadata(C.GoString(name), cbytes(data, n)); err != nil {
			return o.fail(err)
		}
		return C.EDR_OK
	})
}

//export edrgo_pack_flush
func edrgo_pack_flush(h C.uint64_t) C.int {
	return writerCall(h, func(o *object, w *writer) C.int {
		if err := w.w.Flush(); err != nil {
			return o.fail(fmt.Errorf("%s: %w", w.path, err))
		}
		return C.EDR_OK
	})
}
