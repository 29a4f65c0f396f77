package schema

import "fmt"

// Decoder reads the messages of one Type: as JSON (cat --decode, reports),
// as numbers by field path (plots, Parquet columns, replay tolerance
// checks), and says which leaf fields the schema declares.
//
// Decoders returned by NewDecoder are immutable and safe for concurrent
// use.
type Decoder interface {
	// AppendJSON appends msg as one JSON object on one line. On error it
	// returns dst unchanged.
	AppendJSON(dst, msg []byte) ([]byte, error)
	// Numeric calls fn for each numeric leaf of msg (bool as 0/1, enums as
	// their number) with its concrete path ("wheel[2]", "header.stamp.sec")
	// in schema order. path is valid only during the call. On error fn has
	// not been called.
	Numeric(msg []byte, fn func(path []byte, v float64)) error
	// Fields lists the leaf fields the schema declares ("[]" for any
	// index, ".*" for any map key); nil when there is no schema (JSON
	// without one). The slice is shared; do not modify it.
	Fields() []Field
}

// NewDecoder validates t (Validate: the size cap first, so an oversized
// schema is never parsed) and builds its decoder:
//
//   - EncodingPacked: the layout (a *Layout).
//   - EncodingProtobuf: the message Schema.Name of the FileDescriptorSet
//     in Schema.Data.
//   - EncodingJSON: messages as they are; Fields from the JSON Schema
//     when there is one.
//
// Every other message encoding (EncodingRaw, cdr, flatbuffer, ros1, cbor,
// custom ones) is recorded and passed through but not decoded: the error
// wraps ErrNoDecoder. A schema that does not build wraps ErrInvalid, one
// beyond the bounds for hostile schemas ErrLimit.
func NewDecoder(t Type) (Decoder, error) {
	if err := validate(t); err != nil {
		return nil, err
	}
	switch t.MessageEncoding {
	case EncodingPacked:
		l, err := ParseLayout(t.Schema.Data)
		if err != nil {
			return nil, fmt.Errorf("schema %q: %w", t.Schema.Name, err)
		}
		return l, nil
	case EncodingProtobuf:
		d, err := newProtobuf(t.Schema)
		if err != nil {
			return nil, err
		}
		return d, nil
	case EncodingJSON:
		d, err := newJSON(t.Schema)
		if err != nil {
			return nil, err
		}
		return d, nil
	case EncodingRaw:
		return nil, fmt.Errorf("%w: %s is opaque bytes", ErrNoDecoder, EncodingRaw)
	}
	return nil, fmt.Errorf("%w: %q (recorded and passed through as it is)", ErrNoDecoder, t.MessageEncoding)
}
