package pack

import (
	"errors"
	"fmt"
)

// Sentinel errors. Corruption found in a file is reported as a *CorruptError
// whose Unwrap returns one of the Err* corruption sentinels below, so callers
// can test with errors.Is(err, pack.ErrChecksum) or errors.As(err, &ce).
var (
	// ErrBadMagic: the file does not start with the pack magic.
	ErrBadMagic = errors.New("pack: bad magic")
	// ErrUnsupportedVersion: the file's major format version is newer than this reader.
	ErrUnsupportedVersion = errors.New("pack: unsupported format version")
	// ErrChecksum: a CRC32C did not match.
	ErrChecksum = errors.New("pack: checksum mismatch")
	// ErrTruncated: a record runs past the end of the file.
	ErrTruncated = errors.New("pack: truncated")
	// ErrCorrupt: a field holds an impossible value.
	ErrCorrupt = errors.New("pack: corrupt")
	// ErrBadMeta: a frame's meta is not a valid FrameV2Proto.Frame.
	ErrBadMeta = errors.New("pack: bad frame meta")
	// ErrUnsupportedCodec: a frame uses a compression codec this reader does not know.
	ErrUnsupportedCodec = errors.New("pack: unsupported compression codec")
	// ErrFrameTooLarge: a frame exceeds MaxFrameSize (writing) or a bound (reading).
	ErrFrameTooLarge = errors.New("pack: frame too large")
	// ErrNoIndex: the operation needs an index and the file has none.
	ErrNoIndex = errors.New("pack: no index")
	// ErrBadOffset: Seek was given an offset that is not the start of a frame.
	ErrBadOffset = errors.New("pack: offset is not a frame start")
	// ErrNotSupported: the operation is not supported on this platform.
	ErrNotSupported = errors.New("pack: not supported on this platform")
	// ErrClosed: the Writer or Reader is closed.
	ErrClosed = errors.New("pack: closed")
)

// CorruptError reports damage found in a pack file: which file, at which
// byte offset, and why. Unwrap returns the sentinel naming the kind of damage
// (ErrChecksum, ErrTruncated, ErrCorrupt, ErrBadMeta, ErrBadMagic,
// ErrUnsupportedCodec).
type CorruptError struct {
	Path   string // file name, "" for a stream
	Offset int64  // byte offset of the damaged record or field
	Reason string // what is wrong, e.g. "frame data CRC32C 0x1234 != 0x5678"
	Err    error  // sentinel; see Unwrap
}

func (e *CorruptError) Error() string {
	p := e.Path
	if p == "" {
		p = "<stream>"
	}
	return fmt.Sprintf("pack: %s: offset %d: %s", p, e.Offset, e.Reason)
}

// Unwrap returns the sentinel for the kind of damage.
func (e *CorruptError) Unwrap() error { return e.Err }

func corrupt(path string, off int64, err error, format string, args ...any) *CorruptError {
	return &CorruptError{Path: path, Offset: off, Reason: fmt.Sprintf(format, args...), Err: err}
}
