// Package pack implements the edr-lite dump file format ("pack"): the frame
// model, its protobuf-wire meta, the mmap writer and streaming writer, the
// mmap reader with an index for seeking by time, per-frame CRC32C and
// optional compression, verification and recovery of damaged files.
//
// The normative byte layout is FORMAT.md in this directory; the frame meta
// is FrameV2Proto.Frame of frame.v2.proto.
//
// In one paragraph: build a Frame with NewFrame and AddMeta /
// AddMetaWithData (copied) / AddMetaBorrowed (not copied); write frames with
// a Writer from Create (durable file, Linux; write(2) or mmap) or NewStreamWriter (any io.Writer; same
// bytes), attach SetDumpInfo / AddMetadata, Flush for durability, Close to
// write the index and trailer; SetTopicType records a topic's type (message
// encoding and schema) before the frames it applies to, each distinct type
// stored once (FORMAT.md, "Type section"). Read with Open: ReadInto (with data) or
// ReadMetaInto (meta only) into a reused Frame until io.EOF, Tell /
// SeekFrame / SeekTime to move, Summary and DumpInfo for what the file
// holds without reading frames, Types for the type sections (TypeIndex
// answers a frame's message its type), ReaderOptions.SkipDamaged to read on
// past damage (Skipped says what was passed over). Read from any io.Reader (a pipe, a socket)
// with NewStreamReader: front to back, frame by frame, no index, memory
// bounded by the records read; DecodeFrame decodes one frame record held
// in memory.
//
// It is not for: the recorder (package engine decides what goes into a
// dump; pack only writes and reads it), not for MCAP, and not for reading
// several dumps as one stream in time order (dumpfile.Messages
// merges pack and MCAP dumps message by message).
//
// # Caveats
//
//   - Aliasing: bytes a Reader puts into a Frame (Meta, data blocks) alias a
//     read-only mapping (writing to them crashes) or the Frame's own
//     decompression buffer. They are valid until the next read into that
//     Frame or the Reader's Close. Copy what must live longer.
//   - AddMetaBorrowed keeps the caller's slices until the frame is written
//     or Reset; the caller must not change them before.
//   - A StreamReader's frames alias its record buffer: valid until its next
//     read. Its metadata (DumpInfo) is known once the sections, written
//     after the last frame, have been read.
//   - ReaderOptions.ReadAhead starts helper goroutines at the first
//     ReadInto; Close ends them. A Frame filled by ReadInto with read-ahead
//     owns the buffers its data aliases until the next ReadInto into it,
//     as without.
//   - A Reader maps its file. If another process truncates it meanwhile, a
//     read past the new end is an error wrapping ErrShrunk naming the offset
//     (fault.go: every method touching the mapping runs with
//     debug.SetPanicOnFault), not SIGBUS; bytes already handed out still
//     alias the mapping, so a caller touching them after the file shrank
//     faults in its own code.
//   - Concurrency: Frame, Writer, Reader and StreamReader are not safe for concurrent use;
//     use one Reader per goroutine (they share the page cache). FrameCache is
//     safe for concurrent use.
//   - Create writes with write(2) by default and through an mmap window with
//     WriterOptions.Mmap; the mmap writer starts a helper goroutine that
//     populates the window ahead (ended by Close). Create is Linux-only;
//     elsewhere it returns
//     ErrNotSupported and NewStreamWriter over an *os.File does the job.
//     On other platforms Open reads the file into memory.
//   - A file is complete only after Close returned nil; the engine writes
//     NAME.tmp and renames it.
//   - Verify and Recover resynchronise by trying every later offset that
//     holds a record magic. Once a file shows damage they judge each
//     candidate's CRCs in constant time from range CRCs (one linear pass,
//     len/64 bytes of memory), so a hostile file packed with overlapping
//     fake frame headers that claim long lengths stays linear
//     (BenchmarkVerifyHostile; figures in docs/performance.md).
//
// # Performance
//
// Figures, with the commands that reproduce them, are in
// docs/performance.md.
package pack
