package durable

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// Filter passes a byte stream through a filter (an age stream: the
// encryption of a dump) on a goroutine of its own and writes the filter's
// output to a File from the caller's goroutine, so the two share the work
// on two threads: the caller builds the plaintext and copies it into one
// of FilterBuffers input buffers (Write), a full one goes to the filter's
// goroutine, which runs the filter (its Write) whose output (Sink) is
// collected into FilterBuffers output buffers, and the caller writes the
// full output buffers to the File when it hands over the next input or
// waits for a free one. So the filter's goroutine does not wait for the
// kernel's copy, and the caller writes while the filter works.
//
//	f := NewFilter(d, nil)
//	w, _ := age.Encrypt(f.Sink(), recipients...) // the header: straight to d
//	f.Start(w)
//	f.Write(plaintext)                            // ...
//	f.Close()                                     // every byte through w, written
//	w.Close()                                     // the last chunk: straight to d
//	f.Flush()
//
// Bytes reach the File in the order the filter wrote them to Sink. At
// most 2 × FilterBuffers × BufferSize bytes are held between the caller's
// Write and the File (not yet in the kernel when the process dies).
//
// Write, Close and Flush are for one goroutine, which also owns the File
// until Close returns. The filter w is written only by the Filter's
// goroutine between Start and Close, and Sink written only by w (or by
// the caller outside that span, then written to the File at once). An
// error of the File's write is sticky and returned by Write, Close and
// Flush; the filter's goroutine is stopped by Close in every case.
type Filter struct {
	d    *File
	w    io.Writer
	init func()
	sink filterSink

	in     []byte      // the input buffer filling (nil: none taken yet)
	inFree chan []byte // input buffers the filter is done with
	inFull chan item   // input buffers and lent pieces handed over (closed by Close)
	done   chan error  // the goroutine's filter error (nil), then closed
	err    error       // sticky: the File's write or the filter failed

	// Lent pieces (WriteLent): sent counts the items handed over, mark
	// the count at the last Release; the goroutine counts those it has
	// read (read) and wakes a Release waiting for waitFor of them.
	sent, mark uint64
	read       atomic.Uint64
	waitFor    atomic.Uint64
	wake       chan struct{}

	running, closed bool
	bufs            []*[BufferSize]byte
}

// FilterBuffers is how many input and how many output buffers (of
// BufferSize each) a Filter has.
const FilterBuffers = 2

// filterQueue is how many input buffers and lent pieces may wait for the
// filter's goroutine.
const filterQueue = 64

// item is an input buffer or a lent piece of the caller's.
type item struct {
	b    []byte
	lent bool
}

// filterBufs keeps the buffers of finished Filters (4 MiB each), so a
// recorder writing a dump after another allocates none.
var filterBufs sync.Pool

func getBuf() *[BufferSize]byte {
	if b, ok := filterBufs.Get().(*[BufferSize]byte); ok {
		return b
	}
	return new([BufferSize]byte)
}

// NewFilter returns a Filter writing to d. init, when set, runs first on
// the filter's thread (a goroutine locked to its own OS thread): the
// caller's priorities for it.
func NewFilter(d *File, init func()) *Filter {
	f := &Filter{d: d, init: init,
		inFree: make(chan []byte, FilterBuffers), inFull: make(chan item, filterQueue), done: make(chan error, 1),
		wake: make(chan struct{}, 1)}
	f.sink = filterSink{f: f, free: make(chan []byte, FilterBuffers), full: make(chan []byte, FilterBuffers)}
	for range FilterBuffers {
		b, c := getBuf(), getBuf()
		f.bufs = append(f.bufs, b, c)
		f.inFree <- b[:0:BufferSize]
		f.sink.free <- c[:0:BufferSize]
	}
	return f
}

// Sink is where the filter writes its output. Written outside Start and
// Close (an age stream's header as it is made, its last chunk at its
// Close), it goes to the File at once (errors are sticky); else it is
// collected for the caller's goroutine to write.
func (f *Filter) Sink() io.Writer { return &f.sink }

// Start starts the goroutine that writes the input to w.
func (f *Filter) Start(w io.Writer) {
	f.w, f.running = w, true
	go f.run()
}

// run writes each input buffer handed over to the filter, in order, and
// gives it back, then hands the output buffer it filled last over.
func (f *Filter) run() {
	runtime.LockOSThread() // the thread ends with the goroutine (never unlocked)
	if f.init != nil {
		f.init()
	}
	var err error
	for it := range f.inFull {
		if err == nil {
			_, err = f.w.Write(it.b)
		}
		if !it.lent {
			f.inFree <- it.b[:0]
		}
		if n := f.read.Add(1); n == f.waitFor.Load() {
			select {
			case f.wake <- struct{}{}:
			default:
			}
		}
	}
	if s := &f.sink; len(s.buf) > 0 {
		s.full <- s.buf
		s.buf = nil
	}
	f.done <- err
	close(f.done)
}

