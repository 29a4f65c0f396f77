package ingest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Message encodings: the MCAP Channel.message_encoding of a topic, what its
// payload bytes are. The first six are MCAP's well-known registry values
// (https://mcap.dev/spec/registry); the x-edr-* ones are edr-lite's own,
// in the x- namespace so they never collide with a registry value.
// docs/schemas.md says which ones edr-lite decodes (package schema).
const (
	EncodingProtobuf   = "protobuf"   // schema: SchemaProtobuf
	EncodingJSON       = "json"       // schema: SchemaNone or SchemaJSON
	EncodingCDR        = "cdr"        // ROS 2; schema: ros2msg, ros2idl or omgidl
	EncodingFlatbuffer = "flatbuffer" // schema: SchemaFlatbuffer
	EncodingROS1       = "ros1"       // schema: SchemaROS1Msg
	EncodingCBOR       = "cbor"       // no schema
	// EncodingPacked is a C-style packed struct described by a layout
	// (SchemaLayout): what ECUs and C producers send.
	EncodingPacked = "x-edr-packed"
	// EncodingRaw is opaque bytes: no schema (a Schema.Name may still name
	// the type). MCAP needs a non-empty message encoding, so raw topics
	// carry this one.
	EncodingRaw = "x-edr-raw"
)

// Schema encodings: the MCAP Schema.encoding, what Schema.Data is.
const (
	SchemaNone       = ""           // no schema; Data must be empty
	SchemaProtobuf   = "protobuf"   // a serialized google.protobuf.FileDescriptorSet (protoc --include_imports)
	SchemaJSON       = "jsonschema" // a JSON Schema document
	SchemaROS2Msg    = "ros2msg"    // concatenated ROS 2 .msg definitions
	SchemaROS2IDL    = "ros2idl"    // ROS 2 IDL
	SchemaOMGIDL     = "omgidl"     // OMG IDL
	SchemaROS1Msg    = "ros1msg"    // concatenated ROS 1 .msg definitions
	SchemaFlatbuffer = "flatbuffer" // a binary reflection.Schema (flatc -b --schema)
	// SchemaLayout is edr-lite's layout language for packed structs
	// (docs/schemas.md); Data is its UTF-8 source.
	SchemaLayout = "x-edr-layout"
)

const (
	// MaxSchemaSize is the largest Schema.Data accepted: 4 MiB, ten times
	// a large robot stack's whole protobuf descriptor set. Validate checks
	// it first; sources refuse to read a larger schema at all.
	MaxSchemaSize = 4 << 20
	// MaxTypeNameLen bounds encodings and the schema name in a Type.
	MaxTypeNameLen = 1024
)

// Errors of Type.Validate.
var (
	// ErrInvalidType: the Type is malformed (empty or non-ASCII encoding,
	// an unknown pairing of encodings, data without a schema encoding).
	ErrInvalidType = errors.New("ingest: invalid topic type")
	// ErrSchemaTooLarge: Schema.Data is larger than MaxSchemaSize.
	ErrSchemaTooLarge = errors.New("ingest: schema too large")
)

// Schema says how to read a topic's messages; the fields are MCAP's Schema
// record's.
type Schema struct {
	Name     string // type name, e.g. "foxglove.Pose" (the message in a protobuf set) or "vehicle.Speed"
	Encoding string // Schema* constant, SchemaNone when there is no schema
	Data     []byte // the schema itself; empty when Encoding is SchemaNone
}

// Type is what a topic carries: a message encoding and the schema of its
// messages. It is declared once per topic (by the producer, the source or
// the configuration), never per message.
//
// The zero Type means "not declared": a recorder records such a topic as
// raw bytes (Or). Raw bytes with a known type name are Raw(name).
type Type struct {
	MessageEncoding string // Encoding* constant or a custom value
	Schema          Schema
}

// Raw is the Type of opaque payloads with the given type name ("" when not
// known).
func Raw(name string) Type { return Type{MessageEncoding: EncodingRaw, Schema: Schema{Name: name}} }

// IsZero reports whether t was not declared (no message encoding and no
// schema).
func (t Type) IsZero() bool {
	return t.MessageEncoding == "" && t.Schema.Name == "" && t.Schema.Encoding == "" && len(t.Schema.Data) == 0
}

// OrRaw returns t, or, when t has no message encoding (undeclared, or only a
// type name), Raw with its schema name: what recorders and writers store.
func (t Type) OrRaw() Type {
	if t.MessageEncoding == "" {
		return Raw(t.Schema.Name)
	}
	return t
}

// Equal reports whether t and u are the same type (same encodings, name and
// schema bytes).
func (t Type) Equal(u Type) bool {
	return t.MessageEncoding == u.MessageEncoding && t.Schema.Name == u.Schema.Name &&
		t.Schema.Encoding == u.Schema.Encoding && string(t.Schema.Data) == string(u.Schema.Data)
}

// String returns "encoding name" for logs and tables ("x-edr-packed
// vehicle.Speed", "protobuf foxglove.CompressedImage", "x-edr-raw" when
// there is no name).
func (t Type) String() string {
	t = t.OrRaw()
	if t.Schema.Name == "" {
		return t.MessageEncoding
	}
	return t.MessageEncoding + " " + t.Schema.Name
}

