package durable

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
)

// DefaultPrealloc is the step in which a File preallocates ahead when
// Options.Prealloc is 0.
const DefaultPrealloc = 64 << 20

// WritebackChunk is how much written data a File lets accumulate before it
// starts its writeback (sync_file_range), so that disk I/O overlaps the
// copying and the closing fsync finds little left to do.
const WritebackChunk = 8 << 20

// Options configure a File.
type Options struct {
	// Prealloc is the step in which the file is preallocated ahead of the
	// data (DefaultPrealloc when 0); near a full disk exactly what a write
	// needs.
	Prealloc int64
	// MaxInFlight bounds the written bytes whose writeback may still be
	// running: past it, a write waits for the oldest chunk's writeback
	// (sync_file_range WAIT_BEFORE | WRITE | WAIT_AFTER) before it returns.
	// 0 means no bound (the kernel's dirty limits only).
	MaxInFlight int64
	// Async gives the file a writer goroutine of its own, locked to its OS
	// thread, whose I/O priority is lowered (best effort, lowest level:
	// the recorder's other threads' I/O goes first): Submit hands it one
	// write at a time and returns, so the caller prepares the next while
	// the kernel copies this one. Write, Sync, Finish and Abort wait for
	// the write in flight first.
	Async bool
}

// File writes one file front to back durably (see the package doc).
type File struct {
	f    *os.File
	fd   int
	path string
	// end is the bytes written or submitted: the caller's view, while off
	// (and kicked, waited) belong to whoever writes (the writer goroutine
	// when Async, between Submit and the next wait).
	end       int64
	off       int64 // bytes written
	kicked    int64 // writeback started up to here
	waited    int64 // writeback waited for up to here
	allocated int64
	prealloc  int64
	maxFlight int64

	// Async: the writer goroutine's queue (one write in flight at most),
	// its answers, and whether a write is in flight. Both channels hold
	// one: Submit does not wait until the writer's thread (locked, so
	// waking it is a thread switch) is running to hand it a write, nor
	// the writer until the caller takes its answer.
	reqs     chan [][]byte
	answers  chan error
	inFlight bool
	err      error // sticky: an asynchronous write failed
}

// New returns a File writing f (opened for writing, empty) at path.
func New(f *os.File, path string, o Options) *File {
	if o.Prealloc <= 0 {
		o.Prealloc = DefaultPrealloc
	}
	d := &File{f: f, fd: int(f.Fd()), path: path, prealloc: o.Prealloc, maxFlight: o.MaxInFlight}
	if o.Async {
		d.reqs, d.answers = make(chan [][]byte, 1), make(chan error, 1)
		go d.writer(d.reqs)
	}
	return d
}

// writer is the Async writer goroutine: on its own OS thread at a lower
// I/O priority, it writes what Submit hands it and answers each.
func (d *File) writer(reqs chan [][]byte) {
	runtime.LockOSThread() // the thread ends with the goroutine (never unlocked)
	LowerIOPriority()
	for p := range reqs { // not d.reqs: stop sets it to nil
		d.answers <- d.writev(p)
	}
}

// Offset is the number of bytes written (or submitted).
func (d *File) Offset() int64 { return d.end }

// Submit starts writing the pieces in order (n bytes in all) after
// preallocating their space and returns; without Async it writes them
// before it returns. The pieces' memory must stay unchanged until the next
// call on the File returns. An asynchronous write's error is returned by
// the next call.
func (d *File) Submit(pieces [][]byte, n int64) error {
	if err := d.wait(); err != nil {
		return err
	}
	if err := d.Ensure(d.end + n); err != nil {
		return err
	}
	d.end += n
	if d.reqs == nil {
		return d.writev(pieces)
	}
	d.inFlight = true
	d.reqs <- pieces
	return nil
}

// wait waits for the write in flight and returns the first error of any.
func (d *File) wait() error {
	if d.inFlight {
		d.inFlight = false
		if err := <-d.answers; err != nil && d.err == nil {
			d.err = err
		}
	}
	return d.err
}

// stop waits for the write in flight and ends the writer goroutine.
func (d *File) stop() error {
	err := d.wait()
	if d.reqs != nil {
		close(d.reqs)
		d.reqs = nil
	}
	return err
}

// Path is the file's path, for errors.
func (d *File) Path() string { return d.path }

// Write appends p, preallocating its space first so that a full disk is
// this write's error, never a later flush's.
func (d *File) Write(p []byte) (int, error) {
	if err := d.wait(); err != nil {
		return 0, err
	}
	if err := d.Ensure(d.end + int64(len(p))); err != nil {
		return 0, err
	}
	n, err := d.f.Write(p)
	d.end += int64(n)
	d.wrote(int64(n))
	return n, err
}

