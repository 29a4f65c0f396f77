package durable

import (
	"io"
	"os"
)

// Stage is a buffered writer whose full buffers are written to w by a
// goroutine of its own, for a producer and a consumer that are each a
// CPU's worth of work (an encrypted dump: the dumper builds the plaintext,
// the stage's goroutine encrypts it, the File's writer thread writes the
// ciphertext): Write copies into one of StageBuffers buffers of
// BufferSize and hands a full one over; it waits only when every buffer
// is handed over and not yet written.
//
// Write, Flush and Close are for one goroutine. w is written by the
// stage's goroutine between a buffer's hand-over and the Flush or Close
// that waits for it; the caller may use w itself only after Flush or
// Close returned. An error of w's Write is sticky: later buffers are not
// written, and Write, Flush and Close return it.
type Stage struct {
	w    io.Writer
	buf  []byte      // filling (nil until the first Write takes one)
	free chan []byte // buffers written (or never used)
	full chan []byte // buffers handed over
	errs chan error  // the goroutine's first error, then closed
	err  error       // sticky: w's Write failed
	done bool
}

// StageBuffers is how many buffers a Stage has.
const StageBuffers = 3

// NewStage starts a Stage writing to w.
func NewStage(w io.Writer) *Stage {
	s := &Stage{w: w, free: make(chan []byte, StageBuffers), full: make(chan []byte, StageBuffers), errs: make(chan error, 1)}
	for range StageBuffers {
		s.free <- make([]byte, 0, BufferSize)
	}
	go s.run()
	return s
}

// run writes the buffers handed over, in order, and gives them back.
func (s *Stage) run() {
	var err error
	for b := range s.full {
		if err == nil {
			if _, err = s.w.Write(b); err != nil {
				s.errs <- err
			}
		}
		s.free <- b[:0]
	}
	close(s.errs)
}

// Write copies p into the buffers, handing full ones over.
func (s *Stage) Write(p []byte) (int, error) {
	n := len(p)
	if s.done {
		return 0, os.ErrClosed
	}
	for len(p) > 0 {
		if err := s.check(); err != nil {
			return n - len(p), err
		}
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

// check returns the goroutine's error, if it reported one.
func (s *Stage) check() error {
	if s.err == nil {
		select {
		case err := <-s.errs:
			s.err = err
		default:
		}
	}
	return s.err
}

// Flush hands over what is buffered and waits until every buffer is
// written (or w failed): then w may be used by the caller.
func (s *Stage) Flush() error {
	if s.done {
		return s.err
	}
	if s.buf != nil {
		if len(s.buf) > 0 {
			s.full <- s.buf
		} else {
			s.free <- s.buf
		}
		s.buf = nil
	}
	var back [StageBuffers][]byte
	for i := range back { // take every buffer back: all written
		back[i] = <-s.free
	}
	for _, b := range back {
		s.free <- b
	}
	return s.check()
}

// Close flushes and stops the goroutine. After Close, Write and Flush
// return the error of the writes, if any, and write nothing more.
func (s *Stage) Close() error {
	if s.done {
		return s.err
	}
	err := s.Flush()
	s.done = true
	close(s.full)
	for e := range s.errs {
		if s.err == nil {
			s.err = e
		}
	}
	if err == nil {
		err = s.err
	}
	return err
}
