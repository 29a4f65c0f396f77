//go:build linux

package pack

import (
	"errors"
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// Create creates (truncating) the file at path and returns a Writer that
// writes it through a shared mmap window: the file is preallocated with
// fallocate ahead of the window, each window is populated before it is
// written (MADV_POPULATE_WRITE) so page faults are taken in bulk, the
// window is unmapped once full after starting its writeback
// (sync_file_range), and Close truncates the file to its size and fsyncs.
func Create(path string, opts WriterOptions) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if opts.NoMmap {
		pre := opts.Prealloc
		if pre <= 0 {
			pre = 64 << 20
		}
		d := &durableFile{f: f, fd: int(f.Fd()), path: path, prealloc: pre}
		return newWriter(&fileSink{streamSink: streamSink{w: d}, d: d}, path, opts)
	}
	page := int64(os.Getpagesize())
	win := int64(opts.Window)
	if win <= 0 {
		win = 256 << 20 // fewer remaps: each costs an munmap of dirty pages
		if math.MaxInt == math.MaxInt32 {
			win = 16 << 20 // 32-bit: address space is scarce
		}
	}
	win = (win + page - 1) &^ (page - 1)
	pre := opts.Prealloc
	if pre <= 0 {
		pre = min(win, 64<<20)
	}
	s := &mmapSink{f: f, fd: int(f.Fd()), path: path, page: page, window: win, prealloc: pre,
		prefault: !opts.NoPrefault, writeback: !opts.NoAsyncWriteback, huge: !opts.NoHugePages}
	return newWriter(s, path, opts)
}

// mmapSink writes records into a shared mapping of a window of the file.
type mmapSink struct {
	f         *os.File
	fd        int
	path      string
	page      int64
	window    int64
	prealloc  int64
	prefault  bool
	writeback bool
	huge      bool

	win       []byte // current mapping
	winOff    int64  // file offset of win[0]
	pos       int64  // committed bytes
	allocated int64  // bytes fallocated
	reserved  int
	kicked    int64 // file offset up to which writeback was started
	faulted   int64 // file offset up to which the window is populated
}

// prefaultAhead is how far beyond the bytes being written the mmap writer
// populates the window (MADV_POPULATE_WRITE) in one call.
const prefaultAhead = 8 << 20

// writebackChunk is how much written data the mmap writer lets accumulate
// before starting its writeback (sync_file_range), so that disk I/O
// overlaps the copying and Close's fsync finds little left to do.
const writebackChunk = 8 << 20

func (s *mmapSink) reserve(n int) ([]byte, error) {
	rel := s.pos - s.winOff
	if s.win == nil || rel+int64(n) > int64(len(s.win)) {
		if err := s.remap(int64(n)); err != nil {
			return nil, err
		}
		rel = s.pos - s.winOff
	}
	if err := s.ensure(s.pos + int64(n)); err != nil {
		return nil, err
	}
	if s.prefault && s.pos+int64(n) > s.faulted {
		s.populate(s.pos + int64(n))
	}
	s.reserved = n
	return s.win[rel : rel+int64(n) : rel+int64(n)], nil
}

func (s *mmapSink) commit(n int) error {
	if n != s.reserved {
		panic("BUG: pack: commit of a size not reserved")
	}
	s.pos += int64(n)
	s.reserved = 0
	if s.writeback && s.pos-s.kicked >= writebackChunk {
		s.kick()
	}
	return nil
}

// kick starts asynchronous writeback of [kicked, pos).
func (s *mmapSink) kick() {
	_ = unix.SyncFileRange(s.fd, s.kicked, s.pos-s.kicked, unix.SYNC_FILE_RANGE_WRITE)
	s.kicked = s.pos
}

