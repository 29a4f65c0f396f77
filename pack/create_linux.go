// Create: the durable file writer, over the write(2) sink (writesink_linux.go,
// the default) or the mmap sink (mmap_linux.go).

package pack

import "os"

// Create creates (truncating) the file at path and returns a Writer that
// writes it durably. By default it writes with write(2): space is
// preallocated (fallocate, keeping the size) before a frame is accepted,
// writeback is started every few MiB (sync_file_range) and Close fsyncs.
// With WriterOptions.Mmap it writes through a shared mmap window instead:
// the file is fallocated ahead of the window, a helper goroutine populates
// the window ahead of the writer (MADV_POPULATE_WRITE), writeback is
// started every few MiB, each full window is unmapped, and Close truncates
// the file to its size and fsyncs. Both produce the same bytes; the
// package doc explains why write(2) is the default.
func Create(path string, opts WriterOptions) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if !opts.Mmap {
		return newWriter(newFileSink(f, path, opts), path, opts)
	}
	return newWriter(newMmapSink(f, path, opts), path, opts)
}

// writebackChunk is how much written data either writer of Create lets
// accumulate before starting its writeback (sync_file_range), so that disk
// I/O overlaps the copying and Close's fsync finds little left to do.
const writebackChunk = 8 << 20
