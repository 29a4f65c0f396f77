// Faults on the mapping: a file that shrinks while a Reader maps it.

package pack

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
)

// ErrShrunk: the file shrank (was truncated or rewritten) while a Reader
// had it mapped, and a byte the Reader went to read is no longer there.
var ErrShrunk = errors.New("pack: the file shrank while it was read")

// A Reader reads its file through a read-only mapping. When another process
// truncates the file meanwhile (re-creating a dump someone reads, a copy cut
// short), a read of a page past the new end raises SIGBUS, which kills the
// process ("fatal error: fault") unless the goroutine asked the runtime to
// panic instead (debug.SetPanicOnFault). Every method of a Reader that
// touches the mapping, and the read-ahead helpers, run with it set, and a
// fault inside the mapping becomes a *CorruptError wrapping ErrShrunk that
// names the offset; a fault anywhere else panics on. Bytes a Reader has
// handed out still alias the mapping: a caller touching them after the
// file shrank faults in its own code (copy what must survive that, or
// guard it the same way; the C library hands C only copies).
//
// Measured against reading without a mapping (docs/performance.md, "pack:
// a file that shrinks"): the guard costs a few nanoseconds a call, a copy
// per frame costs the bytes.

// guard turns a fault on the mapping b of the file at path into *err;
// use as: defer guard(&err, path, b, debug.SetPanicOnFault(true)).
func guard(err *error, path string, b []byte, old bool) {
	debug.SetPanicOnFault(old)
	if e := recover(); e != nil {
		off, ok := faultOffset(e, b)
		if !ok {
			off, ok = shrunkFallback(e, path, b)
		}
		if !ok {
			panic(e)
		}
		*err = shrunkError(path, off)
	}
}

// shrunkFallback places a fault that carries no address (qemu-user) at
// the file's new end when the file at path is now shorter than the
// mapping b: the first byte the mapping can no longer read. Any other
// fault is not the mapping's to explain.
func shrunkFallback(e any, path string, b []byte) (int64, bool) {
	if !faultWithoutAddr(e) {
		return 0, false
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() >= int64(len(b)) {
		return 0, false
	}
	return st.Size(), true
}

// guard is guard for a Reader's own calls: a fault also empties f (when
// not nil) and sends the read-ahead pipeline back to the caller's position.
func (r *Reader) guard(err *error, f *Frame, old bool) {
	debug.SetPanicOnFault(old)
	if e := recover(); e != nil {
		off, ok := faultOffset(e, r.data)
		if !ok {
			off, ok = shrunkFallback(e, r.path, r.data)
		}
		if !ok {
			panic(e)
		}
		*err = shrunkError(r.path, off)
		r.fault = *err
		if f != nil {
			f.Reset(0, 0)
		}
		if r.ahead != nil {
			r.drain()
			r.ahead.expect = -1
		}
	}
}

// Fault returns the error of the last read of the mapping that found the
// file shrunk under it (ErrShrunk), nil when none: the methods that
// return no error (Summary, FrameOffsets, Metadata, MetadataNames,
// DumpInfo, Codecs) return empty results then, and Fault says why.
func (r *Reader) Fault() error { return r.fault }

// zeroOnFault empties *v when *fault is set: deferred before guard by the
// methods that return no error, so a fault gives an empty result, not a
// partial one (their error comes from ReadInto, ScanError, Types).
func zeroOnFault[T any](fault *error, v *T) {
	if *fault != nil {
		var zero T
		*v = zero
	}
}

// shrunkError is the error of a read at off of the file at path, which
// has shrunk under its mapping.
func shrunkError(path string, off int64) *CorruptError {
	now := ""
	if st, err := os.Stat(path); err == nil {
		now = fmt.Sprintf(", which is now %d bytes", st.Size())
	}
	return &CorruptError{Path: path, Offset: off, Err: ErrShrunk,
		Reason: fmt.Sprintf("the file shrank while it was read: no byte at offset %d any more%s (truncated or rewritten by another process?)", off, now)}
}

// ShrunkError is the error of a read at off of the file at path, mapped
// by a caller (MapFile), that shrank under the mapping: a *CorruptError
// wrapping ErrShrunk.
func ShrunkError(path string, off int64) error { return shrunkError(path, off) }

// mapped is every mapping MapFile made that is still mapped, for
// FaultError.
var mapped mappings

type mappings struct {
	mu sync.Mutex
	m  []mapping
}

type mapping struct {
	path string
	b    []byte
}

func (ms *mappings) add(path string, b []byte) {
	ms.mu.Lock()
	ms.m = append(ms.m, mapping{path, b})
	ms.mu.Unlock()
}

func (ms *mappings) remove(b []byte) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for i := range ms.m {
		if len(ms.m[i].b) > 0 && &ms.m[i].b[0] == &b[0] {
			ms.m = append(ms.m[:i], ms.m[i+1:]...)
			return
		}
	}
}

// FaultError returns, for a value recovered from a panic, the error of a
// memory fault (debug.SetPanicOnFault) inside a file MapFile mapped and
// has not unmapped (the file shrank under its reader: ErrShrunk, naming
// the file and offset), or nil when it is not one. For a program that
// reads the bytes a Reader hands out, which alias its mapping, with the
// same guard (the edr-lite command does, around each verb).
func FaultError(e any) error {
	mapped.mu.Lock()
	defer mapped.mu.Unlock()
	for _, m := range mapped.m {
		if off, ok := faultOffset(e, m.b); ok {
			return shrunkError(m.path, off)
		}
	}
	return nil
}

// FaultOffset reports whether e, a value recovered from a panic, is a
// memory fault (debug.SetPanicOnFault) inside b, and at which offset: for
// callers that read a mapping of their own (MapFile) the same way.
func FaultOffset(e any, b []byte) (int64, bool) { return faultOffset(e, b) }
