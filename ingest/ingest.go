package ingest

// TopicID is the small integer a topic is known by on the hot path: it
// indexes the topic table directly, no map lookup.
type TopicID uint32

// TopicInfo describes a topic when a source discovers it.
type TopicInfo struct {
	// Name is the topic name, e.g. "vehicle/speed". Together with Channel
	// it identifies the topic ("message_name#channel" in a pack file).
	Name string
	// Channel distinguishes several streams of the same name; "" when none.
	Channel string
	// Type is what the payload is: message encoding and schema, declared
	// once for the topic (a shm producer's segment, a listener's or the
	// configuration's type). The zero Type means not declared: the topic
	// is recorded as raw bytes. A recorder may replace it (a configured
	// override, a schema that does not check out); see engine.Recorder.
	Type Type
	// Source says where the topic comes from, e.g. "shm:/dev/shm/edr/speed",
	// "udp:0.0.0.0:30490", "raw:eth0", "api".
	Source string
	// MultiProducer is set when Ingest for this topic may be called from
	// several goroutines at once; the topic then gets a ring that tolerates
	// concurrent writers.
	MultiProducer bool
}

// Sink is the contract every source (shm, UDP, raw capture, in-process code)
// uses to hand messages to the recorder.
//
// Discover and Offline may block briefly (they take the topic-table lock).
// IngestAt and Ingest are the hot path: they never block, never allocate and
// never keep payload.
type Sink interface {
	// Discover registers a new topic and returns its id, or an error saying
	// why the topic is not recorded (excluded by a glob, no memory, ...).
	// Discovering a topic that is already known (same Name and Channel)
	// returns the existing id and brings it back online.
	Discover(info TopicInfo) (TopicID, error)

	// Now reads the recorder's clock. A source calls it at most once per
	// batch and passes the value to IngestAt for every message of the batch.
	Now() int64

	// IngestAt copies payload into the topic's ring stamped with capture
	// time captureNs and producer time genNs (0 = unknown). It reports
	// whether the message was stored; a rejected message (unknown or
	// offline id, oversize) is counted in the topic's statistics.
	IngestAt(id TopicID, captureNs, genNs int64, payload []byte) bool

	// Offline reports that the topic's producer went away. The ring is kept
	// or freed according to configuration.
	Offline(id TopicID)

	// Lost reports n messages of the topic lost before they reached the
	// recorder, found at atNs (a value from Now): a shared-memory producer
	// overwrote them before they were read, the kernel dropped them from a
	// socket that feeds only this topic. They are counted per topic and in
	// the accounting of every dump whose window holds atNs. Called off the
	// per-message path (when a gap is found), it may take a short lock.
	Lost(id TopicID, atNs int64, n uint64)
}

// DirectSink is a Sink that also lets a source copy a message straight into
// the recorder's memory, for a source whose own copy of the message is not
// stable (shared memory that its producer may overwrite while it is read):
// reserve room, fill it, then publish it only if the source's bytes were
// intact (Commit), or drop it (Abort). It saves a copy per message, which
// matters for large ones. Optional: a source checks for it once, by type
// assertion, and otherwise uses IngestAt.
//
// For one topic, a reservation is followed by its Commit or Abort before any
// other call for the topic (one goroutine per topic, as for IngestAt). A
// reservation neither committed nor aborted (the source panicked while
// filling it) is dropped by the topic's next ReserveAt or IngestAt; nothing of
// it is ever visible.
//
// A wrapper that embeds a DirectSink and overrides IngestAt (to count, to
// filter) must override these methods too, or hide them: a source that
// finds them calls them instead of IngestAt.
type DirectSink interface {
	Sink

	// ReserveAt reserves room for an n-byte message of topic id, stamped
	// captureNs and genNs as by IngestAt, and returns it as dst (len n): the
	// source writes the payload there, then calls Commit or Abort. Readers
	// see nothing of it before Commit; making room may evict old messages
	// (as IngestAt would) even if the reservation is aborted.
	//
	// ok false: the message is rejected and counted exactly as IngestAt
	// would reject it (unknown or offline id, oversize, ...); dst is nil.
	// ok true with dst nil: this topic takes no reservations (a
	// MultiProducer topic): hand the message to IngestAt.
	ReserveAt(id TopicID, captureNs, genNs int64, n int) (dst []byte, ok bool)

	// Commit publishes the topic's reserved message and reports whether
	// there was one (false: nothing was published).
	Commit(id TopicID) bool

	// Abort drops the topic's reservation: no reader sees it, no counter
	// counts it (the source counts it lost, e.g. through Lost).
	Abort(id TopicID)
}

// BatchMessage locates one message of a batch in the source's memory (see
// BatchSink.StageBatch): its payload is src[Off:Off+Len].
type BatchMessage struct {
	GenNs int64 // producer time (0 = unknown)
	Off   uint32
	Len   uint32
}

// BatchSink is a Sink that also takes a run of messages of one topic
// straight from the source's memory into the recorder's, published
// together: the per-message work of IngestAt (the topic lookup, its checks,
// the store that makes a message visible to readers) is done once per run.
// It is for a source whose memory is not stable (shared memory its
// producer may overwrite while it is read): stage the run, check that the
// source's bytes were intact, then publish it (CommitBatch) or drop it
// (AbortBatch). Optional: a source checks for it once, by type assertion.
//
// For one topic, StageBatch is followed by CommitBatch or AbortBatch before
// any other call for the topic (one goroutine per topic, as for IngestAt);
// a run neither committed nor aborted is dropped by the topic's next
// StageBatch, IngestAt or ReserveAt, and nothing of it is ever visible.
//
// A wrapper that embeds a BatchSink and overrides IngestAt (to count, to
// filter) must override these methods too, or hide them: a source that
// finds them calls them instead of IngestAt.
type BatchSink interface {
	Sink

	// StageBatch copies the payloads of msgs (src[m.Off:m.Off+m.Len]) into
	// the topic's ring, all stamped captureNs and each with its GenNs, and
	// returns how many of them it staged, in order: readers see none of
	// them before CommitBatch. Making room may evict old messages (as
	// IngestAt would) even if the run is then aborted.
	//
	// It stages fewer than len(msgs) when the next one does not fit with
	// those before it (a small ring): commit those, then hand the rest
	// again. 0 means the topic takes no run now (unknown or offline id, a
	// dump being written with BusySkipData, a MultiProducer topic, or a
	// first message larger than the topic's max packet): nothing is staged
	// or counted, and the source hands the messages to IngestAt, which
	// rejects and counts what it must.
	StageBatch(id TopicID, captureNs int64, src []byte, msgs []BatchMessage) int

	// CommitBatch publishes the topic's staged run (one store makes every
	// message of it visible) and returns how many messages it published.
	CommitBatch(id TopicID) int

	// AbortBatch drops the topic's staged run: no reader sees any of it,
	// no counter counts it (the source counts it lost, e.g. through Lost).
	AbortBatch(id TopicID)
}
