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
