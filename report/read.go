package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/kway"
	"github.com/edr-lite/edr-lite/pack"
)

// How pack files are read for a report: an indexed file by its frame
// offsets with two decoding goroutines (readpar.go); a file without a
// valid index (cut short, still being written) by a goroutine of its own,
// front to back through pack.StreamReader (buffered read(2), every CRC
// checked), frames copied into batches handed to the analysing goroutine
// and handed back for reuse. Decoding frames (the larger cost) and
// analysing messages then run on two cores, and memory stays at a few
// frames per file: a mapping of the whole file would count every page read
// in the process's RSS.
const (
	framesInFlight = 2
	readBuffer     = 1 << 20
)

// msgStream is one source's messages in order.
type msgStream interface {
	next() (bool, error)
	message() *dumpfile.Message
	time() int64
	close()
}

// packStream reads a pack file on its own goroutine. A StreamReader's
// bytes are valid only until its next read, so the goroutine copies each
// frame's messages into a batch (one slab for the payloads) that the
// analysing goroutine reads while the next frame is decoded.
type packStream struct {
	path  string
	full  chan *batch
	free  chan *batch
	done  chan struct{}
	errc  chan error
	b     *batch
	i     int
	msg   dumpfile.Message
	ended bool
	// indexed is set, before full is closed, when the stream ended with a
	// valid index and trailer: every byte of the file was checked.
	indexed   bool
	truncated string // the truncation a cut file ended with
}

// batch is one frame's messages, payloads in slab. Meta is left out (the
// report does not read it).
type batch struct {
	msgs []batchMsg
	slab []byte
}

// batchMsg is one message of a batch: 64 bytes, where a dumpfile.Message
// is 104 (a frame of small messages holds a hundred thousand of them).
type batchMsg struct {
	name, channel string
	gen, done, t  int64
	off, n        int32 // payload at slab[off:off+n]; off < 0: no data block
}

func openPackStream(path string) (*packStream, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	sr, err := pack.NewStreamReaderWith(bufio.NewReaderSize(file, readBuffer), pack.ReaderOptions{MaxMemory: dumpfile.MaxMemory()})
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &packStream{path: path, full: make(chan *batch, framesInFlight), free: make(chan *batch, framesInFlight+1),
		done: make(chan struct{}), errc: make(chan error, 1), i: -1}
	for k := 0; k < framesInFlight+1; k++ {
		s.free <- new(batch)
	}
	go s.read(file, sr)
	return s, nil
}

// read decodes frames, copies them into free batches and sends them on
// full, until the end of the file, an error (sent on errc) or done.
func (s *packStream) read(file *os.File, sr *pack.StreamReader) {
	defer file.Close()
	defer close(s.full)
	var f pack.Frame
	for {
		if err := sr.ReadInto(&f); err != nil {
			switch {
			case err == io.EOF:
			case errors.Is(err, pack.ErrTruncated):
				// a file cut short (a crash mid-dump, a .tmp): report what
				// is there, and say so in the file facts
				s.truncated = err.Error()
				var ce *pack.CorruptError
				if errors.As(err, &ce) {
					s.truncated = fmt.Sprintf("cut short at offset %d: %s", ce.Offset, ce.Reason)
				}
			default:
				var ce *pack.CorruptError
				if errors.As(err, &ce) && ce.Path == "" {
					ce.Path = s.path // name the file, not "<stream>"
					err = ce
				}
				s.errc <- err
			}
			s.indexed = sr.Indexed()
			return
		}
		var b *batch
		select {
		case b = <-s.free:
		case <-s.done:
			return
		}
		b.fill(&f)
		select {
		case s.full <- b:
		case <-s.done:
			return
		}
	}
}

func (b *batch) fill(f *pack.Frame) {
	b.msgs, b.slab = b.msgs[:0], b.slab[:0]
	for i := 0; i < f.Len(); i++ {
		pm := f.Message(i)
		d := f.Data(i)
		m := batchMsg{name: pm.Name, channel: pm.Channel, gen: pm.GenTs, done: pm.DoneTs,
			t: dumpfile.MessageTime(&pm, f.Time()), off: int32(len(b.slab)), n: int32(len(d))}
		if d == nil && pm.DataIndex == pack.NoData {
			m.off = -1
		}
		b.slab = append(b.slab, d...)
		b.msgs = append(b.msgs, m)
	}
}

