// The write(2) sink of Create (the default): a streamSink over a file
// that is preallocated ahead of every record accepted, with writeback
// started as it fills, and fsynced on Close.

package pack

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// durableFile is the write(2) path of Create (the default): space is
// preallocated ahead (fallocate, keeping the size) and writeback is started
// every writebackChunk bytes (sync_file_range), so Close's fsync finds
// little left to do.
type durableFile struct {
	f         *os.File
	fd        int
	path      string
	off       int64
	kicked    int64
	allocated int64
	prealloc  int64
}

// newFileSink returns the write(2) sink of Create over f, preallocating in
// opts.Prealloc steps (64 MiB when 0).
func newFileSink(f *os.File, path string, opts WriterOptions) *fileSink {
	pre := opts.Prealloc
	if pre <= 0 {
		pre = 64 << 20
	}
	d := &durableFile{f: f, fd: int(f.Fd()), path: path, prealloc: pre}
	return &fileSink{streamSink: streamSink{w: d}, d: d}
}

// ensure preallocates (keeping the size) to cover [0, end): in prealloc
// steps, or exactly what is needed when the disk has no room for a step.
func (d *durableFile) ensure(end int64) error {
	if end <= d.allocated {
		return nil
	}
	need := end - d.allocated
	grow := max(need, d.prealloc)
	err := unix.Fallocate(d.fd, unix.FALLOC_FL_KEEP_SIZE, d.allocated, grow)
	if errors.Is(err, unix.ENOSPC) && grow > need {
		grow = need
		err = unix.Fallocate(d.fd, unix.FALLOC_FL_KEEP_SIZE, d.allocated, grow)
	}
	if err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return &os.PathError{Op: "fallocate", Path: d.path, Err: err}
	}
	d.allocated += grow
	return nil
}

func (d *durableFile) Write(p []byte) (int, error) {
	if err := d.ensure(d.off + int64(len(p))); err != nil {
		return 0, err
	}
	n, err := d.f.Write(p)
	d.off += int64(n)
	if d.off-d.kicked >= writebackChunk {
		_ = unix.SyncFileRange(d.fd, d.kicked, d.off-d.kicked, unix.SYNC_FILE_RANGE_WRITE)
		d.kicked = d.off
	}
	return n, err
}

// fileSink is a streamSink over a durableFile with durable flush and finish.
type fileSink struct {
	streamSink
	d *durableFile
}

// reserve preallocates the space of the record before accepting it, so
// that a full disk is WriteFrame's error and never a later buffered
// write's: every frame accepted has its blocks.
func (s *fileSink) reserve(n int) ([]byte, error) {
	if err := s.d.ensure(s.d.off + int64(len(s.buf)+n)); err != nil {
		return nil, err
	}
	return s.streamSink.reserve(n)
}

// writeVec preallocates the record's space first, like reserve.
func (s *fileSink) writeVec(head []byte, blocks [][]byte, n int64) error {
	if err := s.d.ensure(s.d.off + int64(len(s.buf)) + n); err != nil {
		return err
	}
	return s.streamSink.writeVec(head, blocks, n)
}

func (s *fileSink) flush() error {
	if err := s.streamSink.flush(); err != nil {
		return err
	}
	if err := unix.Fdatasync(s.d.fd); err != nil {
		return &os.PathError{Op: "fdatasync", Path: s.d.path, Err: err}
	}
	return nil
}

func (s *fileSink) finish(size int64) error {
	err := s.streamSink.flush()
	if err == nil {
		// Drop preallocated blocks past the end (KEEP_SIZE kept the size).
		err = s.d.f.Truncate(size)
	}
	if err == nil {
		err = s.d.f.Sync()
	}
	if cerr := s.d.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pack: finishing %s: %w", s.d.path, err)
	}
	return nil
}

// abort writes what was accepted (its blocks are preallocated), drops the
// preallocation past it and closes.
func (s *fileSink) abort() error {
	err := s.streamSink.flush()
	if tErr := s.d.f.Truncate(s.d.off); err == nil {
		err = tErr
	}
	return errors.Join(err, s.d.f.Close())
}
