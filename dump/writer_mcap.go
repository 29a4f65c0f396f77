package dump

import (
	"fmt"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
)

// mcapDump writes one dump as MCAP through mcap's PackWriter, so a
// recorder with format = "mcap" produces files Foxglove and the ROS 2
// tooling open directly. The Dumper manages NAME.tmp and the rename; the
// writer writes the file in place.
type mcapDump struct {
	w     *mcap.PackWriter
	types typeTracker
	held  []byte // reserved data moved aside before a type change

	// fromRing: Borrow takes payloads in place in the rings (the write(2)
	// path, uncompressed: mcap.Writer.CanBorrow). refs are the open
	// chunk's borrowed messages, in chunk order; torn counts chunks
	// written again because a producer overwrote a borrowed payload
	// before its write was checked.
	fromRing bool
	minSize  uint64 // MCAPFromRingMin, or MCAPWriteTuning.FromRingMin
	refs     []ringRef
	torn     uint64

	// sealed: a chunk's hash runs on the seal's worker while the next is
	// built (mcap.Writer.WriteChunkLent), checked by its lender after.
	sealed  bool
	lenders [2]refLender
	lk      int
}

// NewMCAPWriter writes an MCAP dump (mcap.PackWriter, in place, with
// write(2): preallocated from the size hint, writeback started as it
// fills), its packed-struct topics transcoded to json for viewers
// (MCAPWriter(false)). Uncompressed, the payloads of MCAPFromRingMin bytes and
// more go to the file straight from the rings, as NewPackWriteWriter's
// do: each chunk is one writev of its records and the borrowed payloads,
// checked after the write and written again from copies, without the
// payloads a producer overwrote meanwhile, when one was (mcapDump.Borrow).
func NewMCAPWriter(path string, o WriterOptions) (Writer, error) {
	return newMCAPWriter(path, o, false, false)
}

// NewMCAPMmapWriter is NewMCAPWriter through mcap's mmap sink
// (mcap.FileOptions.Mmap): the slower path on the machines measured
// (docs/performance.md), kept as an option.
func NewMCAPMmapWriter(path string, o WriterOptions) (Writer, error) {
	return newMCAPWriter(path, o, false, true)
}

// NewMCAPCopyingWriter is NewMCAPWriter with every payload copied from the
// rings into the open chunk (the default before the payloads were written
// from the rings): kept to measure what that is worth (bench/,
// docs/performance.md).
func NewMCAPCopyingWriter(path string, o WriterOptions) (Writer, error) {
	return newMCAPWriterTuned(path, o, MCAPWriteTuning{Copying: true})
}

// MCAPWriteTuning varies NewMCAPWriter, to measure what its steps are worth
// (bench/, docs/performance.md). The zero value is NewMCAPWriter.
type MCAPWriteTuning struct {
	// Copying copies every payload into the open chunk.
	Copying bool
	// FromRingMin replaces MCAPFromRingMin when > 0.
	FromRingMin int
}

// NewMCAPWriterTuned is NewMCAPWriter varied by t.
func NewMCAPWriterTuned(t MCAPWriteTuning) NewWriterFunc {
	return func(path string, o WriterOptions) (Writer, error) { return newMCAPWriterTuned(path, o, t) }
}

func newMCAPWriterTuned(path string, o WriterOptions, t MCAPWriteTuning) (Writer, error) {
	w, err := newMCAPWriter(path, o, false, false)
	if md, ok := w.(*mcapDump); ok {
		md.fromRing = md.fromRing && !t.Copying
		md.minSize = fromRingMin(t.FromRingMin, MCAPFromRingMin)
	}
	return w, err
}

// MCAPWriter returns the NewWriterFunc of MCAP dumps; keepPacked writes
// packed-struct topics as they are (x-edr-packed with their layout)
// instead of transcoding them to json (mcap.Options.KeepPacked).
func MCAPWriter(keepPacked bool) NewWriterFunc {
	return func(path string, o WriterOptions) (Writer, error) { return newMCAPWriter(path, o, keepPacked, false) }
}

func newMCAPWriter(path string, o WriterOptions, keepPacked, mmap bool) (Writer, error) {
	fo := mcap.FileOptions{InPlace: true, Mmap: mmap, Prealloc: o.SizeHint}
	fo.KeepPacked = keepPacked
	fo.Library = o.WriterName
	fo.Seal = o.Seal
	fo.Compression = o.Compression
	if fo.Compression == "none" {
		fo.Compression = ""
	}
	if o.FrameSize > 0 {
		fo.ChunkSize = o.FrameSize
	}
	w, err := mcap.CreatePackWriter(path, fo)
	if err != nil {
		return nil, fmt.Errorf("mcap dump %s: %w", path, err)
	}
	return &mcapDump{w: w, types: newTypeTracker(), fromRing: !mmap && w.Writer().CanBorrow(), minSize: MCAPFromRingMin,
		sealed: o.Seal != nil}, nil
}

