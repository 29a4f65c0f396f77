// Package ingest is the contract between sources and the recorder: a topic
// is discovered once (TopicInfo → TopicID), its messages are handed over by
// IngestAt, its losses at the source are reported by Lost, and Offline says
// its producer went away. Package engine implements Sink; packages shm and
// capture (and any in-process producer) call it.
//
// It also holds the plain data of what a topic carries: Type (a message
// encoding and a Schema: name, schema encoding, bytes), the encoding
// constants (MCAP registry values and edr-lite's x-edr-*), Validate, the
// content ID that files de-duplicate schemas by, and the constructors
// Packed, Raw and Named. A source declares a topic's type once, in
// TopicInfo.Type, never per message. Package schema reads messages of a
// type (it aliases these types); docs/schemas.md is the reference.
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
//
// DirectSink is optional: a sink that lets a source copy a message straight
// into the recorder's memory (ReserveAt, then Commit or Abort), for sources
// whose bytes are not stable while read (shared memory). Sources check for
// it once, by type assertion; every Sink keeps working through IngestAt.
//
// Types are values: a Type's Schema.Data is a slice that whoever builds it
// owns; the recorder keeps the Type it is given at Discover (the caller must
// not change the bytes afterwards). Validate and ID do not allocate beyond
// hashing; they are for Discover and file writers, not per message.
package ingest
