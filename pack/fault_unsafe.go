package pack

import (
	"runtime"
	"strings"
	"unsafe"
)

// faultOffset reports whether e, a value recovered from a panic, is a
// memory fault (runtime.Error with an Addr method, debug.SetPanicOnFault)
// at an address inside b, and its offset there.
func faultOffset(e any, b []byte) (int64, bool) {
	f, ok := e.(interface {
		error
		Addr() uintptr
	})
	if !ok || len(b) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if a := f.Addr(); a >= base && a < base+uintptr(len(b)) {
		return int64(a - base), true
	}
	return 0, false
}

// faultWithoutAddr says whether e is a memory fault that carries no
// address. qemu-user leaves the fault address of a SIGBUS 0, and the
// runtime then panics with its plain nil-dereference error (a
// runtime.Error with no Addr method) rather than one that names the
// address. guard takes such a fault for the mapping's only when the file
// is now shorter than the mapping (see shrunkFallback).
func faultWithoutAddr(e any) bool {
	re, ok := e.(runtime.Error)
	if !ok {
		return false
	}
	if f, ok := e.(interface{ Addr() uintptr }); ok {
		return f.Addr() == 0
	}
	return strings.Contains(re.Error(), "invalid memory address")
}
