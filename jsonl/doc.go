// Package jsonl is the JSON-lines form of a dump ("edr-lite-jsonl"): text
// that head, grep and jq read, that streams and appends, and that turns back
// into a pack dump with the same messages, times, channels, meta bytes, dump
// information and metadata.
//
// In one paragraph: Export writes a dump as a header line (Header: writer,
// creation time, the topics with their types and counts, a table of the
// topics' types (message encoding, schema, content ID), the dump
// information as stored, the other metadata sections) and then one line per
// Message in file order (dumpfile.Export hands it those of a pack
// or MCAP file):
//
//	{"seq":0,"topic":"vehicle/speed","ts":1764670000010000000,"gen_ts":1764670000009999000,"data":"AACgQQ=="}
//
// Import reads such lines back into a pack Writer, checking every line
// (ErrFormat names the line and field). Report says what either carried.
// The format is specified in docs/replay.md ("JSON lines").
//
// It is not for: recording or replaying (packages engine and replay), and
// not for reading a dump as messages (dumpfile); "edr-lite cat
// --jsonl" prints a lighter, one-way JSON form of its own.
//
// # Caveats
//
//   - Import takes ownership of the Writer its callback makes: it closes it,
//     also on error, and then the output is incomplete and should be
//     discarded; its Report is nil.
//   - Frame boundaries are not kept: Import regroups messages into frames
//     (pack.Writer.Add), and a message with neither a producer nor a capture
//     time, whose time came from its frame, exports with a different ts
//     after the round trip.
//   - Export's walk may reuse the Message it hands over and its bytes; Export
//     keeps nothing of it after the callback returns. Import reuses its
//     buffers between calls to Writer.Add (which copies).
//   - Export and Import keep no state between calls; a call is not safe
//     for concurrent use of the Writer or walk it is given.
package jsonl
