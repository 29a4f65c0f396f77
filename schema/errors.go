package schema

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors about a schema wrap ErrInvalid, ErrTooLarge,
// ErrLimit or ErrNoDecoder; errors about a message wrap ErrBadMessage or
// ErrShortMessage, so callers test with errors.Is. A layout source error is
// a *LayoutError naming line and column.
var (
	// ErrInvalid: the Type or its schema is malformed (unknown pairing of
	// encodings, a protobuf descriptor that does not build, a layout that
	// does not parse, a message name the schema does not define).
	ErrInvalid = errors.New("schema: invalid schema")
	// ErrTooLarge: the schema is larger than MaxSchemaSize; nothing was parsed.
	ErrTooLarge = errors.New("schema: schema too large")
	// ErrLimit: the schema parses but exceeds a bound for hostile schemas
	// (MaxDepth, MaxFields, MaxLayoutSize).
	ErrLimit = errors.New("schema: schema exceeds a limit")
	// ErrNoDecoder: the message encoding is recorded and passed through but
	// not decoded by edr-lite (raw bytes, cdr, flatbuffer, ros1, cbor, and
	// any custom encoding).
	ErrNoDecoder = errors.New("schema: no decoder for this message encoding")
	// ErrNoField: a field path does not name a field of the schema, or names
	// one that cannot be read the way asked (a struct where a number is
	// wanted).
	ErrNoField = errors.New("schema: no such field")
	// ErrBadMessage: a message does not decode with its schema.
	ErrBadMessage = errors.New("schema: message does not match its schema")
	// ErrShortMessage: a packed message ends before its layout does. It is
	// returned as is (never wrapped) so the hot path allocates nothing.
	ErrShortMessage = errors.New("schema: message shorter than its layout")
	// ErrTooDeep: a message nests deeper than MaxDepth.
	ErrTooDeep = errors.New("schema: message nests too deep")
)

// LayoutError is an error in a layout source: where and what.
// Error() reads "layout:3:12: unknown type f33le". Unwrap returns ErrInvalid
// (syntax and meaning) or ErrLimit (a bound for hostile schemas).
type LayoutError struct {
	Line, Col int    // 1-based; Col counts bytes
	Msg       string // what is wrong
	Err       error  // ErrInvalid or ErrLimit
}

func (e *LayoutError) Error() string { return fmt.Sprintf("layout:%d:%d: %s", e.Line, e.Col, e.Msg) }

// Unwrap returns ErrInvalid or ErrLimit.
func (e *LayoutError) Unwrap() error { return e.Err }
