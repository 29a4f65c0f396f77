// Package dumpfile gives the offline verbs one view of a dump, whatever its
// format (pack or MCAP): a summary (ReadInfo: topics, counts, time range,
// triggers, per-topic losses), a walk over its records in file order (Walk,
// for cat), and a Source: the dump read as pack-model messages (name,
// channel, meta, producer and capture time, data) with its topics and dump
// information. Messages merges Sources of either format into one stream in
// capture-time order (replay, rules test, merge); Merge writes such a
// stream to a pack file.
//
// An MCAP Source is read through mcap's PackReader, the inverse of the
// mapping MCAP dumps and exports are written with (docs/mcap.md): files of
// other writers work too (topic = channel topic, type = schema name or
// message encoding). Its messages come in log_time order whatever the order
// of the file; see mcap.Cursor for what that costs (a first pass over the
// file, about 64 bytes per chunk, decompressed chunks held only while they
// are being read, 16 bytes per message of a chunk out of order).
//
// It is not for: writing dumps other than Merge's pack output, or anything
// format-specific beyond that; use packages pack and mcap for that.
//
// # Caveats
//
// Msg.Data passed to a Walk callback is valid only until the callback
// returns; a Message from Messages or Source.InFileOrder only until the
// next message. Nothing here is safe for concurrent use.
package dumpfile
