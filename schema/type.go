package schema

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"unicode/utf8"
)

// Message encodings: the MCAP Channel.message_encoding of a topic, what its
// payload bytes are. The first six are MCAP's well-known registry values
// (https://mcap.dev/spec/registry); the x-edr-* ones are edr-lite's own,
// in the x- namespace so they never collide with a registry value.
const (
	EncodingProtobuf   = "protobuf"   // decoded (schema: SchemaProtobuf)
	EncodingJSON       = "json"       // decoded (schema: SchemaNone or SchemaJSON)
	EncodingCDR        = "cdr"        // ROS 2; passed through (ErrNoDecoder)
	EncodingFlatbuffer = "flatbuffer" // passed through (ErrNoDecoder)
	EncodingROS1       = "ros1"       // passed through (ErrNoDecoder)
	EncodingCBOR       = "cbor"       // passed through (ErrNoDecoder)
	// EncodingPacked is a C-style packed struct described by a layout
	// (SchemaLayout): what ECUs and C producers send. Decoded.
	EncodingPacked = "x-edr-packed"
	// EncodingRaw is opaque bytes: no decoder, schema encoding SchemaNone
	// (a Schema.Name may still name the type). MCAP needs a non-empty
	// message encoding, so raw topics carry this one (package mcap writes
	// the same string, mcap.RawMessageEncoding).
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

// Bounds for hostile schemas. They are checked before (MaxSchemaSize) or
// while (the others) a schema is parsed, so a schema costs time and memory
// linear in its size whatever it says.
const (
	// MaxSchemaSize is the largest Schema.Data accepted: 4 MiB, ten times
	// a large robot stack's whole protobuf descriptor set. The check comes
	// first; a larger schema is not read at all.
	MaxSchemaSize = 4 << 20
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
	// maxNameLen bounds names and encodings in a Type.
	maxNameLen = 1024
)

// Schema says how to read a topic's messages; the fields are MCAP's Schema
// record's.
type Schema struct {
	Name     string // type name, e.g. "foxglove.Pose" (the message in a protobuf set) or "vehicle.Speed"
	Encoding string // Schema* constant, SchemaNone when there is no schema
	Data     []byte // the schema itself; empty when Encoding is SchemaNone
}

// Type is what a topic carries: a message encoding and the schema of its
// messages. The zero Type is invalid; raw bytes are
// Type{MessageEncoding: EncodingRaw}.
type Type struct {
	MessageEncoding string // Encoding* constant or a custom value
	Schema          Schema
}

// Raw is the Type of opaque payloads with the given type name ("" when not
// known).
func Raw(name string) Type { return Type{MessageEncoding: EncodingRaw, Schema: Schema{Name: name}} }

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
// first (ErrTooLarge), then names and the pairing of encodings (ErrInvalid):
//
//   - MessageEncoding is non-empty; encodings are printable ASCII, names
//     valid UTF-8, at most 1024 bytes each.
//   - A known message encoding has a schema encoding it is paired with in
//     the MCAP registry (protobuf+protobuf, json+""/jsonschema,
//     cdr+ros2msg/ros2idl/omgidl, flatbuffer+flatbuffer, ros1+ros1msg)
//     or edr-lite's (x-edr-packed+x-edr-layout, x-edr-raw+"").
//   - SchemaNone has no Data; protobuf, flatbuffer, layout and JSON
//     schemas have Data, and protobuf and flatbuffer a Name (the message
//     to decode).
//
// NewDecoder calls Validate, then parses the schema.
func (t Type) Validate() error {
	s := &t.Schema
	if len(s.Data) > MaxSchemaSize {
		return fmt.Errorf("%w: %d bytes of %q schema for %q, limit %d (MaxSchemaSize)",
			ErrTooLarge, len(s.Data), s.Encoding, s.Name, MaxSchemaSize)
	}
	if t.MessageEncoding == "" {
		return fmt.Errorf("%w: empty message encoding (raw bytes are %q)", ErrInvalid, EncodingRaw)
	}
	for _, e := range []struct{ what, v string }{{"message encoding", t.MessageEncoding}, {"schema encoding", s.Encoding}} {
		if len(e.v) > maxNameLen || !printableASCII(e.v) {
			return fmt.Errorf("%w: %s %.40q: not printable ASCII of at most %d bytes", ErrInvalid, e.what, e.v, maxNameLen)
		}
	}
	if len(s.Name) > maxNameLen || !utf8.ValidString(s.Name) {
		return fmt.Errorf("%w: schema name %.40q: not UTF-8 of at most %d bytes", ErrInvalid, s.Name, maxNameLen)
	}
	if pairs, known := schemaEncodings[t.MessageEncoding]; known && !contains(pairs, s.Encoding) {
		return fmt.Errorf("%w: message encoding %q takes schema encoding %q, not %q",
			ErrInvalid, t.MessageEncoding, pairs, s.Encoding)
	}
	switch s.Encoding {
	case SchemaNone:
		if len(s.Data) != 0 {
			return fmt.Errorf("%w: %d bytes of schema data without a schema encoding", ErrInvalid, len(s.Data))
		}
	case SchemaProtobuf, SchemaFlatbuffer:
		if s.Name == "" {
			return fmt.Errorf("%w: a %s schema needs the name of the message to decode", ErrInvalid, s.Encoding)
		}
		fallthrough
	case SchemaLayout, SchemaJSON:
		if len(s.Data) == 0 {
			return fmt.Errorf("%w: empty %s schema for %q", ErrInvalid, s.Encoding, s.Name)
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

// ID is a content identifier: the first 16 bytes (128 bits) of a SHA-256.
// Equal schemas have equal IDs in every process and on every machine, so a
// file writer keeps one copy of a schema however many topics, dumps or
// recorders use it. SHA-256 rather than a faster non-cryptographic hash
// because schemas come from producers and a collision would make a reader
// decode a topic with another topic's schema; hashing runs once per schema
// (about 1 ms for a 1 MiB descriptor set).
type ID [16]byte

// String returns the 32 lower-case hex digits.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// ID returns the content ID of the schema: SHA-256 over the
// length-prefixed name, encoding and data, truncated to 16 bytes. It is what
// an MCAP writer de-duplicates Schema records by.
func (s Schema) ID() ID {
	return hashParts([]byte("edr-schema"), []byte(s.Name), []byte(s.Encoding), s.Data)
}

// ID returns the content ID of the Type: like Schema.ID but covering the
// message encoding too (two topics with the same schema and different
// message encodings differ).
func (t Type) ID() ID {
	return hashParts([]byte("edr-type"), []byte(t.MessageEncoding), []byte(t.Schema.Name),
		[]byte(t.Schema.Encoding), t.Schema.Data)
}

func hashParts(parts ...[]byte) ID {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var id ID
	copy(id[:], h.Sum(nil))
	return id
}
