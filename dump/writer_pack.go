package dump

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// Writer writes one dump file. The Dumper calls it from its goroutine
// only: messages in time order, then SetInfo, then Close (or Abort after a
// failure). It is the pipeline's only contact with a file format.
type Writer interface {
	// WriteMessage appends one message of topic (the topic's info), with
	// its producer and capture times. data is not retained.
	WriteMessage(topic *ingest.TopicInfo, genNs, captureNs int64, data []byte) error
	// SetInfo records what makes the dump self-describing.
	SetInfo(info dumpinfo.Info) error
	// Close completes the file and makes it durable (fsync).
	Close() error
	// Abort releases resources after a failure; the caller removes the file.
	Abort() error
}

// reserver is implemented by Writers that let the dumper copy a
// payload straight into the file's next frame: Reserve returns n writable
// bytes, Commit adds them (the slice Reserve returned) as one message. A
// reservation not committed is reused by the next Reserve.
type reserver interface {
	Reserve(n int) []byte
	Commit(topic *ingest.TopicInfo, genNs, captureNs int64, data []byte) error
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	Compression string // "none", "lz4", "zstd"
	FrameSize   int    // data bytes per frame
	// FrameSpan is the time a pack frame may span (capture times): a
	// message FrameSpan or more after the frame's first starts the next;
	// <= 0: frames bounded by FrameSize only. MCAP chunks ignore it.
	FrameSpan  time.Duration
	WriterName string
	CreatedNs  int64
	// SizeHint is an upper bound of the file size (0 = unknown); the pack
	// writer preallocates and maps no more than this.
	SizeHint int64
	// Seal, when set, seals the file as it is written (the format's
	// writer hashes every byte; pack.WriterOptions.Seal,
	// mcap.Options.Seal). The Dumper sets it when Config.Signer is.
	Seal *evidence.Sealer
}

// NewWriterFunc creates the file at path and returns its writer.
type NewWriterFunc func(path string, opts WriterOptions) (Writer, error)

// packWriter writes a pack file (mmap writer, write(2) path, or stream
// writer over a preallocated file), one FreeSync frame per
// FrameSize bytes of data. Message gen_ts is the producer time, done_ts the
// capture time; the frame time is its first capture time.
type packWriter struct {
	w       *pack.Writer
	scratch []byte // payloads the pending frame borrows (Reserve/Commit)
	// spare is the scratch of the frame written last: with pack's
	// AsyncWrite its writev may still be reading it, until the next frame
	// is written (the two alternate).
	spare []byte
	err   error    // sticky error of a frame written by Reserve
	file  *os.File // stream mode: the file, synced and closed by Close
	f     *pack.Frame
	size  int
	span  int64 // WriterOptions.FrameSpan in ns; 0: none
	frame uint64
	types typeTracker

	// fromRing: Borrow takes payloads in place in the rings
	// (NewPackWriteWriter, unless PackWriteTuning.Copying or Async). refs
	// are the pending frame's borrowed messages, in frame order; data the
	// frame's data bytes; torn counts frames written again because a
	// producer overwrote a borrowed payload before its write was checked.
	fromRing bool
	minSize  uint64 // FromRingMin, or PackWriteTuning.FromRingMin
	refs     []ringRef
	data     int
	torn     uint64
	safe     []byte      // the safe copies of a torn frame's payloads
	rebuilt  *pack.Frame // a torn frame without its overwritten messages

	// sealed: the frames' hash runs on the seal's worker while the next
	// frame is built (pack.Writer.WriteFrameLent); lenders are the last
	// two frames' borrowed messages, which it checks after hashing them.
	sealed  bool
	lenders [2]refLender
	lk      int
}

// refLender is a written frame's borrowed messages, for the seal's worker
// (evidence.Lender): whether they were still intact when it had hashed
// them.
type refLender struct{ refs []ringRef }

func (l *refLender) Intact() bool {
	for i := range l.refs {
		if r := &l.refs[i]; !r.s.c.Intact(r.at) {
			return false
		}
	}
	return true
}

// ringRef is a message of the pending frame whose payload it borrows from
// a ring: accounted (source.wrote) once its frame is written intact, or
// counted lost when a producer overwrote the payload first.
type ringRef struct {
	s   *source
	e   engine.Entry
	msg int            // its index in the frame
	at  engine.RingPos // where it lies in the ring
}

