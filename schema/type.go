package schema

import (
	"errors"

	"github.com/edr-lite/edr-lite/ingest"
)

// The plain data of a topic's type lives in package ingest (the leaf every
// source and producer links, so a producer can declare a type without
// linking protobuf); package schema works on those same types. The names
// below are aliases of ingest's, not copies.

// Message encodings (ingest.Encoding*): see ingest and docs/schemas.md.
const (
	EncodingProtobuf   = ingest.EncodingProtobuf   // decoded (schema: SchemaProtobuf)
	EncodingJSON       = ingest.EncodingJSON       // decoded (schema: SchemaNone or SchemaJSON)
	EncodingCDR        = ingest.EncodingCDR        // ROS 2; passed through (ErrNoDecoder)
	EncodingFlatbuffer = ingest.EncodingFlatbuffer // passed through (ErrNoDecoder)
	EncodingROS1       = ingest.EncodingROS1       // passed through (ErrNoDecoder)
	EncodingCBOR       = ingest.EncodingCBOR       // passed through (ErrNoDecoder)
	EncodingPacked     = ingest.EncodingPacked     // a packed struct described by a layout; decoded
	EncodingRaw        = ingest.EncodingRaw        // opaque bytes (ErrNoDecoder)
)

// Schema encodings (ingest.Schema*).
const (
	SchemaNone       = ingest.SchemaNone
	SchemaProtobuf   = ingest.SchemaProtobuf
	SchemaJSON       = ingest.SchemaJSON
	SchemaROS2Msg    = ingest.SchemaROS2Msg
	SchemaROS2IDL    = ingest.SchemaROS2IDL
	SchemaOMGIDL     = ingest.SchemaOMGIDL
	SchemaROS1Msg    = ingest.SchemaROS1Msg
	SchemaFlatbuffer = ingest.SchemaFlatbuffer
	SchemaLayout     = ingest.SchemaLayout
)

// Bounds for hostile schemas. They are checked before (MaxSchemaSize) or
// while (the others) a schema is parsed, so a schema costs time and memory
// linear in its size whatever it says.
const (
	// MaxSchemaSize is ingest.MaxSchemaSize: the largest Schema.Data
	// accepted (4 MiB). The check comes first; a larger schema is not read
	// at all.
	MaxSchemaSize = ingest.MaxSchemaSize
	// MaxDepth bounds nesting, the outermost level counting as one: of
	// structs in a layout (the message and 63 nested structs), of message
	// types expanded by Fields, of messages and JSON values inside a
	// message.
	MaxDepth = 64
	// MaxFields bounds the leaf fields a schema lists (Fields, arrays
	// counted once) and the field declarations of a layout.
	MaxFields = 1 << 16
	// MaxLayoutSize bounds the fixed part of a packed message (strings
	// counted at their length prefix): 16 MiB.
	MaxLayoutSize = 16 << 20
	// maxNameLen bounds names in field paths.
	maxNameLen = ingest.MaxTypeNameLen
)

// Schema is ingest.Schema: name, schema encoding, data (MCAP's Schema
// record's fields).
type Schema = ingest.Schema

// Type is ingest.Type: a message encoding and a Schema. Type.Validate
// (cheap, the size cap first) and Type.ID are ingest's; NewDecoder
// validates, then parses.
type Type = ingest.Type

// ID is ingest.ContentID, the content identifier of a Schema or Type.
type ID = ingest.ContentID

// Raw is the Type of opaque payloads with the given type name ("" when not
// known).
func Raw(name string) Type { return ingest.Raw(name) }

// validate is t.Validate with its error also matching this package's
// sentinels: ErrTooLarge for the size cap, ErrInvalid for the rest.
func validate(t Type) error {
	err := t.Validate()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ingest.ErrSchemaTooLarge):
		return &validateError{err, ErrTooLarge}
	}
	return &validateError{err, ErrInvalid}
}

// validateError is an ingest.Type.Validate error that also matches one of
// this package's sentinels; its text is the ingest error's.
type validateError struct{ err, sentinel error }

func (e *validateError) Error() string   { return e.err.Error() }
func (e *validateError) Unwrap() []error { return []error{e.err, e.sentinel} }

// Check validates t and parses its schema when edr-lite decodes its
// encoding (a protobuf descriptor set that must build and hold the named
// message, a layout that must compile, a JSON Schema that must parse): what
// a recorder runs once when a topic declares a type, so a hostile schema
// is refused with its cause before anything is recorded under it. Types of
// encodings edr-lite passes through (raw, cdr, flatbuffer, ros1, cbor,
// custom) are only validated.
func Check(t Type) error {
	_, err := NewDecoder(t)
	if errors.Is(err, ErrNoDecoder) {
		return nil
	}
	return err
}