// next moves to the next message: the next of the current batch, else the
// first of the next one (the previous one goes back to the reader).
func (s *packStream) next() (bool, error) {
	if s.ended {
		return false, nil
	}
	s.i++
	for s.b == nil || s.i >= len(s.b.msgs) {
		if s.b != nil {
			s.free <- s.b
			s.b = nil
		}
		b, ok := <-s.full
		if !ok {
			s.ended = true
			select {
			case err := <-s.errc:
				return false, err
			default:
				return false, nil
			}
		}
		s.b, s.i = b, 0
	}
	m := &s.b.msgs[s.i]
	s.msg = dumpfile.Message{Name: m.name, Channel: m.channel, GenNs: m.gen, DoneNs: m.done, TimeNs: m.t}
	if m.off >= 0 {
		s.msg.Data = s.b.slab[m.off : m.off+m.n : m.off+m.n]
	}
	return true, nil
}

func (s *packStream) message() *dumpfile.Message { return &s.msg }
func (s *packStream) time() int64                { return s.msg.TimeNs }

// close stops the reading goroutine and waits for it.
func (s *packStream) close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	for range s.full { // drain until the reader has closed it
	}
}

// mcapStream reads an MCAP source on the analysing goroutine, in log_time
// order (dumpfile.Messages over the one source).
type mcapStream struct {
	m *dumpfile.Messages
}

func (s *mcapStream) next() (bool, error)        { return s.m.Next() }
func (s *mcapStream) message() *dumpfile.Message { return s.m.Message() }
func (s *mcapStream) time() int64                { return s.m.Time() }
func (s *mcapStream) close()                     {}

// merged merges several streams by message time (ties: source order,
// then each source's order), as dumpfile.Messages does.
type merged struct {
	streams []*mergeItem
	h       *kway.Heap[*mergeItem]
	cur     *mergeItem
	started bool
}

type mergeItem struct {
	s   msgStream
	src int
	n   uint64
	t   int64
}

func lessItem(a, b *mergeItem) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	if a.src != b.src {
		return a.src < b.src
	}
	return a.n < b.n
}

// openStreams opens a stream per source: pack files through their own
// reading goroutine, MCAP files through the source. fromNs > 0 seeks
// MCAP sources; pack streams are filtered by the caller.
func openStreams(srcs []*dumpfile.Source, fromNs int64) (*merged, error) {
	m := &merged{h: kway.New(lessItem, len(srcs))}
	for i, src := range srcs {
		var s msgStream
		direct := src.DecodedTopics() == nil // else the Source gives CAN frames decoded (--dbc)
		if r := src.Pack(); r != nil && direct && r.Indexed() && len(r.FrameOffsets()) > 0 {
			ps, err := openIndexedPackStream(src.Path, r.FrameOffsets())
			if err != nil {
				m.close()
				return nil, err
			}
			s = ps
		} else if src.Pack() != nil && direct {
			ps, err := openPackStream(src.Path)
			if err != nil {
				m.close()
				return nil, err
			}
			s = ps
		} else {
			dm := dumpfile.NewMessages(src)
			if err := dm.SeekTime(fromNs); err != nil {
				m.close()
				return nil, err
			}
			s = &mcapStream{dm}
		}
		m.streams = append(m.streams, &mergeItem{s: s, src: i})
	}
	return m, nil
}

func (m *merged) next() (bool, error) {
	if len(m.streams) == 1 { // nothing to merge
		m.cur = m.streams[0]
		return m.cur.s.next()
	}
	if !m.started {
		m.started = true
		for _, it := range m.streams {
			ok, err := it.s.next()
			if err != nil {
				return false, err
			}
			if ok {
				it.t = it.s.time()
				m.h.Push(it)
			}
		}
	} else if m.cur != nil {
		ok, err := m.cur.s.next()
		if err != nil {
			return false, err
		}
		if ok {
			m.cur.n++
			m.cur.t = m.cur.s.time()
			m.h.FixTop()
		} else {
			m.h.Pop()
		}
	}
	if m.h.Len() == 0 {
		m.cur = nil
		return false, nil
	}
	m.cur = m.h.Top()
	return true, nil
}

func (m *merged) message() *dumpfile.Message { return m.cur.s.message() }

// verified says what reading source i found, for a pack file read to its
// end: "ok" when every frame's CRC, the index and the trailer checked out,
// else that the file is incomplete. "" for other sources (or before the
// end).
func (m *merged) verified(i int) string {
	if ips, ok := m.streams[i].s.(*indexedPackStream); ok {
		if ips.ended && ips.next_ >= len(ips.offs) {
			return "ok"
		}
		return ""
	}
	ps, ok := m.streams[i].s.(*packStream)
	if !ok || !ps.ended {
		return ""
	}
	if ps.indexed {
		return "ok"
	}
	if ps.truncated != "" {
		return "incomplete: " + ps.truncated + " (edr-lite recover salvages the whole frames)"
	}
	return "incomplete: no valid index and trailer after the last frame (cut short, or still being written; edr-lite recover rebuilds it)"
}

func (m *merged) close() {
	for _, it := range m.streams {
		it.s.close()
	}
}
