package engine

import "github.com/edr-lite/edr-lite/ingest"

// Message is one recorded message as a reader returns it.
type Message struct {
	// Topic is the topic the message belongs to.
	Topic ingest.TopicID
	// CaptureNs is when the recorder received the message (UNIX ns).
	CaptureNs int64
	// GenNs is the producer's own timestamp (UNIX ns, 0 = unknown).
	GenNs int64
	// Seq is the message's sequence number within its topic's ring,
	// starting at 0; a gap means messages were lost to the reader.
	Seq uint64
	// Data is the payload. ReadInto reuses and grows it; it is owned by the
	// caller and stays valid after the read.
	Data []byte
}