// Write copies p into the input buffers, handing full ones to the filter
// and writing the filter's full output buffers to the File meanwhile.
func (f *Filter) Write(p []byte) (int, error) {
	if f.closed || !f.running {
		return 0, os.ErrClosed
	}
	n := len(p)
	for len(p) > 0 {
		if f.err != nil {
			return n - len(p), f.err
		}
		if f.in == nil {
			f.in = f.takeIn()
		}
		c := copy(f.in[len(f.in):cap(f.in)], p)
		f.in, p = f.in[:len(f.in)+c], p[c:]
		if len(f.in) == cap(f.in) {
			f.send(item{b: f.in})
			f.in = nil
			f.drain()
		}
	}
	return n, f.err
}

// WriteLent hands p to the filter without copying it, after what was
// written before: p must stay unchanged until the Release after the next
// one (or Close) returns. For large pieces (a pack frame's data blocks):
// each costs a hand-over.
func (f *Filter) WriteLent(p []byte) (int, error) {
	if f.closed || !f.running {
		return 0, os.ErrClosed
	}
	if f.err != nil {
		return 0, f.err
	}
	if len(f.in) > 0 { // what was written before goes first
		f.send(item{b: f.in})
		f.in = nil
	}
	f.send(item{b: p, lent: true})
	f.drain()
	return len(p), f.err
}

// Release waits until the filter has read every piece lent before the
// Release before this one (writing its output meanwhile): the caller's
// frames alternate between two buffers, and a Release after each frame
// frees the buffer of the frame before.
func (f *Filter) Release() error {
	target := f.mark
	f.mark = f.sent
	if f.read.Load() >= target {
		return f.err
	}
	f.waitFor.Store(target)
	for f.read.Load() < target {
		select {
		case <-f.wake:
		case c := <-f.sink.full:
			f.writeOut(c)
		}
	}
	f.waitFor.Store(0)
	return f.err
}

// send hands an item to the filter, writing its output while the queue is
// full.
func (f *Filter) send(it item) {
	f.sent++
	for {
		select {
		case f.inFull <- it:
			return
		case c := <-f.sink.full:
			f.writeOut(c)
		}
	}
}

// takeIn returns a free input buffer, writing the filter's output while
// it waits for one.
func (f *Filter) takeIn() []byte {
	for {
		select {
		case b := <-f.inFree:
			return b
		case c := <-f.sink.full:
			f.writeOut(c)
		}
	}
}

// drain writes the output buffers the filter has filled so far.
func (f *Filter) drain() {
	for {
		select {
		case c := <-f.sink.full:
			f.writeOut(c)
		default:
			return
		}
	}
}

// writeOut writes an output buffer to the File (unless a write failed
// before) and gives it back to the filter.
func (f *Filter) writeOut(c []byte) {
	if f.err == nil && len(c) > 0 {
		if _, err := f.d.Write(c); err != nil {
			f.err = err
		}
	}
	f.sink.free <- c[:0]
}

// Close hands what is buffered to the filter, waits until the filter's
// goroutine has written all of it, writes the filter's output to the File
// and stops the goroutine. After it the caller may write to the filter
// (its end: Sink writes straight to the File) and must Flush. It returns
// the first error of the File's writes or of the filter's.
func (f *Filter) Close() error {
	if f.closed {
		return f.err
	}
	f.closed = true
	if !f.running {
		return f.err
	}
	if len(f.in) > 0 {
		f.send(item{b: f.in})
	}
	f.in = nil
	close(f.inFull)
	for {
		select {
		case c := <-f.sink.full:
			f.writeOut(c)
			continue
		case err := <-f.done:
			f.drain() // run hands its last buffer over before it answers
			f.running = false
			if err != nil && f.err == nil {
				f.err = err
			}
		}
		break
	}
	return f.err
}

// Flush writes what Sink collected since Close (nothing: Sink writes
// straight through then) and gives the buffers back to the pool: the
// Filter is not used after it. It returns the sticky error.
func (f *Filter) Flush() error {
	if f.running {
		return errors.New("BUG: durable: Filter.Flush before Close")
	}
	for _, b := range f.bufs {
		filterBufs.Put(b)
	}
	f.bufs = nil
	return f.err
}

// filterSink collects the filter's output into the Filter's output
// buffers (on the filter's goroutine), or writes it straight to the File
// (on the caller's, outside Start and Close).
type filterSink struct {
	f          *Filter
	buf        []byte // filling (nil: none taken yet)
	free, full chan []byte
}

func (s *filterSink) Write(p []byte) (int, error) {
	f := s.f
	if !f.running {
		if f.err != nil {
			return 0, f.err
		}
		if _, err := f.d.Write(p); err != nil {
			f.err = err
			return 0, err
		}
		return len(p), nil
	}
	n := len(p)
	for len(p) > 0 {
		if s.buf == nil {
			s.buf = <-s.free
		}
		c := copy(s.buf[len(s.buf):cap(s.buf)], p)
		s.buf, p = s.buf[:len(s.buf)+c], p[c:]
		if len(s.buf) == cap(s.buf) {
			s.full <- s.buf
			s.buf = nil
		}
	}
	return n, nil
}