// Writev appends the pieces in order, preallocated first, in as few
// system calls as the kernel allows (writev); n is their total length.
func (d *File) Writev(pieces [][]byte, n int64) error {
	if err := d.Submit(pieces, n); err != nil {
		return err
	}
	return d.wait()
}

// Sync writes back what is in flight and waits for it (fdatasync): every
// byte written so far is durable, the size aside.
func (d *File) Sync() error {
	if err := d.wait(); err != nil {
		return err
	}
	if err := d.datasync(); err != nil {
		return &os.PathError{Op: "fdatasync", Path: d.path, Err: err}
	}
	return nil
}

// Rewind takes back what was written from offset to on: the next write
// goes to offset to (over those bytes), and Finish and Abort cut the file
// there unless more is written. The space stays preallocated. to must not
// be past Offset. It waits for a write in flight first.
func (d *File) Rewind(to int64) error {
	if err := d.wait(); err != nil {
		return err
	}
	if to < 0 || to > d.end {
		return fmt.Errorf("durable: rewinding %s to %d, %d bytes written", d.path, to, d.end)
	}
	if _, err := d.f.Seek(to, io.SeekStart); err != nil {
		return err
	}
	d.end, d.off = to, to
	d.kicked, d.waited = min(d.kicked, to), min(d.waited, to)
	return nil
}

// Finish makes the file durable at its written size (truncating the
// preallocation past it, fsync) and closes it.
func (d *File) Finish() error {
	err := d.stop()
	if err == nil {
		err = d.f.Truncate(d.off)
	}
	if err == nil {
		err = d.f.Sync()
	}
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("finishing %s: %w", d.path, err)
	}
	return nil
}

// Abort drops the preallocation past what was written and closes the file.
func (d *File) Abort() error {
	d.stop()
	return errors.Join(d.f.Truncate(d.off), d.f.Close())
}

// advance drops n written bytes from the front of pieces. It reslices the
// first piece left in place (the caller's slice header is changed).
func advance(pieces [][]byte, n int) [][]byte {
	for n > 0 && len(pieces) > 0 {
		if n < len(pieces[0]) {
			pieces[0] = pieces[0][n:]
			return pieces
		}
		n -= len(pieces[0])
		pieces = pieces[1:]
	}
	for len(pieces) > 0 && len(pieces[0]) == 0 {
		pieces = pieces[1:]
	}
	return pieces
}

// Buffered is a buffered writer over a File for callers that write small
// records and large payloads (an MCAP writer's chunk headers and chunks):
// small writes collect in a buffer of BufferSize, a large one (bufferDirect
// and more) goes to the kernel in one writev together with what is
// buffered, straight from the caller's memory, not through the buffer.
type Buffered struct {
	d    *File
	buf  []byte
	iov  [2][]byte
	iovs [][]byte // Writev's: the buffer, then the caller's pieces
}

// BufferSize is the size of Buffered's buffer.
const BufferSize = 1 << 20

// bufferDirect is the write size from which Buffered writes from the
// caller's memory.
const bufferDirect = 64 << 10

// NewBuffered returns a Buffered writing to d.
func NewBuffered(d *File) *Buffered { return &Buffered{d: d, buf: make([]byte, 0, BufferSize)} }

// Write buffers p, or writes it with what is buffered when it is large.
func (b *Buffered) Write(p []byte) (int, error) {
	if len(p) >= bufferDirect {
		b.iov[0], b.iov[1] = b.buf, p
		err := b.d.Writev(b.iov[:], int64(len(b.buf)+len(p)))
		b.iov[0], b.iov[1] = nil, nil
		b.buf = b.buf[:0]
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if len(b.buf)+len(p) > cap(b.buf) {
		if err := b.Flush(); err != nil {
			return 0, err
		}
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Flush writes what is buffered.
func (b *Buffered) Flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.d.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}

// Writev writes what is buffered, then the pieces (n bytes in all), in
// one writev straight from the pieces' memory.
func (b *Buffered) Writev(pieces [][]byte, n int64) error {
	iovs := append(append(b.iovs[:0], b.buf), pieces...)
	err := b.d.Writev(iovs, int64(len(b.buf))+n)
	clear(iovs) // holds none of the caller's memory past the write
	b.iovs = iovs[:0]
	b.buf = b.buf[:0]
	return err
}

// Rewind takes back what was written or buffered from offset to on
// (File.Rewind); to must not be past Offset.
func (b *Buffered) Rewind(to int64) error {
	if w := b.d.Offset(); to >= w && to <= w+int64(len(b.buf)) {
		b.buf = b.buf[:to-w]
		return nil
	}
	b.buf = b.buf[:0]
	return b.d.Rewind(to)
}
