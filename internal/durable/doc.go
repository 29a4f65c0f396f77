// Package durable is the write(2) path of the dump file writers (pack's
// Create and mcap's Create) and of the offline verbs' outputs ("export"): a file written front to back whose space is
// preallocated ahead of the data (fallocate, keeping the size), whose
// writeback starts as it fills (sync_file_range) with a bound on the bytes
// in flight, and which is made durable once at the end (fdatasync of what
// is left, truncate of the preallocation, fsync). Buffered collects small
// writes and passes large ones from the caller's memory; Behind copies
// into two buffers and hands full ones to the File's writer thread
// (Options.Async), for a producer that reuses its memory at once (an
// encrypted dump's age stream).
//
// It is not for: files written out of order, reading, or the mmap path.
//
// # Caveats
//
// A File is not safe for concurrent use. It borrows the *os.File; Finish
// and Abort close it. On platforms other than Linux it is a plain buffered
// file with fsync (no preallocation, no early writeback).
package durable