// NewPackMmapWriter writes a pack dump with pack's mmap writer (Create).
func NewPackMmapWriter(path string, opts WriterOptions) (Writer, error) {
	return openPackWriter(path, opts, false)
}

// NewPackStreamWriter writes a pack dump through pack's stream writer into a file
// preallocated (fallocate, keeping its size) from the size hint, then fsyncs.
func NewPackStreamWriter(path string, opts WriterOptions) (Writer, error) {
	return openPackWriter(path, opts, true)
}

// NewPackWriteWriter writes a pack dump with pack's write(2) path (Create's
// default): the file is preallocated from the size hint at the first
// write, writeback starts every 8 MiB (sync_file_range) so the closing fsync
// finds little left, and Close trims the preallocation and fsyncs. Each
// frame of large messages goes to the kernel as one writev straight from
// the rings: payloads of FromRingMin bytes and more are not copied but
// borrowed where they lie in their ring; the frame's CRC is computed over
// those bytes and its writev reads them; only then is it checked that no
// producer overwrote any of them meanwhile (the ring's tail, as a reader
// validates a copy). When one was, the frame is taken back (the file cut
// back to its start: pack.Writer.TakeBackFrame) and written again from a
// copy of its payloads still intact, without the overwritten ones, which
// are counted lost as a copy a producer tore is. Smaller payloads are
// copied into a scratch the frame borrows. Where that path is not
// supported (not Linux) it is NewPackStreamWriter.
func NewPackWriteWriter(path string, opts WriterOptions) (Writer, error) {
	return newPackWriteWriter(path, opts, PackWriteTuning{})
}

// PackWriteTuning varies NewPackWriteWriter, to measure what each of its
// steps is worth (bench/, docs/performance.md). The zero value is
// NewPackWriteWriter.
type PackWriteTuning struct {
	// Async hands each frame's writev to the file's writer thread at a
	// lower I/O priority (pack.WriterOptions.AsyncWrite) while the dumper
	// copies the next frame out of the rings. Measured slower on the
	// project's 2-vCPU VM (docs/performance.md), so not the default.
	Async bool
	// MaxInFlight bounds the bytes whose writeback may be running
	// (pack.WriterOptions.MaxInFlight).
	MaxInFlight int64
	// Copying copies every payload out of the rings into a scratch the
	// frame borrows (the default before the payloads were written
	// straight from the rings; measured slower, docs/performance.md).
	// Async implies it (the check of a borrowed payload needs its write
	// done).
	Copying bool
	// FromRingMin replaces the const FromRingMin when > 0 (bench's
	// BenchmarkFromRingSizes).
	FromRingMin int
}

// fromRingMin is tuned when it is positive, else def.
func fromRingMin(tuned int, def uint64) uint64 {
	if tuned > 0 {
		return uint64(tuned)
	}
	return def
}

// FromRingMin is the payload size from which NewPackWriteWriter borrows a
// payload in place in its ring; smaller ones are copied. Borrowing was
// measured faster at every size from 64 B (docs/performance.md, Dump
// write: 1.05x at 64 B, 1.16x at 256 B, 1.24x at 4 KiB, per dump on
// tmpfs); the bound keeps the tiniest, where it saves least, exposed to
// producers only while copied rather than until their frame is written.
const FromRingMin = 256

// MCAPFromRingMin is the payload size from which NewMCAPWriter borrows a
// payload in place in its ring. Higher than FromRingMin: in an MCAP chunk
// each payload follows its Message header, so a borrowed one adds two
// pieces to the chunk's writev, and below 8 KiB that cost more in the
// kernel than the copy saves (docs/performance.md, Dump write: borrowing
// 0.49x as fast at 64 B, 0.95-1.0x at 4-8 KiB, 1.08x at 16 KiB, 1.06-1.17x
// at 64 KiB).
const MCAPFromRingMin = 16 << 10

// NewPackWriteWriterTuned is NewPackWriteWriter varied by t.
func NewPackWriteWriterTuned(t PackWriteTuning) NewWriterFunc {
	return func(path string, opts WriterOptions) (Writer, error) { return newPackWriteWriter(path, opts, t) }
}

