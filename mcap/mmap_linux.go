//go:build linux

package mcap

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapping is a read-only shared mapping of a whole file: a stray write
// through it faults instead of corrupting the file.
type mapping struct {
	b []byte
}

func mapFile(path string) (*mapping, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("mcap: %s is %s, not a regular file", path, fileKind(st.Mode()))
	}
	size := st.Size()
	if size == 0 {
		return nil, &CorruptError{File: path, Field: "magic", Err: ErrTruncated}
	}
	if int64(int(size)) != size || size < 0 {
		return nil, fmt.Errorf("mcap: %s: %w: %d bytes do not fit the address space", path, ErrTooLarge, size)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mcap: mmap %s: %w", path, err)
	}
	_ = unix.Madvise(b, unix.MADV_SEQUENTIAL)
	return &mapping{b: b}, nil
}

func (m *mapping) close() error {
	if m.b == nil {
		return nil
	}
	err := unix.Munmap(m.b)
	m.b = nil
	return err
}

// mmapSink writes a file through a sliding shared mapping: the file is
// extended by one window at a time (fallocate, so a full disk fails at the
// window switch with ENOSPC instead of SIGBUS on a later store), the window
// is mapped and prefaulted, written with copy, handed to writeback
// (sync_file_range) when full and unmapped. Close truncates the file to the bytes
// written and fsyncs it.
type mmapSink struct {
	f      *os.File
	win    []byte
	winOff int64 // file offset of win[0]
	n      int   // bytes used in win
	window int
}

func newMmapSink(f *os.File, window int) (*mmapSink, error) {
	pg := os.Getpagesize()
	window = max(pg, (window+pg-1)/pg*pg)
	return &mmapSink{f: f, window: window}, nil
}

func (s *mmapSink) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if s.n == len(s.win) {
			if err := s.advance(); err != nil {
				return written, err
			}
		}
		c := copy(s.win[s.n:], p)
		s.n += c
		p = p[c:]
		written += c
	}
	return written, nil
}

// advance retires the current window and maps the next one.
func (s *mmapSink) advance() error {
	next := s.winOff + int64(len(s.win))
	if err := s.unmap(); err != nil {
		return err
	}
	if err := unix.Fallocate(int(s.f.Fd()), 0, next, int64(s.window)); err != nil {
		if err == unix.EOPNOTSUPP {
			err = s.f.Truncate(next + int64(s.window))
		}
		if err != nil {
			return fmt.Errorf("mcap: extend %s to %d bytes: %w", s.f.Name(), next+int64(s.window), err)
		}
	}
	b, err := unix.Mmap(int(s.f.Fd()), next, s.window, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mcap: mmap %s at %d: %w", s.f.Name(), next, err)
	}
	// Fault the whole window in writable with one call (Linux 5.14+)
	// instead of one trap and one filesystem page_mkwrite per page on first
	// store; older kernels say EINVAL and the stores fault as usual.
	_ = unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	s.win, s.winOff, s.n = b, next, 0
	return nil
}

func (s *mmapSink) unmap() error {
	if s.win == nil {
		return nil
	}
	// Start writeback of the finished window now, so Close's fsync has
	// less left to do (msync MS_ASYNC is a no-op on Linux).
	_ = unix.SyncFileRange(int(s.f.Fd()), s.winOff, int64(s.n), unix.SYNC_FILE_RANGE_WRITE)
	err := unix.Munmap(s.win)
	s.winOff += int64(len(s.win))
	s.win = nil
	if err != nil {
		return fmt.Errorf("mcap: unmap %s: %w", s.f.Name(), err)
	}
	return nil
}

// finish unmaps, trims the file to the bytes written and syncs it.
func (s *mmapSink) finish() error {
	size := s.winOff + int64(s.n)
	if s.win != nil {
		if err := unix.Munmap(s.win); err != nil {
			return fmt.Errorf("mcap: unmap %s: %w", s.f.Name(), err)
		}
		s.win = nil
	}
	if err := s.f.Truncate(size); err != nil {
		return fmt.Errorf("mcap: truncate %s: %w", s.f.Name(), err)
	}
	return s.f.Sync()
}

// abort unmaps without syncing.
func (s *mmapSink) abort() {
	if s.win != nil {
		_ = unix.Munmap(s.win)
		s.win = nil
	}
}

// fileKind names what a non-regular file is, for errors.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
