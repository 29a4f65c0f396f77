// Package shm is the shared-memory transport: how processes on the same ECU
// hand their messages to the recorder without sockets and without ever being
// slowed down by it.
//
// One segment file per topic lives in a directory (default /dev/shm/edr):
// a header, the topic's declared type when there is one (a schema area,
// version 2: ProducerOptions.Type, read once by the consumer and handed to
// Discover; a schema over MaxSchemaSize is not read and the topic is raw,
// with a TypeError), and a ring of records, laid out in FORMAT.md. A Producer
// (NewProducer, Publish or Reserve and Commit, Heartbeat, Close) or the
// header-only C99 producer include/edr_shm.h appends records; Publish
// (Reserve, Commit) never blocks, never waits for
// the recorder and never allocates — when the recorder lags, the oldest
// records are overwritten. A Consumer (NewConsumer, Start/Run, Close,
// Stats) discovers segments with inotify (or by polling), registers each
// topic with ingest.Sink.Discover, feeds every record to IngestAt with one
// clock read per batch, counts overwritten records as lost through sequence
// gaps (and reports them with ingest.Sink.Lost, so they are the topic's
// losses in the recorder and in dumps), wakes on a futex the producer signals (or polls with a bounded
// back-off), and reports Offline when a producer closes, dies (pid gone) or
// stops heartbeating. DrainFile reads one segment file once, e.g. left over
// after a crash.
//
// It is not for: the engine's internals (it only uses ingest.Sink), any
// transport between machines, or several producers on one segment (one
// segment per producer and topic).
//
// # Caveats
//
// Producer is not safe for concurrent use: Publish, Reserve, Commit, Stats
// and Close from one goroutine at a time (Heartbeat may also run
// concurrently with Publish). Publish copies the payload before returning;
// the caller keeps ownership. The slice Reserve lends is the shared ring
// itself: write the message there, then Commit; it is not to be used after
// Commit, the next Reserve or Publish, or Close.
//
// Consumer is safe for concurrent use. It runs one goroutine per segment, so
// each topic has exactly one writer into the engine; with
// ConsumerOptions.Sweep, a busy segment is read by the consumer's sweeper
// goroutine while its own goroutine is parked (handed over under a lock:
// still one writer at a time), one wake-up per Sweep for every busy
// segment. The payload slice
// handed to IngestAt is the consumer's private copy of the record (never the
// shared mapping, which a producer may be overwriting) and is valid only
// during the call. A sink that also implements ingest.DirectSink (the
// engine's Recorder does; checked once, in NewConsumer) gets records of
// ConsumerOptions.DirectMin payload bytes or more (DefaultDirectMin, 8 KiB)
// straight from the mapping, one copy instead of two: the consumer reads
// the record header once into locals and bounds-checks them, reserves the
// payload's room in the recorder (ReserveAt), copies the payload from the
// mapping into it, then re-checks the tail as it does for a chunk: Commit
// when the producer did not overwrite the record meanwhile, else Abort
// (nothing of it is ever visible) and the sequence gap counts it lost, as
// for an overwritten chunk. A sink that also implements ingest.BatchSink
// (the Recorder does) gets the smaller records in runs straight from the
// mapping: the consumer reads each header once into locals, stages up to
// 256 records (BatchBytes at most, never past the write cursor or the ring
// end) in the recorder with one clock read (StageBatch), then fences and
// re-checks the tail once: CommitBatch publishes the run with one store,
// or AbortBatch drops it and the sequence gap counts it lost. Records the
// run does not take (implausible, or refused by the sink) go through the
// private chunk copy, which checks them again. A wrapper that embeds the
// Recorder and overrides IngestAt must override ReserveAt, Commit, Abort,
// StageBatch, CommitBatch and AbortBatch too. With WaitFutex (the default) idle segments park their
// goroutines and producers wake them through the directory's doorbell (one
// OS thread waits for all); producers that do not ring it are waited on in
// FUTEX_WAIT, at most MaxFutexSleepers at a time, and polled beyond. OS
// threads and descriptors do not grow with segments (a pidfd per producer
// process). MaxSegments bounds the segments followed.
//
// Liveness: a segment's pid is a hint (0, 1 and values beyond
// PID_MAX_LIMIT are none); a producer silent for HeartbeatTimeout is
// offline until its next heartbeat or record; a segment whose producer
// finished before the consumer found it is a leftover: counted and
// reported (OnLeftover), not ingested.
//
// Memory: a segment whose records took the chunk path keeps a private
// buffer of BatchBytes, allocated at the first such record (a segment whose
// records all went in runs or direct into a BatchSink/DirectSink has none);
// a record larger than that is read alone through one buffer the
// consumer's segments share, grown to the largest such record (at most one
// record of a max_payload). A producer's MaxPayload defaults to half its
// ring, so producers of small messages should set MaxPayload to keep the
// recorder's share small.
//
// A segment is untrusted input: every field is checked against the mapped
// size before use, a broken segment is quarantined with a *SegmentError
// naming the segment, field and offset, and other segments keep recording. A
// file truncated while mapped faults; the consumer recovers the fault
// (debug.SetPanicOnFault on its goroutines) and quarantines the segment.
// Liveness by pid assumes producer and recorder share a pid namespace (else
// set NoPIDCheck and rely on heartbeats). The consumer resolves the pid to
// a pidfd once (Linux 5.3+; kill(pid, 0) where refused), so a producer that
// exited unreaped (a zombie) is dead, and a pid that another process took
// over is not the producer: a process that started more than a second
// after the segment's start_ns (from /proc/<pid>/stat) does not own it. A
// start_ns that is no wall-clock time since boot (a virtual clock) is not
// judged that way. Segments of one producer process share one pidfd.
//
// Only little-endian Linux hosts are supported (every other platform gets
// ErrNotSupported).
package shm
