// Package shm is the shared-memory transport: the segment layout (see
// FORMAT.md), a Go producer, a header-only C producer in include/, and a
// consumer that discovers segments and feeds their messages to the engine
// through the engine.Sink contract.
//
// It is not for: the engine's internals, or any cross-machine transport.
package shm
