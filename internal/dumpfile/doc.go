// Package dumpfile gives the offline verbs one view of a dump, whatever its
// format (pack or MCAP): a summary (topics, counts, time range, triggers,
// per-topic losses) and a walk over its messages in file order.
//
// It is not for: writing dumps, or anything format-specific beyond what
// "info" and "cat" show; use packages pack and pack/mcap for that.
//
// # Caveats
//
// Msg.Data passed to a Walk callback is valid only until the callback
// returns. Nothing here is safe for concurrent use.
package dumpfile
