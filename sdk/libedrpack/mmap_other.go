//go:build cgo && !linux

package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"io"
	"os"
	"unsafe"
)

// mapFile reads the file at path into C memory (no mmap here): its bytes
// are not Go memory, so they can be handed to C in place.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: %d bytes do not fit in the address space", path, size)
	}
	p := C.malloc(C.size_t(size))
	if p == nil {
		return nil, nil, fmt.Errorf("%s: out of memory for %d bytes", path, size)
	}
	b := unsafe.Slice((*byte)(p), int(size))
	if _, err := io.ReadFull(f, b); err != nil {
		C.free(p)
		return nil, nil, err
	}
	return b, func() error { C.free(p); return nil }, nil
}