func newPackWriteWriter(path string, opts WriterOptions, t PackWriteTuning) (Writer, error) {
	po := packOptions(opts) // Create's default is the write(2) path
	po.Prealloc = opts.SizeHint
	po.AsyncWrite = t.Async // packWriter keeps a written frame's scratch (spare)
	po.MaxInFlight = t.MaxInFlight
	w, err := pack.Create(path, po)
	if errors.Is(err, pack.ErrNotSupported) {
		return openPackWriter(path, opts, true)
	}
	if err != nil {
		return nil, fmt.Errorf("dump: creating %s: %w", path, err)
	}
	return &packWriter{w: w, f: pack.NewFrame(0, 0), size: opts.FrameSize, span: spanOf(opts), types: newTypeTracker(),
		fromRing: !t.Copying && !t.Async, minSize: fromRingMin(t.FromRingMin, FromRingMin), sealed: opts.Seal != nil}, nil
}

// packOptions are the pack writer options for opts.
func packOptions(opts WriterOptions) pack.WriterOptions {
	var c pack.Compression
	switch opts.Compression {
	case "lz4":
		c = pack.CompressLZ4
	case "zstd":
		c = pack.CompressZstd
	}
	// HashBehind: packWriter's frames alternate between two scratches
	// (flushFrame), and borrowed ones are lent (writeChecked).
	return pack.WriterOptions{Writer: opts.WriterName, CreatedNs: opts.CreatedNs, Compression: c, Seal: opts.Seal,
		HashBehind: opts.Seal != nil}
}

func openPackWriter(path string, opts WriterOptions, stream bool) (Writer, error) {
	po := packOptions(opts)
	if stream {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("dump: creating %s: %w", path, err)
		}
		if err := preallocate(f, opts.SizeHint); err != nil {
			f.Close()
			return nil, fmt.Errorf("dump: preallocating %s: %w", path, err)
		}
		w, err := pack.NewStreamWriter(f, po)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("dump: creating %s: %w", path, err)
		}
		return &packWriter{w: w, file: f, f: pack.NewFrame(0, 0), size: opts.FrameSize, span: spanOf(opts), types: newTypeTracker()}, nil
	}
	po.Mmap = true
	if h := opts.SizeHint; h > 0 && h < 64<<20 {
		// Map and preallocate about what the dump needs, not 64 MiB.
		po.Window = int(h) + opts.FrameSize
	}
	w, err := pack.Create(path, po)
	if err != nil {
		return nil, fmt.Errorf("dump: creating %s: %w", path, err)
	}
	return &packWriter{w: w, f: pack.NewFrame(0, 0), size: opts.FrameSize, span: spanOf(opts), types: newTypeTracker()}, nil
}

// spanOf is opts.FrameSpan in ns, 0 when frames have no time bound.
func spanOf(opts WriterOptions) int64 { return max(int64(opts.FrameSpan), 0) }

// spanOver reports whether a message captured at captureNs starts a new
// frame by time: FrameSpan or more after the pending frame's first.
func (p *packWriter) spanOver(captureNs int64) bool {
	return p.span > 0 && p.f.Len() > 0 && captureNs-p.f.Time() >= p.span
}

func (p *packWriter) WriteMessage(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	buf := p.Reserve(len(data))
	copy(buf, data)
	return p.Commit(t, genNs, captureNs, buf)
}

func (p *packWriter) flushFrame() error {
	if p.err != nil {
		return p.err
	}
	if p.f.Len() == 0 {
		return nil
	}
	var err error
	if len(p.refs) > 0 {
		err = p.writeChecked()
	} else {
		err = p.w.WriteFrame(p.f)
		p.frame++
	}
	p.data = 0
	p.f.Reset(p.frame, 0)
	// The frame no longer borrows its scratch, but its write may still be
	// reading it (AsyncWrite): the frame before it is done, so its scratch
	// is the next one's.
	p.scratch, p.spare = p.spare[:0], p.scratch
	if err != nil {
		p.err = err
	}
	return err
}

// Reserve returns n bytes at the end of the scratch the pending frame
// borrows from, writing that frame first when the scratch is full.
func (p *packWriter) Reserve(n int) []byte {
	if cap(p.scratch)-len(p.scratch) < n {
		p.flushFrame() // sticky error, returned by Commit
		if cap(p.scratch) < n {
			p.scratch = make([]byte, 0, max(n, 2*p.size))
		}
	}
	return p.scratch[len(p.scratch) : len(p.scratch)+n]
}

