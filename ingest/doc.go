// Package ingest is the contract between sources and the recorder: a topic
// is discovered once (TopicInfo → TopicID), its messages are handed over by
// IngestAt, its losses at the source are reported by Lost, and Offline says
// its producer went away. Package engine implements Sink; packages shm and
// capture (and any in-process producer) call it.
//
// It is a leaf: it imports nothing of edr-lite and nothing outside the
// standard library, so a source or a producer program that links it does
// not link the recorder, the dump formats or their compressors.
//
// It is not for: the recorder itself (package engine) or any transport.
//
// # Caveats
//
// IngestAt never keeps the payload slice it is given; the caller may reuse
// it as soon as the call returns. See Sink for which calls may block.
package ingest
