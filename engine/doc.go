// Package engine is the recorder: the topic table, the per-topic lock-free
// rings that hold recent history, retention, trigger acceptance (which
// windows a trigger selects) and statistics. Its hot path is Ingest (and
// ReserveAt / Commit for sources that copy straight into a ring).
//
// Sources (shared memory, UDP, raw Ethernet, in-process Go code) talk to the
// engine through the small ingest.Sink contract: Discover a topic, Ingest
// its messages, report it Offline. Readers (Lua rules, status) use
// Recorder.NewReader / Reader.ReadInto or Recorder.ReadRange (the Lua
// rules take headers with Reader.ReadHeader and copy a payload with
// CopyPayload only when the rule reads it); the dump pipeline uses the
// window API below.
//
// Capture time. Reading a clock per 64-byte message would eat much of the
// ~40 ns budget, so a source reads Recorder.Now once per batch and passes it
// to IngestAt for every message of the batch (the UDP and raw sources pass
// the kernel's receive time of each packet instead). Recorder.Now reads the
// real clock at every call: a coarse clock refreshed by a goroutine lags
// whenever that goroutine is descheduled, and stamped data captured under
// load before it was sent. Ingest is IngestAt stamped with one Now read.
// Capture times never go back within a topic: an earlier stamp is raised to
// the newest one stored.
//
// Rings. Each topic's ring is a power-of-two arena block (its byte cap,
// rounded down), holding entries of a 40-byte header (length, sequence,
// capture ns, producer ns, cumulative bytes) plus the payload, 8-byte
// aligned, never straddling the end. The writer evicts the oldest entries to
// make room (jumping between checkpoints it keeps for each 1/64 of the ring
// (fewer segments, of at least 1 KiB, for small rings), so it reads no
// evicted header and publishes its tail about once per segment; up to 1/32
// of the ring may stand empty) and entries older than the retention (pre +
// max post + 2*guard, with a tolerance of 1/32 of it), except the topic's
// keep_last newest. A message larger than the topic's max packet or its ring
// is rejected and counted, never truncated. See ring.go, ring_read.go (the
// lock-free read protocol) and cursor.go.
//
// Windows. The dump pipeline (package dump) reads the rings through an
// exported window API: Select resolves and pins the windows a trigger asks
// for ([T-pre, T+post] per topic, only_front / only_back and per-trigger
// overrides honoured, plus the topic's keep_last messages before the
// window), a WindowCursor walks one window without blocking the writer,
// Drops counts the messages dropped inside a window (oversize and busy-skip
// drops are logged with their capture time off the fast path, see
// droplog.go), and Unpin lets a destroy_on_offline ring go. SetBusy tells
// the recorder a dump is being written (BusySkipData).
//
// It is not for: writing dumps (package dump), Lua (rules live in package
// scripts), sockets (package capture), shared-memory layout (package shm)
// or file formats (packages pack and mcap).
//
// # Caveats
//
// Ingest never keeps the payload slice it is given: the bytes are copied
// once into the topic's ring before Ingest returns.
//
// Two-phase ingest (ingest.DirectSink): ReserveAt makes room for an n-byte
// message in the topic's ring (eviction, tail, wrap marker, all as for
// IngestAt) and returns that ring memory; the source fills it, then calls
// Commit, which writes the entry header and publishes the entry (the store
// of last), or Abort. Until Commit the bytes lie at or past the writer's
// head, beyond last, where no reader looks; an aborted entry takes no
// sequence number and is never visible, and a reservation left open (the
// source panicked while filling) is dropped by the topic's next ReserveAt or
// IngestAt: everything ReserveAt changed is a valid ring on its own. The
// shm consumer uses it to copy large records straight from the segment,
// dropping those its producer overwrote meanwhile. A MultiProducer topic
// takes no reservations (ReserveAt returns nil, true: use IngestAt).
// Staged runs (ingest.BatchSink): StageBatch places a run of one topic's
// messages — the run's head up to half the ring as one block — and writes
// each entry, header and payload, beyond last; CommitBatch publishes them
// all with one store of last, AbortBatch drops them. Evictions during a
// run concern committed entries only, a staged entry never overwrites the
// run's first, and an abort clears the checkpoints the run wrote
// (ring_batch.go). The shm consumer hands runs of small records this way,
// straight from the segment. For one topic exactly one
// goroutine at a time may ingest, unless the topic was discovered with
// MultiProducer (then a short mutex serializes writers).
//
// A Reader copies each payload into the caller's Message; the bytes are the
// caller's. A message overwritten while it was copied is never returned; it
// is counted in Reader.Lost. A Reader is for one goroutine.
//
// Close must not run concurrently with Ingest: stop sources (and the
// Dumper) first. The cache stays mapped until the last Reader is closed
// and every Retain is done.
package engine