func (m *mcapDump) WriteMessage(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	if m.types.changed(t) { // a new channel from this message on (types.go)
		if err := m.w.DeclareTopic(mcap.Topic{Name: t.Name, Channel: t.Channel, Type: t.Type}); err != nil {
			return err
		}
	}
	return m.w.Add(t.Name, t.Channel, nil, genNs, captureNs, data)
}

// Reserve returns room for the next message's payload in the open chunk
// (mcap.PackWriter.Reserve), so the dumper copies it there straight from
// the ring.
func (m *mcapDump) Reserve(n int) []byte { return m.w.Reserve(n) }

// Commit adds the payload last reserved as one message, in place. A type
// change declares the topic's new channel first, which may reuse the
// reserved bytes: the payload is moved aside before it.
func (m *mcapDump) Commit(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	if m.types.changed(t) {
		m.held = append(m.held[:0], data...)
		data = m.held
		if err := m.w.DeclareTopic(mcap.Topic{Name: t.Name, Channel: t.Channel, Type: t.Type}); err != nil {
			return err
		}
	}
	return m.w.Add(t.Name, t.Channel, nil, genNs, captureNs, data)
}

// borrowing reports whether Borrow is to be used: the payloads of an
// uncompressed dump through write(2) go to the file from the rings.
func (m *mcapDump) borrowing() bool { return m.fromRing }

// Borrow adds the message s peeked (s.e) and consumes it, as the pack
// writer's Borrow does: a payload of MCAPFromRingMin bytes and more of a topic
// written as it is (not transcoded) is borrowed where it lies in the ring
// and goes to the file from there, in the writev of its chunk; the chunk
// is checked after that write (WindowCursor.Intact) and its messages
// accounted, or, when a producer overwrote a borrowed payload first, taken
// back and written again without it (mcap.Writer.TakeBackChunk), the
// overwritten messages counted lost as a torn copy is. Other payloads are
// copied into the open chunk and accounted at once.
func (m *mcapDump) Borrow(s *source, t *ingest.TopicInfo) error {
	e := s.e
	if m.types.changed(t) {
		if err := m.w.DeclareTopic(mcap.Topic{Name: t.Name, Channel: t.Channel, Type: t.Type}); err != nil {
			return err
		}
	}
	lend := false
	if e.Size >= m.minSize {
		var err error
		if lend, err = m.w.Borrows(t.Name, t.Channel); err != nil {
			return err
		}
	}
	if lend {
		data, at := s.c.Borrow(e)
		m.refs = append(m.refs, ringRef{s: s, e: e, msg: len(m.refs), at: at})
		if err := m.w.AddBorrowed(t.Name, t.Channel, e.GenNs, e.CaptureNs, data); err != nil {
			return err
		}
	} else {
		data := m.w.Reserve(int(e.Size))
		if !s.c.Copy(e, data) {
			return nil // torn while copied: the next Peek counts it lost
		}
		if err := m.w.Add(t.Name, t.Channel, nil, e.GenNs, e.CaptureNs, data); err != nil {
			return err
		}
		s.wrote(&e)
	}
	if len(m.refs) > 0 && m.w.Writer().ChunkFull() {
		return m.Flush()
	}
	return nil
}

func (m *mcapDump) rewritten() uint64 { return m.torn }

// Flush writes the open chunk when it borrows payloads (writeChecked), so
// every message Borrow took is accounted, or counted lost, before the
// dump's figures are taken. A chunk of copies only is left to Close.
func (m *mcapDump) Flush() error {
	if len(m.refs) == 0 {
		return nil
	}
	mw := m.w.Writer()
	var err error
	if m.sealed {
		// hashed on the seal's worker once kept, while the next chunk is
		// built; the worker checks the payloads again after it
		m.lk ^= 1
		l := &m.lenders[m.lk]
		l.refs = append(l.refs[:0], m.refs...)
		err = mw.WriteChunkLent(l)
	} else {
		err = mw.WriteChunkProvisional()
	}
	if err != nil {
		return err
	}
	if afterProvisionalWrite != nil {
		afterProvisionalWrite()
	}
	intact := true
	for i := range m.refs {
		if r := &m.refs[i]; !r.s.c.Intact(r.at) {
			intact = false
			break
		}
	}
	if intact {
		mw.KeepChunk()
		for i := range m.refs {
			m.refs[i].s.wrote(&m.refs[i].e)
		}
	} else {
		m.torn++
		err := mw.TakeBackChunk(func(i int) bool {
			r := &m.refs[i]
			if !r.s.c.Intact(r.at) {
				r.s.c.Overwritten(1)
				return false
			}
			r.s.wrote(&r.e)
			return true
		})
		if err != nil {
			return err
		}
	}
	clear(m.refs)
	m.refs = m.refs[:0]
	return nil
}

func (m *mcapDump) SetInfo(info dumpinfo.Info) error { return m.w.SetDumpInfo(info) }
func (m *mcapDump) Close() error                     { return m.w.Close() }
func (m *mcapDump) Abort() error                     { return m.w.Abort() }
