// Package dumpfile reads and writes edr-lite's dump files, whatever their
// format: pack and MCAP dumps, JSON-lines exports, and camera files (a
// folder of JPEGs, an MP4). It is the library under every offline verb of
// the edr-lite command (info, cat, filter, split, merge, export, import,
// replay, report, verify, recover), so a Go program reads a dump exactly as
// the command does.
//
// # Reading
//
// OpenTimeline opens one file or several as a Timeline: one stream of
// typed messages in message-time order (capture time; ties keep the order
// of the files, then each file's). Timeline.Messages returns an Iterator,
// shaped like the MCAP Go library's message iterator: options select topics
// by glob (WithTopics, WithoutTopics: the command's --topics and
// --exclude) and a time window (From, To: both ends included), Next returns
// each Message (name, channel, producer and capture time, data, and its
// Type: message encoding and schema, as mcap's channel and schema) and
// io.EOF after the last, SeekTime moves exactly to the first message at or
// after a time. By default damage ends the iteration with an error naming
// the file, the offset and what is wrong; SkipDamaged reports it and reads
// on where the format allows. Decoder decodes a message by its type (the
// decoders of package schema: packed structs by their layout, protobuf,
// JSON): whole, as JSON, or one field by path.
//
// Open opens one file as a Source (its topics, types and dump information);
// NewTimeline reads Sources opened so. Messages is the time-ordered merge
// under the Iterator, without filters; Source.InFileOrder and Walk read one
// file in the order it stores its messages (Walk as "edr-lite cat" prints
// them: an MCAP file's messages as stored, see Caveats).
//
// # Writing and converting
//
// Merge and Rewrite write what a Timeline holds (a merge, a cut, a split,
// a change of format) to pack or MCAP, keeping every topic's types, the
// triggers and the per-topic accounting, and recording a cut as such
// (dumpinfo.Cut). Export writes a dump as MCAP, JSON lines, MP4 or (with
// ExportDir) a JPEG folder or, in the edr-lite command (which links
// internal/dumptable), Parquet tables; Import reads JSON lines back
// into a pack dump. ReadInfo summarises a dump (what "edr-lite info"
// prints), Verify and Conform check one, Recover salvages a damaged one,
// Compress changes its codec.
//
// Which package reads or writes which format is decided here, in one table
// (formats.go): a format's name (the --format value), how Detect knows its
// files, and the functions that open, export or import it. Formats and
// LookupFormat say what each can do; adding a format is adding a row.
//
// It is not for: encoding or decoding a format's bytes itself (packages
// pack, mcap, jsonl and media do), recording (the recorder writes its
// dumps through package dump), nor flags and output (cmd/edr-lite). It
// links no recorder, Lua, sockets or sources (internal/deptest).
//
// # Caveats
//
// Lifetimes: a Message from an Iterator or from Messages, and its Meta and
// Data, are valid until the next call to Next or SeekTime; one handed to
// an InFileOrder or Walk callback until the callback returns. A message's
// Type (the same pointer for every message of a topic until its type
// changes) and its schema bytes alias the file's mapping: valid until the
// file is closed. What a Decoder returns is valid until its next call.
//
// Concurrency: nothing here is safe for concurrent use. A Timeline's
// files are read through one reader each, so one Iterator of a Timeline at
// a time (a new one starts over); open a file twice to read it from two
// goroutines. A pack dump's reader starts two helper goroutines at its
// first read, which decode the frames ahead (CRCs, meta, decompression;
// one helper until 2026-12-05), within half the memory limit below, and
// end at its Close; an indexed file of small frames (under 16 KiB on
// average) is read without them.
//
// Order: a file is read in its own order (pack dumps are written in time
// order; MCAP files in log_time order whatever the order they are stored
// in, see mcap.Cursor for what that costs: a first pass over the file,
// about 64 bytes per chunk, 16 bytes per message of a chunk out of order)
// and files are merged message by message. To ends the iteration at the
// first message after it, as the filter verbs do: a file whose times go
// back (a topic written in event-time order) may hold a few more after it.
//
// MCAP: a Timeline reads an MCAP file as pack-model messages, the inverse
// of the mapping edr-lite writes MCAP with (mcap.PackReader, docs/mcap.md),
// so a packed-struct topic that an MCAP dump stores transcoded to JSON is
// given back packed, with its layout, as merge and replay read it, and a
// message's meta bytes (stored on a channel NAME/meta) come in
// Message.Meta; Walk (and so "edr-lite cat") gives them as stored: JSON,
// and the meta as messages of topic NAME/meta. Files of other writers read
// the same both ways (topic = channel topic, type = the channel's message
// encoding and schema). The command's e2e test TestE2ETimelineMatchesCat
// holds the Timeline to what cat prints, for every format.
//
// Damage: with SkipDamaged a pack file's reader goes on past a damaged
// frame at the next intact record, resynchronising as recover does (also
// without an index), and a damaged type section's topic reads as raw
// bytes from there; a damaged MCAP chunk or a camera file cut short ends
// that file; each is reported, and the other files go on. The command's
// --skip-damaged is SetSkipDamaged, process-wide (an MCAP file that does
// not verify is then opened through a salvaged copy). OpenSalvaged and ReadInfo of a damaged MCAP file
// read a salvaged copy written to the temporary directory (uncompressed: as
// large as its data), removed by Close / before returning; a JSON-lines
// export is likewise read through a pack dump imported into the temporary
// directory (its errors name the file and line).
//
// CAN: a candump log or an ASC file is a Source of one frame topic per bus
// (OpenCANLog). With SetDBCs (the command's --dbc, process-wide), the CAN
// frame topics of every file opened (a log, a pack or MCAP dump) are
// decoded by DBC too, in one path: after each frame a DBC message has the
// ID of, that message on can/BUS/NAME at the frame's times, as a bus
// recording with the DBC does. Opening a dump then reads it through once
// (the decoded topics and their counts, each frame topic's accounting in
// its DumpInfo), a walk decodes on the fly (an MCAP file is then walked in
// the pack model), standard input is not decoded; a message topic the
// file holds already is not decoded again (told to DBCs.Report). The
// decoded messages come from Messages, InFileOrder, Walk and the Timeline,
// not from the readers Pack and MCAP return (DecodedTopics).
//
// Camera files (a JPEG folder, an MP4) are Sources of one topic
// (OpenMedia): a file cut short gives what it holds, and Source.Damaged
// and Source.Media say what was lost; an MP4 without a creation time
// needs a start (ErrNoStart). Every write to MCAP (Rewrite, Export) notes
// foxglove.CompressedVideo topics with B-frames, which Foxglove cannot
// play (RewriteReport.Notes, ConvertReport.Notes); Export to MCAP reads
// the video topics a second time for it (VideoReorders).
//
// Memory: every reader bounds what it allocates by what the file holds and
// by one limit (SetMaxMemory, 256 MiB by default: a pack frame, an MCAP
// chunk); a file needing more is refused as damaged, naming the offset.
package dumpfile
