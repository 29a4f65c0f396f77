//go:build cgo

package main

/*
#include <stdlib.h>
#include "edr_pack.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// openForTest opens path with edrgo_pack_open_read and returns a function
// that reads the next frame with its data through edrgo_pack_read_frame,
// as C calls it (starting over at the end), and one that closes it. The
// view lives in C memory. For alloc_test.go: tests cannot use cgo.
func openForTest(path string) (read func() error, done func(), err error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var h C.uint64_t
	var msg *C.char
	if rc := edrgo_pack_open_read(cpath, &h, &msg, nil); rc != C.EDR_OK {
		defer C.free(unsafe.Pointer(msg))
		return nil, nil, errors.New(C.GoString(msg))
	}
	v := (*C.edr_frame_view)(C.malloc(C.size_t(unsafe.Sizeof(C.edr_frame_view{}))))
	errRead := errors.New("read failed")
	read = func() error {
		rc := edrgo_pack_read_frame(h, 1, v)
		if rc == C.EDR_EOF {
			if edrgo_pack_seek_time(h, -1<<63) != C.EDR_OK {
				return errRead
			}
			rc = edrgo_pack_read_frame(h, 1, v)
		}
		if rc != C.EDR_OK || v.n_messages == 0 {
			return errRead
		}
		return nil
	}
	done = func() {
		C.free(unsafe.Pointer(v))
		edrgo_pack_close(h, nil, nil)
	}
	return read, done, nil
}
