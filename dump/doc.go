// Package dump is the dump pipeline: it turns a trigger into a file. A
// Dumper accepts triggers (merging overlapping ones or not, rate-limited),
// waits until the largest post window of the selected topics has passed,
// reads each topic's window out of the recorder's rings through the
// engine's window API (engine.Select, engine.WindowCursor), merges them in
// capture order (or producer order through a bounded reorder stage), passes
// them through the write-path transforms of Config.Transforms (EventOrder:
// topics in the order of their event time; transform.go), and writes the
// file through a Writer — pack (write(2) path by default, a
// stream or mmap writer as options) or MCAP (write(2) by default, mmap as
// an option) — as NAME.tmp → fsync → rename
// → directory fsync. Each dump carries its trigger records and per-topic
// accounting (dumpinfo.Info): messages, bytes, overwritten, oversize,
// skipped while busy and lost at the source, for its window. After each
// dump the oldest beyond the rotation bounds are deleted, one at a time,
// never one a Keeper keeps; a dump that would leave less than MinFreeDisk
// is refused, unless (with a Keeper) deleting old dumps makes its room
// (Dir.MakeRoom: never in vain). Hooks hear every finalized dump on their
// own goroutine.
//
// Dir owns the dump directory: how dumps are named, which files are dumps
// or leftovers of an interrupted dump, rotation; the Dumper and
// "edr-lite ls" both go through it.
//
// With Config.Signer every dump is sealed while it is written and chained
// in the directory's ledger (evidence.Chain; a rotated dump recorded
// before it is deleted: Dir.Removing); EncryptedWriter writes dumps
// encrypted at rest to age recipients (docs/evidence.md).
//
// It is not for: keeping history (package engine), Lua (package scripts),
// sockets (packages capture and control), or the bytes of a file format
// (packages pack and mcap; the Writers here adapt them).
//
// # Caveats
//
// A Dumper needs a started Recorder and must be stopped (Stop) before the
// Recorder is closed: Stop writes pending dumps within Config.StopTimeout
// and abandons (removes) one still being written at the deadline. Dumps
// never pause recording or clear rings, unless the Recorder's
// Config.BusySkipData drops messages while a dump is written (counted).
// Writers are called from the Dumper's goroutine only; a payload passed to
// WriteMessage is valid only during the call.
//
// The default pack writer (NewPackWriteWriter) and the MCAP writer of
// uncompressed dumps (NewMCAPWriter) are the exceptions that read the rings
// themselves: they take payloads of FromRingMin bytes and more where they
// lie in the ring (engine.WindowCursor.Borrow), not copied, write each
// frame or chunk provisionally (pack.Writer.WriteFrameProvisional,
// mcap.Writer.WriteChunkProvisional), and only after the writev check
// that no producer overwrote a borrowed payload (WindowCursor.Intact). A
// frame or chunk a producer tore is taken back and written again without
// the overwritten messages, counted lost exactly as a copy a producer
// tears (Result.Rewritten counts them); a message is accounted in the
// dump's figures only once its frame or chunk is in the file intact. Such
// payloads are exposed to producers from the message's turn in the merge
// until the writev returns (one frame or chunk, FrameSize bytes), not only
// during a copy: a ring barely larger than a dump's backlog loses a few
// more messages than with
// PackWriteTuning.Copying.
package dump