// Commit adds the payload last reserved as one message, without copying.
// The topic's type is recorded (a pack type section) before its first
// message and before the first message of another type, after the frames
// that hold the topic's earlier messages, so the section precedes exactly
// the messages it types.
func (p *packWriter) Commit(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	if p.err != nil {
		return p.err
	}
	if p.spanOver(captureNs) {
		// The payload was reserved at the end of the scratch the pending
		// frame borrows: once that frame is written (its scratch set
		// aside, nothing past the frame's bytes read), it moves to the
		// start of the next scratch.
		reserved := data
		if err := p.flushFrame(); err != nil {
			return err
		}
		data = p.Reserve(len(reserved))
		copy(data, reserved)
	}
	if p.types.changed(t) {
		var err error
		if data, err = p.setType(t, captureNs, data); err != nil {
			return err
		}
	}
	return p.add(t, genNs, captureNs, data)
}

// add appends data, reserved in the scratch, to the pending frame as one
// message (its type recorded), writing the frame when it is full.
func (p *packWriter) add(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	p.scratch = p.scratch[:len(p.scratch)+len(data)]
	if p.f.Len() == 0 {
		p.f.Reset(p.frame, captureNs)
		p.f.SetType(pack.FreeSync)
	}
	p.f.AddMetaBorrowed(t.Name, t.Channel, nil, genNs, captureNs, data)
	p.f.SetDoneTime(captureNs)
	if p.data += len(data); p.data >= p.size {
		return p.flushFrame()
	}
	return nil
}

// borrowing reports whether Borrow is to be used (NewPackWriteWriter's
// default).
func (p *packWriter) borrowing() bool { return p.fromRing }

// Borrow adds the message s peeked (s.e) and consumes it: a payload of
// FromRingMin bytes and more is borrowed where it lies in the ring, a
// smaller one copied into the scratch (dropped, and counted lost by the
// next Peek, when a producer tore the copy). A copied message is
// accounted in s (source.wrote) at once, a borrowed one once its frame is
// written intact; a borrowed payload a producer overwrote before that is
// counted lost instead (WindowCursor.Overwritten), as a torn copy is.
// Flush writes the pending frame.
func (p *packWriter) Borrow(s *source, t *ingest.TopicInfo) error {
	if p.err != nil {
		return p.err
	}
	e := s.e
	if p.spanOver(e.CaptureNs) {
		if err := p.flushFrame(); err != nil {
			return err
		}
	}
	if e.Size < p.minSize {
		data := p.Reserve(int(e.Size))
		if !s.c.Copy(e, data) {
			return nil
		}
		if p.types.changed(t) {
			var err error
			if data, err = p.setType(t, e.CaptureNs, data); err != nil {
				return err
			}
		}
		if err := p.add(t, e.GenNs, e.CaptureNs, data); err != nil {
			return err
		}
		s.wrote(&e) // copied intact: in the file whatever befalls its frame's borrowed ones
		return nil
	}
	if p.types.changed(t) {
		if p.f.HasTopic(t.Name, t.Channel) {
			if err := p.flushFrame(); err != nil {
				return err
			}
		}
		if err := p.w.SetTopicType(t.Name, t.Channel, t.Type, e.CaptureNs); err != nil {
			p.err = err
			return err
		}
	}
	data, at := s.c.Borrow(e)
	p.refs = append(p.refs, ringRef{s: s, e: e, msg: p.f.Len(), at: at})
	if p.f.Len() == 0 {
		p.f.Reset(p.frame, e.CaptureNs)
		p.f.SetType(pack.FreeSync)
	}
	p.f.AddMetaBorrowed(t.Name, t.Channel, nil, e.GenNs, e.CaptureNs, data)
	p.f.SetDoneTime(e.CaptureNs)
	if p.data += len(data); p.data >= p.size {
		return p.flushFrame()
	}
	return nil
}

func (p *packWriter) rewritten() uint64 { return p.torn }

// Flush writes the pending frame, so that every message Borrow took is
// accounted (or counted lost) before the dump's figures are taken.
func (p *packWriter) Flush() error { return p.flushFrame() }

// writeChecked writes the pending frame, which borrows payloads from the
// rings, provisionally; then checks that no producer overwrote a borrowed
// payload before the write returned (the kernel's copy done): if none
// was, the frame is kept and its messages accounted; else it is taken
// back and written again without the overwritten ones (rewrite).
func (p *packWriter) writeChecked() error {
	var err error
	if p.sealed {
		// hashed on the seal's worker once kept, while the next frame is
		// built; the worker checks the payloads again after it
		p.lk ^= 1
		l := &p.lenders[p.lk]
		l.refs = append(l.refs[:0], p.refs...)
		err = p.w.WriteFrameLent(p.f, l)
	} else {
		err = p.w.WriteFrameProvisional(p.f)
	}
	if err != nil {
		return err
	}
	if afterProvisionalWrite != nil {
		afterProvisionalWrite()
	}
	for i := range p.refs {
		if r := &p.refs[i]; !r.s.c.Intact(r.at) {
			if err := p.w.TakeBackFrame(); err != nil {
				return err
			}
			return p.rewrite()
		}
	}
	p.w.KeepFrame()
	p.frame++
	p.wroteRefs()
	return nil
}

