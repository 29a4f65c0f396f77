// Package engine is the recorder: the topic table, the per-topic lock-free
// rings that hold recent history, retention, trigger acceptance, dump
// scheduling, rotation, hooks and statistics. Its hot path is Ingest.
//
// Sources (shared memory, UDP, raw Ethernet, in-process Go code) talk to the
// engine through the small Sink contract: Discover a topic, Ingest its
// messages, report it Offline. Readers (Lua rules, status, the dumper) use
// Recorder.NewReader / Reader.ReadInto or Recorder.ReadRange.
//
// Capture time. Reading a clock per 64-byte message would eat much of the
// ~40 ns budget, so a source reads Recorder.Now once per batch and passes it
// to IngestAt for every message of the batch. Ingest is IngestAt stamped with
// the recorder's clock; by default that is a coarse clock (one atomic load,
// refreshed every millisecond). Capture times never go back within a topic:
// an earlier stamp is raised to the newest one stored.
//
// Rings. Each topic's ring is a power-of-two arena block (its byte cap,
// rounded down), holding entries of a 40-byte header (length, sequence,
// capture ns, producer ns, cumulative bytes) plus the payload, 8-byte
// aligned, never straddling the end. The writer evicts the oldest entries to
// make room (jumping between checkpoints it keeps for each 1/64 of the ring (fewer
// segments, of at least 1 KiB, for small rings),
// so it reads no evicted header and publishes its tail about once per
// segment; up to 1/32 of the ring may stand empty) and entries older than the
// retention (pre + max post + 2*guard, with a tolerance of 1/32 of it),
// except the topic's keep_last newest. A message
// larger than the topic's max packet or its ring is rejected and counted,
// never truncated. See ring.go and ring_read.go.
//
// Dumps. New acquires every fallible resource (dump directory, created and
// probed for writability; the arena) and reports leftover NAME.pack.tmp files
// of an earlier crash in Status. Start starts the dumper; Trigger returns at
// once with an id, Wait (or a Hook) reports the result after the file is
// finalized. A dump accepted at T is written at T + the largest post window
// of its topics + guard, from each topic's [T-pre, T+post] (only_front /
// only_back honoured, plus its keep_last messages before the window),
// merged in capture order (or producer order through a bounded reorder
// stage), as NAME.pack.tmp -> fsync -> rename -> directory fsync, where NAME
// is <UTC time>_<reason>_<seq>. Each dump carries its trigger records and
// per-topic accounting (dumpinfo.Info) for its window: oversize and
// busy-skip drops are logged with their capture time off the fast path (see
// droplog.go) and counted when they fall in the topic's window. Dumps never pause recording or clear
// rings (unless BusySkipData is set). Overlapping triggers merge or not per
// DumpConfig.Policy; MaxPerMinute rejects excess triggers (counted). After
// each dump the oldest beyond MaxFiles / MaxTotalBytes are deleted; a dump
// that would leave less than MinFreeDisk is refused. Stop writes pending
// dumps at once within StopTimeout; a dump still being written at the
// deadline is abandoned and its .tmp removed. The dump file goes through the
// DumpWriter interface (pack's write(2) path by default, NewPackWriteWriter).
//
// It is not for: Lua (rules live in package scripts), sockets (package
// capture), shared-memory layout (package shm) or the bytes of a dump file
// (package pack, reached through a small writer interface).
//
// # Caveats
//
// Ingest never keeps the payload slice it is given: the bytes are copied
// once into the topic's ring before Ingest returns. For one topic exactly one
// goroutine at a time may ingest, unless the topic was discovered with
// MultiProducer (then a short mutex serializes writers).
//
// A Reader copies each payload into the caller's Message; the bytes are the
// caller's. A message overwritten while it was copied is never returned; it
// is counted in Reader.Lost. A Reader is for one goroutine.
//
// Close must not run concurrently with Ingest: stop sources first. The cache
// stays mapped until the last Reader is closed.
package engine
