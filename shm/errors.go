package shm

import (
	"errors"
	"fmt"
)

// Sentinel errors. Corruption of a segment is reported as a *SegmentError
// that wraps ErrCorrupt (and, where there is one, a more specific cause).
var (
	ErrNotSupported = errors.New("shm: not supported on this platform")
	ErrCorrupt      = errors.New("shm: corrupt segment")
	ErrBadMagic     = errors.New("shm: bad magic")
	ErrBadVersion   = errors.New("shm: unsupported version")
	ErrTruncated    = errors.New("shm: truncated segment")
	ErrOwner        = errors.New("shm: segment owned by an unexpected user")
	ErrInUse        = errors.New("shm: segment in use by a live producer")
	ErrTooLarge     = errors.New("shm: payload larger than max_payload")
	ErrBadName      = errors.New("shm: bad topic name")
	ErrBadOption    = errors.New("shm: bad option")
	ErrClosed       = errors.New("shm: closed")
	// ErrNoReservation: Producer.Commit without a reservation, or for
	// more bytes than reserved.
	ErrNoReservation = errors.New("shm: commit without a reservation of that size")
	// ErrTooManySegments: segments beyond ConsumerOptions.MaxSegments are
	// not followed.
	ErrTooManySegments = errors.New("shm: too many segments")
)

// SegmentError reports a broken or hostile segment: which segment, which
// header or record field, at which file offset, and why. The segment it names
// is quarantined; other segments are not affected.
type SegmentError struct {
	Segment string // path of the segment file
	Field   string // e.g. "magic", "write_cursor", "record.length"
	Offset  int64  // file offset of the field
	Err     error  // cause; wraps ErrCorrupt for corruption
}

func (e *SegmentError) Error() string {
	return fmt.Sprintf("shm: segment %s: field %s at offset %d: %v", e.Segment, e.Field, e.Offset, e.Err)
}

func (e *SegmentError) Unwrap() error { return e.Err }

// corruptf builds the cause of a SegmentError: it wraps ErrCorrupt (or a more
// specific sentinel that the caller passes as base).
func corruptf(base error, format string, args ...any) error {
	if base == nil {
		base = ErrCorrupt
	}
	return &causeError{base: base, msg: fmt.Sprintf(format, args...)}
}

type causeError struct {
	base error
	msg  string
}

func (e *causeError) Error() string {
	if e.msg == "" {
		return e.base.Error()
	}
	return e.base.Error() + ": " + e.msg
}

func (e *causeError) Unwrap() []error {
	if e.base == ErrCorrupt {
		return []error{ErrCorrupt}
	}
	return []error{e.base, ErrCorrupt}
}
