// The write(2) sink of Create (the default): a streamSink over a
// durable.File, which preallocates ahead of every record accepted, starts
// writeback as the file fills, and is fsynced on Close.

package pack

import (
	"fmt"
	"io"
	"os"

	"github.com/edr-lite/edr-lite/internal/durable"
)

// newFileSink returns the write(2) sink of Create over f, preallocating in
// opts.Prealloc steps (64 MiB when 0).
func newFileSink(f *os.File, path string, opts WriterOptions) *fileSink {
	d := durable.New(f, path, durable.Options{Prealloc: opts.Prealloc, MaxInFlight: opts.MaxInFlight, Async: opts.AsyncWrite})
	return &fileSink{streamSink: streamSink{w: d}, d: d, f: f}
}

// fileSink is a streamSink over a durable.File with durable flush and
// finish.
type fileSink struct {
	streamSink
	d   *durable.File
	f   *os.File // for reading back (a sealed file's lent frame: seal.go)
	iov [][]byte
	// With AsyncWrite the buffer and frame head a submitted writev holds
	// stay untouched until the next call waits for it: they alternate
	// with spare ones.
	spare, head, spareHead []byte
	spareIov               [][]byte
}

// reserve preallocates the space of the record before accepting it, so
// that a full disk is WriteFrame's error and never a later buffered
// write's: every frame accepted has its blocks.
func (s *fileSink) reserve(n int) ([]byte, error) {
	if err := s.d.Ensure(s.d.Offset() + int64(len(s.buf)+n)); err != nil {
		return nil, err
	}
	return s.streamSink.reserve(n)
}

// writeVec writes what is buffered, head and blocks with one writev (the
// blocks straight from the caller's memory: the data is copied once, by
// the kernel), preallocated first like reserve.
//
// With AsyncWrite it submits them to the file's writer thread and returns:
// the buffer and head go with the write (their spares take their place),
// the blocks are the caller's to keep unchanged (WriterOptions.AsyncWrite).
func (s *fileSink) writeVec(head []byte, blocks [][]byte, n int64) error {
	s.head = append(s.head[:0], head...)
	s.iov = append(s.iov[:0], s.buf, s.head)
	s.iov = append(s.iov, blocks...)
	// Submit waits for the previous write first: the spares are free.
	err := s.d.Submit(s.iov, int64(len(s.buf))+n)
	s.buf, s.spare = s.spare[:0], s.buf
	s.head, s.spareHead = s.spareHead, s.head
	s.iov, s.spareIov = s.spareIov, s.iov
	clear(s.iov) // the previous write's: done, and keeps no caller memory
	return err
}

// end is the offset of the next byte accepted.
func (s *fileSink) end() int64 { return s.d.Offset() + int64(len(s.buf)) }

func (s *fileSink) readerAt() io.ReaderAt { return s.f }

// rewind takes back what was accepted from offset to on, buffered or
// written.
func (s *fileSink) rewind(to int64) error {
	if w := s.d.Offset(); to >= w {
		if to > w+int64(len(s.buf)) {
			return fmt.Errorf("BUG: pack: rewinding to %d, %d bytes accepted", to, w+int64(len(s.buf)))
		}
		s.buf = s.buf[:to-w]
		return nil
	}
	s.buf = s.buf[:0]
	return s.d.Rewind(to)
}

func (s *fileSink) flush() error {
	if err := s.streamSink.flush(); err != nil {
		return err
	}
	return s.d.Sync()
}

func (s *fileSink) finish(size int64) error {
	err := s.streamSink.flush()
	if err == nil && size != s.d.Offset() {
		err = fmt.Errorf("BUG: pack: %d bytes written, writer at %d", s.d.Offset(), size)
	}
	if err != nil {
		s.d.Abort()
		return fmt.Errorf("pack: finishing %s: %w", s.d.Path(), err)
	}
	if err := s.d.Finish(); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	return nil
}

// abort writes what was accepted (its blocks are preallocated), drops the
// preallocation past it and closes.
func (s *fileSink) abort() error {
	err := s.streamSink.flush()
	if aErr := s.d.Abort(); err == nil {
		err = aErr
	}
	return err
}
