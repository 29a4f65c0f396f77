// Package engine is the recorder: the topic table, the per-topic lock-free
// rings that hold recent history, retention, trigger acceptance, dump
// scheduling, rotation, hooks and statistics. Its hot path is Ingest.
//
// Sources (shared memory, UDP, raw Ethernet, in-process Go code) talk to the
// engine through the small Sink contract: Discover a topic, Ingest its
// messages, report it Offline.
//
// It is not for: Lua (rules live in package scripts), sockets (package
// capture), shared-memory layout (package shm) or the bytes of a dump file
// (package pack, reached through a small writer interface).
//
// # Caveats
//
// Ingest never keeps the payload slice it is given: the bytes are copied
// once into the topic's ring before Ingest returns.
package engine