// schemaEncodings lists, for each message encoding edr-lite knows, the
// schema encodings it may be paired with. Other message encodings accept any
// schema encoding (they are passed through).
var schemaEncodings = map[string][]string{
	EncodingProtobuf:   {SchemaProtobuf},
	EncodingJSON:       {SchemaNone, SchemaJSON},
	EncodingCDR:        {SchemaROS2Msg, SchemaROS2IDL, SchemaOMGIDL},
	EncodingFlatbuffer: {SchemaFlatbuffer},
	EncodingROS1:       {SchemaROS1Msg},
	EncodingCBOR:       {SchemaNone},
	EncodingPacked:     {SchemaLayout},
	EncodingRaw:        {SchemaNone},
}

// Validate checks a Type cheaply, without parsing its schema: the size cap
// first (ErrSchemaTooLarge), then names and the pairing of encodings
// (ErrInvalidType):
//
//   - MessageEncoding is non-empty; encodings are printable ASCII, names
//     valid UTF-8, at most MaxTypeNameLen bytes each.
//   - A known message encoding has a schema encoding it is paired with in
//     the MCAP registry (protobuf+protobuf, json+""/jsonschema,
//     cdr+ros2msg/ros2idl/omgidl, flatbuffer+flatbuffer, ros1+ros1msg)
//     or edr-lite's (x-edr-packed+x-edr-layout, x-edr-raw+"").
//   - SchemaNone has no Data; protobuf, flatbuffer, layout and JSON
//     schemas have Data, and protobuf and flatbuffer a Name (the message
//     to decode).
//
// Package schema's NewDecoder calls Validate, then parses the schema.
func (t Type) Validate() error {
	s := &t.Schema
	if len(s.Data) > MaxSchemaSize {
		return fmt.Errorf("%w: %d bytes of %q schema for %q, limit %d (MaxSchemaSize)",
			ErrSchemaTooLarge, len(s.Data), s.Encoding, s.Name, MaxSchemaSize)
	}
	if t.MessageEncoding == "" {
		return fmt.Errorf("%w: empty message encoding (raw bytes are %q)", ErrInvalidType, EncodingRaw)
	}
	for _, e := range []struct{ what, v string }{{"message encoding", t.MessageEncoding}, {"schema encoding", s.Encoding}} {
		if len(e.v) > MaxTypeNameLen || !printableASCII(e.v) {
			return fmt.Errorf("%w: %s %.40q: not printable ASCII of at most %d bytes", ErrInvalidType, e.what, e.v, MaxTypeNameLen)
		}
	}
	if len(s.Name) > MaxTypeNameLen || !utf8.ValidString(s.Name) {
		return fmt.Errorf("%w: schema name %.40q: not UTF-8 of at most %d bytes", ErrInvalidType, s.Name, MaxTypeNameLen)
	}
	if pairs, known := schemaEncodings[t.MessageEncoding]; known && !contains(pairs, s.Encoding) {
		return fmt.Errorf("%w: message encoding %q takes schema encoding %q, not %q",
			ErrInvalidType, t.MessageEncoding, pairs, s.Encoding)
	}
	switch s.Encoding {
	case SchemaNone:
		if len(s.Data) != 0 {
			return fmt.Errorf("%w: %d bytes of schema data without a schema encoding", ErrInvalidType, len(s.Data))
		}
	case SchemaProtobuf, SchemaFlatbuffer:
		if s.Name == "" {
			return fmt.Errorf("%w: a %s schema needs the name of the message to decode", ErrInvalidType, s.Encoding)
		}
		fallthrough
	case SchemaLayout, SchemaJSON:
		if len(s.Data) == 0 {
			return fmt.Errorf("%w: empty %s schema for %q", ErrInvalidType, s.Encoding, s.Name)
		}
	}
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ContentID is a content identifier: the first 16 bytes (128 bits) of a
// SHA-256. Equal schemas have equal IDs in every process and on every
// machine, so a file writer keeps one copy of a schema however many topics,
// dumps or recorders use it. SHA-256 rather than a faster non-cryptographic
// hash because schemas come from producers and a collision would make a
// reader decode a topic with another topic's schema; hashing runs once per
// schema (about 1 ms for a 1 MiB descriptor set).
type ContentID [16]byte

// String returns the 32 lower-case hex digits.
func (id ContentID) String() string { return hex.EncodeToString(id[:]) }

// ID returns the content ID of the schema: SHA-256 over the
// length-prefixed name, encoding and data, truncated to 16 bytes. It is what
// an MCAP writer de-duplicates Schema records by.
func (s Schema) ID() ContentID {
	return hashParts([]byte("edr-schema"), []byte(s.Name), []byte(s.Encoding), s.Data)
}

// ID returns the content ID of the Type: like Schema.ID but covering the
// message encoding too (two topics with the same schema and different
// message encodings differ). It is what a pack file de-duplicates types by.
func (t Type) ID() ContentID {
	return hashParts([]byte("edr-type"), []byte(t.MessageEncoding), []byte(t.Schema.Name),
		[]byte(t.Schema.Encoding), t.Schema.Data)
}

func hashParts(parts ...[]byte) ContentID {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var id ContentID
	copy(id[:], h.Sum(nil))
	return id
}

// Packed is the Type of a packed struct described by layout (edr-lite's
// layout language, docs/schemas.md) and named name: message encoding
// x-edr-packed, schema encoding x-edr-layout, the layout as the schema.
func Packed(name, layout string) Type {
	return Type{MessageEncoding: EncodingPacked, Schema: Schema{Name: name, Encoding: SchemaLayout, Data: []byte(layout)}}
}

// Named is a Type that gives only a type name: the encoding is not
// declared (the recorder records raw bytes, or what its configuration
// says). It is what sources that know no more than a name declare.
func Named(name string) Type { return Type{Schema: Schema{Name: name}} }
