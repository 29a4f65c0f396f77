// Package dumpfile gives the offline verbs one view of a dump, whatever its
// format (pack or MCAP): a summary (ReadInfo: topics, counts, time range,
// triggers, per-topic losses), a walk over its records in file order (Walk,
// for cat), and a Source: the dump read as pack-model messages (name,
// channel, meta, producer and capture time, data) with its topics and dump
// information. Messages merges Sources of either format into one stream in
// capture-time order (replay, rules test, merge); Merge writes such a
// stream to a pack file. Export writes a Source in another format (MCAP,
// JSON lines) and Import reads JSON lines back into a pack dump.
//
// Which package reads or writes which format is decided here, in one table
// (formats.go): a format's name (the --format value), and the functions that
// export to it or import from it. Formats and LookupFormat say what each can
// do; adding a format is adding a row.
//
// An MCAP Source is read through mcap's PackReader, the inverse of the
// mapping MCAP dumps and exports are written with (docs/mcap.md): files of
// other writers work too (topic = channel topic, type = the channel's
// message encoding and schema). Every message carries its type
// (Message.Type: a pack file's type sections, an MCAP channel's), and Merge,
// Export and Import keep it. Its messages come in log_time order whatever the order
// of the file; see mcap.Cursor for what that costs (a first pass over the
// file, about 64 bytes per chunk, decompressed chunks held only while they
// are being read, 16 bytes per message of a chunk out of order).
//
// It is not for: encoding or decoding any format itself (packages pack,
// mcap and jsonl do), nor flags and output (cmd/edr-lite).
//
// # Caveats
//
// Msg.Data passed to a Walk callback is valid only until the callback
// returns; a Message from Messages or Source.InFileOrder only until the
// next message. A message's Type and its schema bytes alias the Source's
// file: valid until Close. Nothing here is safe for concurrent use.
package dumpfile
