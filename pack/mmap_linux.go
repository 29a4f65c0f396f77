// The mmap writer sink of Create (WriterOptions.Mmap): records are copied
// into a shared mapping of a window of the file, fallocated ahead, populated
// ahead by a prefaulter goroutine, with writeback started as it fills.

package pack

import (
	"errors"
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

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
	requested int64 // file offset up to which background populating was asked
	bg        *prefaulter
}

// newMmapSink returns the mmap sink of Create over f: the window rounded to
// whole pages (256 MiB, 16 MiB on 32-bit, when opts.Window is 0), the
// preallocation step (the window, at most 64 MiB, when opts.Prealloc is 0)
// and the prefaulting and writeback opts ask for.
func newMmapSink(f *os.File, path string, opts WriterOptions) *mmapSink {
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
	if s.prefault && !opts.NoBackgroundPrefault {
		s.bg = newPrefaulter()
	}
	return s
}

// prefaulter populates parts of the mmap writer's window on its own
// goroutine, so that the kernel's zero-filling of fresh page-cache folios
// runs on another CPU while the writer copies into pages already
// populated.
type prefaulter struct {
	req      chan prefaultReq
	done     chan int64 // end offset of each finished request, in order
	inflight int
}

type prefaultReq struct {
	b   []byte
	end int64
}

// prefaultDepth is how many prefaultAhead-sized requests the background
// prefaulter may have outstanding.
const prefaultDepth = 2

func newPrefaulter() *prefaulter {
	p := &prefaulter{req: make(chan prefaultReq, prefaultDepth), done: make(chan int64, prefaultDepth)}
	go func() {
		for r := range p.req {
			_ = unix.Madvise(r.b, unix.MADV_POPULATE_WRITE)
			p.done <- r.end
		}
		close(p.done)
	}()
	return p
}

// wait blocks for the oldest outstanding request and returns its end.
func (p *prefaulter) wait() int64 {
	p.inflight--
	return <-p.done
}

// drain waits for every outstanding request: the window they populate may
// then be unmapped.
func (p *prefaulter) drain() {
	for p.inflight > 0 {
		p.wait()
	}
}

// stop drains and ends the goroutine.
func (p *prefaulter) stop() {
	p.drain()
	close(p.req)
	for range p.done {
	}
}

// prefaultAhead is how far beyond the bytes being written the mmap writer
// populates the window (MADV_POPULATE_WRITE) in one call.
const prefaultAhead = 2 << 20

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
	if s.bg != nil {
		s.populateBackground(s.pos + int64(n))
	} else if s.prefault && s.pos+int64(n) > s.faulted {
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
	s.requested = max(s.requested, off)
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

// populateBackground keeps up to prefaultDepth requests of prefaultAhead
// bytes queued ahead of upto, and waits only when the writer would
// otherwise overtake the prefaulter (its own faults are slower than a
// populate call).
func (s *mmapSink) populateBackground(upto int64) {
	p := s.bg
	limit := min(s.winOff+int64(len(s.win)), s.allocated)
	for {
		for p.inflight < prefaultDepth && s.requested < limit && s.requested < upto+prefaultDepth*prefaultAhead {
			from := max(s.requested, s.winOff) &^ (s.page - 1)
			end := min(from+prefaultAhead, limit)
			p.req <- prefaultReq{b: s.win[from-s.winOff : end-s.winOff], end: end}
			p.inflight++
			s.requested = end
		}
		if upto <= s.faulted || p.inflight == 0 {
			return
		}
		s.faulted = p.wait()
	}
}

// unmap releases the current window after starting writeback of what was
// written into it.
func (s *mmapSink) unmap() error {
	if s.win == nil {
		return nil
	}
	if s.bg != nil {
		s.bg.drain()
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
	if s.bg != nil {
		s.bg.stop()
		s.bg = nil
	}
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
	if s.bg != nil {
		s.bg.stop()
		s.bg = nil
	}
	if tErr := s.f.Truncate(s.pos); err == nil {
		err = tErr
	}
	return errors.Join(err, s.f.Close())
}
