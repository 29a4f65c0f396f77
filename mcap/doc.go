// Package mcap writes and reads MCAP files (https://mcap.dev/spec, major
// version 0), the container Foxglove and the ROS 2 tooling open directly.
// edr-lite uses it as a dump format (format = "mcap") and for
// "edr-lite export --format mcap"; info and cat read .mcap files with it.
//
// The writer (NewWriter over any io.Writer, Create for a dump file written
// with write(2) — or through a sliding mmap window, FileOptions.Mmap —,
// NAME.tmp then renamed) produces:
//
//	Magic Header
//	Chunk(Schema*, Channel*, Message*) MessageIndex* ...   (data section)
//	Metadata* (edr.trigger, edr.topic_stats)                (data section, outside chunks)
//	DataEnd(crc of every byte before it)
//	Schema* Channel* Statistics ChunkIndex* MetadataIndex*  (summary, grouped by opcode)
//	SummaryOffset*                                          (one per summary group)
//	Footer(summary_start, summary_offset_start, summary crc) Magic
//
// Chunks are compressed with "lz4" (LZ4 frame format) or "zstd", or not at
// all (""), and carry the CRC32 of their uncompressed records. A topic's
// type (Topic.Type, an ingest.Type) gives its channel's message encoding and
// a Schema record (a protobuf descriptor set as it is); a raw topic is
// written as opaque bytes (message_encoding "x-edr-raw", and a Schema with the
// type name and an empty encoding when the type name is known), which viewers
// list with its counts and times but do not decode. See (*Writer).AddTopic.
// PackWriter transcodes packed structs (x-edr-packed) to json with their
// layout's JSON Schema, keeping the layout in the channel metadata
// (MetadataLayout) so PackReader gives them back packed; Options.KeepPacked
// writes them as they are. A topic whose type changes gets a new channel.
//
// PackWriter writes pack-model messages (name, channel, meta, gen_ts,
// done_ts, data) with pack.Writer's Add / SetDumpInfo / Close, so the
// recorder writes MCAP dumps through the same calls; ExportPack converts a
// pack file. PackReader is the inverse: it reads an MCAP file (ours or
// another writer's) back as pack-model messages, topics and dump
// information, for the offline tools (replay, rules test, merge, export);
// ExportMCAP rewrites one. docs/mcap.md gives the mapping and the metadata
// keys.
//
// The Reader (Open maps a file read-only; NewReader takes bytes) gives Info
// (from the summary when present, else by scanning), Messages (every
// message in file order, chunks decompressed and CRC-checked), and a Cursor
// reading one message at a time in log_time order (or file order) whatever
// the order of the file (MessagesInTimeOrder is the same as a callback);
// its doc says what that costs. It reads other writers' files too:
// unchunked messages, files without a summary or DataEnd, unknown record
// types (skipped, as the specification asks).
//
// Recover (RecoverFile for files) rebuilds a valid, indexed file from a
// truncated or damaged one: every chunk whose CRC checks out, every record
// outside a damaged region, resynchronising on the next intact chunk, with
// a report of what was lost where (docs/mcap.md, Recovery).
//
// It is not for: attachments (read as counts, never written), seeking by
// time through the indexes (the reader walks the file; Cursor.SeekTime
// skips whole chunks, after its first pass), or decoding payloads.
//
// # Caveats
//
//   - Writer, FileWriter and Reader are not safe for concurrent use.
//   - WriteMessage copies the payload; nothing passed to the writer is kept,
//     except that AddSchema / AddChannel copy their arguments once.
//   - Messages hands out a Message and Data that are reused: valid only
//     until the callback returns (Cursor and PackReader: until the next
//     Next). Data aliases the mapping (uncompressed chunks) or a
//     decompression buffer; copy what you keep. Channel and Info values
//     stay valid until Close.
//   - A chunk is held in memory until it is full (ChunkSize, default 1 MiB,
//     plus the compressed copy); with Options.Concurrency up to
//     Concurrency+1 closed chunks and their compressed copies, compressed
//     on goroutines of their own that end with their chunk. The summary is
//     built in memory at Close (tens of bytes per chunk and channel).
//   - Reserve hands out bytes of the open chunk, valid until the next call
//     on the Writer.
//   - WriteMessageBorrowed (when CanBorrow) keeps m.Data until its chunk is
//     written: the lender closes that chunk (ChunkFull,
//     WriteChunkProvisional, then KeepChunk or TakeBackChunk, no other call
//     in between); a Flush or Close writes it without the lender's check.
//   - Timestamps are uint64 nanoseconds since the UNIX epoch.
//   - The reader checks every length against its container before use and
//     bounds decompression by ReaderOptions.MaxChunkSize; errors are
//     *CorruptError values naming file, offset and field.
package mcap
