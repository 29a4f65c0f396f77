// Package pack implements the edr-lite dump file format ("pack"): the frame
// model, its protobuf-wire meta, the mmap writer and streaming writer, the
// mmap reader with an index for seeking by time, per-frame CRC32C and
// optional compression, verification, recovery of damaged files and a
// timeline that merges several files in time order.
//
// The normative byte layout is FORMAT.md in this directory.
//
// It is not for: the recorder (package engine decides what goes into a
// dump; pack only writes and reads it).
package pack