// remap moves the window so that it starts at the page holding pos and
// holds at least n more bytes.
func (s *mmapSink) remap(n int64) error {
	if err := s.unmap(); err != nil {
		return err
	}
	off := s.pos &^ (s.page - 1)
	size := max(s.window, (s.pos-off+n+s.page-1)&^(s.page-1))
	b, err := unix.Mmap(s.fd, off, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return &os.PathError{Op: "mmap", Path: s.path, Err: err}
	}
	if s.huge {
		// Ask for huge folios: with large-folio file systems (ext4 since
		// Linux 6.16) the window then faults in 2 MiB at a time.
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	s.win, s.winOff = b, off
	s.faulted = max(s.faulted, off)
	return nil
}

// ensure extends the file (fallocate) to cover [0, end): in Prealloc steps,
// or exactly when the disk has no room for a whole step. Writes through the
// mapping never go past the allocated size, so a full disk is an ENOSPC
// error here and never a SIGBUS.
func (s *mmapSink) ensure(end int64) error {
	if end <= s.allocated {
		return nil
	}
	need := end - s.allocated
	grow := max(need, s.prealloc)
	err := unix.Fallocate(s.fd, 0, s.allocated, grow)
	if errors.Is(err, unix.ENOSPC) && grow > need {
		grow = need
		err = unix.Fallocate(s.fd, 0, s.allocated, grow)
	}
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = s.f.Truncate(s.allocated + grow)
	}
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: s.path, Err: err}
	}
	s.allocated += grow
	return nil
}

// populate faults in the window's pages from s.faulted to at least upto
// (plus prefaultAhead) in one call instead of one fault per page. Kernels
// before 5.14 say EINVAL: then pages fault on first write.
func (s *mmapSink) populate(upto int64) {
	end := min(upto+prefaultAhead, s.winOff+int64(len(s.win)), s.allocated)
	from := s.faulted &^ (s.page - 1)
	if from < s.winOff {
		from = s.winOff
	}
	if end > from {
		_ = unix.Madvise(s.win[from-s.winOff:end-s.winOff], unix.MADV_POPULATE_WRITE)
	}
	s.faulted = end
}

// unmap releases the current window after starting writeback of what was
// written into it.
func (s *mmapSink) unmap() error {
	if s.win == nil {
		return nil
	}
	if s.writeback && s.pos > s.kicked {
		s.kick()
	}
	err := unix.Munmap(s.win)
	s.win = nil
	if err != nil {
		return &os.PathError{Op: "munmap", Path: s.path, Err: err}
	}
	return nil
}

// flush: on Linux fdatasync also writes back pages dirtied through shared
// mappings, so one call covers the current window and earlier ones.
func (s *mmapSink) flush() error {
	if err := unix.Fdatasync(s.fd); err != nil {
		return &os.PathError{Op: "fdatasync", Path: s.path, Err: err}
	}
	return nil
}

func (s *mmapSink) finish(size int64) error {
	err := s.unmap()
	if err == nil {
		err = s.f.Truncate(size)
	}
	if err == nil {
		err = s.f.Sync()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pack: finishing %s: %w", s.path, err)
	}
	return nil
}

func (s *mmapSink) abort() error {
	err := s.unmap()
	if tErr := s.f.Truncate(s.pos); err == nil {
		err = tErr
	}
	return errors.Join(err, s.f.Close())
}

// mapFile maps path read-only. The returned release unmaps it.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if size > math.MaxInt {
		return nil, nil, fmt.Errorf("pack: %s: %d bytes do not fit the address space", path, size)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	return b, func() error { return unix.Munmap(b) }, nil
}

// durableFile is the write(2) path of Create with NoMmap: space is
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

func (d *durableFile) Write(p []byte) (int, error) {
	if end := d.off + int64(len(p)); end > d.allocated {
		grow := max(end-d.allocated, d.prealloc)
		if err := unix.Fallocate(d.fd, unix.FALLOC_FL_KEEP_SIZE, d.allocated, grow); err != nil &&
			!errors.Is(err, unix.EOPNOTSUPP) {
			return 0, &os.PathError{Op: "fallocate", Path: d.path, Err: err}
		}
		d.allocated += grow
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

func (s *fileSink) abort() error { return s.d.f.Close() }
