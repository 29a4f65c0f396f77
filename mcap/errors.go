package mcap

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of these (or an
// error from the io / os packages) so callers can test with errors.Is.
var (
	// ErrBadMagic: the bytes do not start (or end) with the MCAP magic.
	ErrBadMagic = errors.New("mcap: bad magic")
	// ErrTruncated: a record or field runs past the end of its container.
	ErrTruncated = errors.New("mcap: truncated")
	// ErrCorrupt: a field holds a value the specification does not allow.
	ErrCorrupt = errors.New("mcap: corrupt record")
	// ErrCRC: a stored CRC32 does not match the bytes it covers.
	ErrCRC = errors.New("mcap: crc mismatch")
	// ErrCompression: a chunk names a compression this package does not
	// support, or its payload does not decompress to the declared size.
	ErrCompression = errors.New("mcap: compression")
	// ErrTooLarge: a length field exceeds a configured limit.
	ErrTooLarge = errors.New("mcap: too large")
	// ErrUnknownChannel: a message refers to a channel id never defined.
	ErrUnknownChannel = errors.New("mcap: unknown channel")
	// ErrNotSupported: the operation is not available on this platform.
	ErrNotSupported = errors.New("mcap: not supported on this platform")
	// ErrChannelLimit: more than 65535 channels or schemas.
	ErrChannelLimit = errors.New("mcap: too many channels or schemas")
)

// CorruptError reports a problem with the bytes of an MCAP file: which file,
// at which byte offset, in which record field, and why (Err, one of the
// sentinels above, possibly wrapping a decompressor's error).
type CorruptError struct {
	File   string // file name, or "" for an in-memory buffer
	Offset int64  // byte offset from the start of the file (or chunk data, see Field)
	Field  string // record and field, e.g. "Chunk.records" or "chunk@1234/Message.data"
	Err    error
}

func (e *CorruptError) Error() string {
	name := e.File
	if name == "" {
		name = "<mcap>"
	}
	return fmt.Sprintf("%s: offset %d: %s: %v", name, e.Offset, e.Field, e.Err)
}

// Unwrap returns the cause.
func (e *CorruptError) Unwrap() error { return e.Err }