// afterProvisionalWrite, when set (tests, before the dumper starts), runs
// between a borrowing frame's write and its check: a producer overwriting
// the ring there tears the frame deterministically.
var afterProvisionalWrite func()

// wroteRefs accounts the pending frame's borrowed messages, written
// intact.
func (p *packWriter) wroteRefs() {
	for i := range p.refs {
		p.refs[i].s.wrote(&p.refs[i].e)
	}
	clear(p.refs)
	p.refs = p.refs[:0]
}

// rewrite writes the pending frame again after a producer overwrote one of
// its borrowed payloads (the first write taken back): every borrowed
// payload is copied, then checked as a reader checks a copy; the ones
// overwritten are left out and counted lost, the others written from
// their copies with the frame's other messages. Rare: it may allocate.
func (p *packWriter) rewrite() error {
	p.torn++
	f := p.f
	if p.rebuilt == nil {
		p.rebuilt = pack.NewFrame(0, 0)
	}
	p.safe = p.safe[:0]
	for i := range p.refs {
		p.safe = append(p.safe, f.Data(p.refs[i].msg)...)
	}
	nf := p.rebuilt
	nf.Reset(p.frame, 0)
	nf.SetType(pack.FreeSync)
	off, ri := 0, 0
	for i := range f.Len() {
		m := f.Message(i)
		data := f.Data(i)
		var r *ringRef
		if ri < len(p.refs) && p.refs[ri].msg == i {
			r = &p.refs[ri]
			ri++
		}
		if r != nil {
			data = p.safe[off : off+len(data) : off+len(data)]
			off += len(data)
			if !r.s.c.Intact(r.at) {
				r.s.c.Overwritten(1)
				continue
			}
			r.s.wrote(&r.e)
		}
		if nf.Len() == 0 {
			nf.SetTime(m.DoneTs)
		}
		nf.AddMetaBorrowed(m.Name, m.Channel, nil, m.GenTs, m.DoneTs, data)
		nf.SetDoneTime(m.DoneTs)
	}
	clear(p.refs)
	p.refs = p.refs[:0]
	if nf.Len() == 0 {
		return nil
	}
	err := p.w.WriteFrame(nf)
	p.frame++
	nf.Reset(0, 0)
	return err
}

// setType writes t's type section, first the pending frame when it holds
// messages of the topic (a type change: a topic's first type does not cut
// the frame), and returns where the reserved payload data now is: it lies
// in the scratch the pending frame borrows, and moves to the start of the
// scratch once that frame is written.
func (p *packWriter) setType(t *ingest.TopicInfo, captureNs int64, data []byte) ([]byte, error) {
	if p.f.HasTopic(t.Name, t.Channel) {
		held := append([]byte(nil), data...) // rare: a type change mid-dump
		if err := p.flushFrame(); err != nil {
			return nil, err
		}
		if cap(p.scratch) < len(held) {
			p.scratch = make([]byte, 0, max(len(held), 2*p.size))
		}
		data = p.scratch[:len(held)]
		copy(data, held)
	}
	if err := p.w.SetTopicType(t.Name, t.Channel, t.Type, captureNs); err != nil {
		p.err = err
		return nil, err
	}
	return data, nil
}

func (p *packWriter) SetInfo(info dumpinfo.Info) error { return p.w.SetDumpInfo(info) }

func (p *packWriter) Close() error {
	err := p.flushFrame()
	if cerr := p.w.Close(); err == nil {
		err = cerr
	}
	if p.file != nil {
		if err == nil {
			// Give back the preallocation past the end (KEEP_SIZE kept
			// the size; the estimate is an upper bound).
			err = p.file.Truncate(p.w.Offset())
		}
		if err == nil {
			err = p.file.Sync()
		}
		if cerr := p.file.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (p *packWriter) Abort() error {
	p.w.Close() // returns the writer's first error; the file is removed by the caller
	if p.file != nil {
		return p.file.Close()
	}
	return nil
}
