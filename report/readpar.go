package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/pack"
)

// frameWorkers is how many goroutines decode the frames of an indexed pack
// file: each reads its frames' records (pread, by the index's offsets)
// into a buffer of its own and decodes them (pack.DecodeFrame: both CRCs
// checked), frame i on worker i mod frameWorkers, so the analysing
// goroutine takes them back in file order. Decoding is the larger half of
// a report's work; two workers and the analyser share two cores.
const (
	frameWorkers  = 2
	unitsInFlight = 1 // per worker: the analyser holds one while the other worker decodes
)

// frameUnit is one frame in flight: the record's bytes and the frame
// decoded from them (its bytes alias buf or its own buffers).
type frameUnit struct {
	worker int
	buf    []byte
	f      pack.Frame
	err    error
}

// indexedPackStream reads an indexed pack file with frameWorkers decoding
// goroutines.
type indexedPackStream struct {
	path  string
	file  *os.File
	offs  []int64
	size  int64
	free  [frameWorkers]chan *frameUnit
	out   [frameWorkers]chan *frameUnit
	done  chan struct{}
	next_ int // the frame to receive next
	u     *frameUnit
	i     int
	msg   dumpfile.Message
	ended bool
}

// openIndexedPackStream starts the decoding goroutines over the frames
// the index lists (in file order).
func openIndexedPackStream(path string, offs []int64) (*indexedPackStream, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	offs = slices.Clone(offs)
	slices.Sort(offs)
	s := &indexedPackStream{path: path, file: file, offs: offs, size: st.Size(), done: make(chan struct{}), i: -1}
	for k := 0; k < frameWorkers; k++ {
		s.free[k] = make(chan *frameUnit, unitsInFlight)
		s.out[k] = make(chan *frameUnit, unitsInFlight)
		for j := 0; j < unitsInFlight; j++ {
			s.free[k] <- &frameUnit{worker: k}
		}
	}
	for k := 0; k < frameWorkers; k++ {
		go s.decode(k)
	}
	return s, nil
}

// decode reads and decodes frames k, k+frameWorkers, ... until the last,
// an error (sent with its unit) or done.
func (s *indexedPackStream) decode(k int) {
	defer close(s.out[k])
	for i := k; i < len(s.offs); i += frameWorkers {
		var u *frameUnit
		select {
		case u = <-s.free[k]:
		case <-s.done:
			return
		}
		end := s.size
		if i+1 < len(s.offs) {
			end = s.offs[i+1]
		}
		u.err = s.decodeAt(u, s.offs[i], end)
		select {
		case s.out[k] <- u:
		case <-s.done:
			return
		}
		if u.err != nil {
			return
		}
	}
}

// decodeAt reads the bytes [off, end) (the record runs up to the next
// frame, or into the index for the last one) and decodes the frame at
// their start. Damage names the file and the offset in it.
func (s *indexedPackStream) decodeAt(u *frameUnit, off, end int64) error {
	if end <= off || end-off > s.size {
		return &pack.CorruptError{Path: s.path, Offset: off, Reason: fmt.Sprintf("index: frame at %d, next at %d", off, end), Err: pack.ErrCorrupt}
	}
	n := int(end - off)
	if cap(u.buf) < n {
		u.buf = make([]byte, n)
	}
	u.buf = u.buf[:n]
	k, err := s.file.ReadAt(u.buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	u.buf = u.buf[:k] // the file may have shrunk since it was opened
	if _, err := pack.DecodeFrameWith(u.buf, &u.f, pack.ReaderOptions{MaxMemory: dumpfile.MaxMemory()}); err != nil {
		var ce *pack.CorruptError
		if errors.As(err, &ce) {
			c := *ce
			c.Path, c.Offset = s.path, ce.Offset+off
			return &c
		}
		return fmt.Errorf("%s: frame at offset %d: %w", s.path, off, err)
	}
	return nil
}

func (s *indexedPackStream) next() (bool, error) {
	if s.ended {
		return false, nil
	}
	s.i++
	for s.u == nil || s.i >= s.u.f.Len() {
		if s.u != nil {
			s.free[s.u.worker] <- s.u
			s.u = nil
		}
		if s.next_ >= len(s.offs) {
			s.ended = true
			return false, nil
		}
		u, ok := <-s.out[s.next_%frameWorkers]
		if !ok {
			s.ended = true
			return false, fmt.Errorf("%s: frame %d was not decoded", s.path, s.next_)
		}
		s.next_++
		if u.err != nil {
			s.ended = true
			return false, u.err
		}
		s.u, s.i = u, 0
	}
	pm := s.u.f.Message(s.i)
	t := dumpfile.MessageTime(&pm, s.u.f.Time())
	s.msg = dumpfile.Message{Name: pm.Name, Channel: pm.Channel, GenNs: pm.GenTs, DoneNs: pm.DoneTs, TimeNs: t, Data: s.u.f.Data(s.i)}
	if s.msg.Data == nil && pm.DataIndex != pack.NoData {
		s.msg.Data = []byte{}
	}
	return true, nil
}

func (s *indexedPackStream) message() *dumpfile.Message { return &s.msg }
func (s *indexedPackStream) time() int64                { return s.msg.TimeNs }

// close stops the decoders, waits for them and closes the file.
func (s *indexedPackStream) close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	for k := range s.out {
		for range s.out[k] {
		}
	}
	s.file.Close()
}
