// Package schema owns what a topic's type is and how its messages are
// decoded: the message encoding and schema every topic carries (MCAP's
// well-known registry values, plus edr-lite's own for packed structs and
// raw bytes), and decoders that turn a message into JSON or into numbers by
// field path for plots, Parquet columns, replay tolerance checks and
// "cat --decode". docs/schemas.md is the reference: the encodings table,
// the layout language and its grammar, field paths, units, event time and
// the limits.
//
// In one paragraph: a Type is a message encoding and a Schema (name,
// schema encoding, data), with Validate (cheap, the size cap first) and a
// content ID for de-duplication in files — ingest's types, aliased here so
// producers declare them without linking this package. Check is what a
// recorder runs on a declared type (parse what is decoded, validate the
// rest). NewDecoder builds a Decoder
// (AppendJSON, Numeric, Fields) for protobuf (a FileDescriptorSet), json
// (with or without a JSON Schema) and packed structs (a layout); every
// other encoding is passed through and says so with ErrNoDecoder.
// ParseLayout compiles a layout: a *Layout is a Decoder, hands out
// Accessors that read one field by path at an offset computed once, and
// reads such JSON back into packed bytes (AppendPacked), and
// writes a JSON Schema of its JSON so a writer can store the topic as
// json + jsonschema. NewEventTime reads a message's own timestamp.
//
// It is not for: storing or moving messages (shm, pack, mcap), or encoding
// them (producers do). CDR, flatbuffer, ROS 1 and CBOR payloads are
// recorded with their schemas but not decoded here.
//
// # Caveats
//
//   - Hot paths: Accessor reads, EventTime.Ns on packed and protobuf
//     topics, and Layout.AppendJSON / Layout.Numeric (called on the
//     *Layout, with room in dst) allocate nothing; alloc_test.go proves
//     it. Through the Decoder interface the callback of Numeric escapes,
//     so a capturing closure costs the caller one allocation per call.
//     Protobuf and JSON decoding allocate (a dynamic message, a scan).
//   - Lifetimes: the path handed to a Numeric callback is valid only
//     during the call; a map lookup m[string(path)] does not allocate,
//     anything kept needs a copy. Accessor.Bytes returns a slice of the
//     message. Fields returns a shared slice: do not modify it.
//   - Concurrency: Types, Layouts, Accessors, Decoders and EventTimes are
//     immutable once built and safe for concurrent use.
//   - Hostile input: a schema larger than MaxSchemaSize is refused before it
//     is parsed; parsing is linear in the schema and bounded by MaxDepth,
//     MaxFields and MaxLayoutSize; decoding never panics and is bounded by
//     the message (a short packed message reads as false or
//     ErrShortMessage). The fuzz targets FuzzLayout and FuzzSchemaDecode
//     hold it to that.
//   - Packed messages may be longer than their layout: the extra bytes are
//     ignored, so a producer can append fields without breaking readers.
//   - JSON output follows protojson's conventions where JSON has no answer
//     (NaN and infinities as strings, bytes as base64); protobuf's JSON is
//     protojson's, whose whitespace varies between builds.
package schema
