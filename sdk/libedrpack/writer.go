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

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
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

// goType reads a C type (NULL: none, which is raw bytes), copying it.
func goType(t *C.edr_type) (ingest.Type, error) {
	if t == nil {
		return ingest.Type{}, nil
	}
	if t.schema_data == nil && t.schema_len > 0 {
		return ingest.Type{}, errors.New("schema_data is NULL with a schema_len")
	}
	typ := ingest.Type{MessageEncoding: gostr(t.message_encoding),
		Schema: ingest.Schema{Name: gostr(t.schema_name), Encoding: gostr(t.schema_encoding)}}
	if t.schema_len > 0 {
		if uint64(t.schema_len) > ingest.MaxSchemaSize {
			return ingest.Type{}, fmt.Errorf("%w: %d bytes of schema, limit %d", ingest.ErrSchemaTooLarge, uint64(t.schema_len), ingest.MaxSchemaSize)
		}
		typ.Schema.Data = C.GoBytes(unsafe.Pointer(t.schema_data), C.int(t.schema_len))
	}
	return typ, nil
}

//export edrgo_pack_set_topic_type
func edrgo_pack_set_topic_type(h C.uint64_t, name, channel *C.char, t *C.edr_type, from C.int64_t) C.int {
	return writerCall(h, func(o *object, w *writer) C.int {
		if name == nil {
			return nullArg(o, "edr_pack_set_topic_type")
		}
		topic := mcap.TopicName(C.GoString(name), gostr(channel))
		typ, err := goType(t)
		if err == nil {
			typ = typ.OrRaw()
			err = schema.Check(typ) // the schema compiles: a typo is an error now, not at decode time
		}
		if err != nil {
			return o.failf(C.EDR_EINVAL, "edr_pack_set_topic_type: topic %s: type %s: %v", topic, typ, err)
		}
		if err := w.w.SetTopicType(C.GoString(name), gostr(channel), typ, int64(from)); err != nil {
			return o.fail(fmt.Errorf("%s: topic %s: %w", w.path, topic, err))
		}
		return C.EDR_OK
	})
}

//export edrgo_pack_write_message
func edrgo_pack_write_message(h C.uint64_t, m *C.edr_message) C.int {
	return writerCall(h, func(o *object, w *writer) C.int {
		if m == nil || m.name == nil || (m.meta == nil && m.meta_len > 0) || (m.data == nil && m.data_len > 0) {
			return nullArg(o, "edr_pack_write_message")
		}
		if m.has_seq != 0 && m.has_seq != 1 {
			return o.failf(C.EDR_EINVAL, "edr_pack_write_message: has_seq %d (want 0 or 1)", int(m.has_seq))
		}
		name, ch := C.GoString(m.name), gostr(m.channel)
		meta, data := cbytes(unsafe.Pointer(m.meta), m.meta_len), cbytes(unsafe.Pointer(m.data), m.data_len)
		var err error
		if m.has_seq == 1 {
			err = w.w.AddSeq(name, ch, meta, int64(m.gen_ts), int64(m.done_ts), uint64(m.seq), data)
		} else {
			err = w.w.Add(name, ch, meta, int64(m.gen_ts), int64(m.done_ts), data)
		}
		if err != nil {
			return o.fail(fmt.Errorf("%s: %w", w.path, err))
		}
		return C.EDR_OK
	})
}

//export edrgo_pack_add_attachment
func edrgo_pack_add_attachment(h C.uint64_t, a *C.edr_attachment) C.int {
	return writerCall(h, func(o *object, w *writer) C.int {
		if a == nil || a.name == nil || (a.data == nil && a.len > 0) {
			return nullArg(o, "edr_pack_add_attachment")
		}
		// AddAttachment copies the bytes into the file at once: they are
		// read in place.
		err := w.w.AddAttachment(pack.Attachment{Name: C.GoString(a.name), MediaType: gostr(a.media_type),
			LogNs: int64(a.log_ns), CreateNs: int64(a.create_ns), Data: cbytes(unsafe.Pointer(a.data), a.len)})
		if err != nil {
			return o.fail(fmt.Errorf("%s: %w", w.path, err))
		}
		return C.EDR_OK
	})
}
