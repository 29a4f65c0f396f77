package pack

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// DefaultTargetFrameSize is WriterOptions.TargetFrameSize when it is 0,
// and DefaultTargetFrameSpan WriterOptions.TargetFrameSpan: the recorder's
// defaults (internal/defaults; docs/pack.md, "Frame bounds").
const (
	DefaultTargetFrameSize = defaults.FrameSize
	DefaultTargetFrameSpan = defaults.FrameSpan
)

// WriterOptions configure a Writer. The zero value is valid: no
// compression, default windows, the current time in the header.
type WriterOptions struct {
	// Writer names the producing program in the file header (at most
	// WriterNameSize bytes are kept).
	Writer string
	// CreatedNs is the creation time in the file header, ns since the UNIX
	// epoch; 0 means time.Now().
	CreatedNs int64
	// Compression is the codec tried on each frame's data section. A frame
	// whose data does not shrink is stored uncompressed.
	Compression Compression
	// TargetFrameSize is the data size at which Add closes its pending frame;
	// 0 means DefaultTargetFrameSize.
	TargetFrameSize int
	// TargetFrameSpan is the time a frame of Add's may span: a message
	// whose time (MessageTime) is TargetFrameSpan or more after the
	// pending frame's first message's starts a new frame. 0 means
	// DefaultTargetFrameSpan; negative: frames are bounded by size only.
	TargetFrameSpan time.Duration

	// Window (with Mmap) is the size of the mmap writer's mapping window (rounded up to
	// the page size); 0 means 256 MiB (16 MiB on 32-bit platforms). A frame
	// larger than the window gets a window of its own size.
	Window int
	// Prealloc is the step in which Create fallocates ahead; 0 means
	// 64 MiB (with Mmap: or Window when smaller). Near a full disk it falls back to
	// allocating exactly what a frame needs.
	Prealloc int64
	// MaxInFlight (write(2) path) bounds the written bytes whose writeback
	// may still be running: past it a write waits for the oldest chunk's
	// (durable.Options.MaxInFlight). 0: no bound.
	MaxInFlight int64
	// AsyncWrite (write(2) path) hands each large uncompressed frame's
	// writev to a writer thread of the file's own, at a lower I/O priority
	// (durable.Options.Async), and returns: the caller builds the next
	// frame while the kernel copies this one. The data blocks of a frame
	// so written must stay unchanged until the next WriteFrame, Flush or
	// Close returns (one frame in flight).
	AsyncWrite bool
	// NoPrefault disables the mmap writer's populating each window before it is written
	// (MADV_POPULATE_WRITE). For benchmarks.
	NoPrefault bool
	// NoBackgroundPrefault makes the mmap writer populate its window on the
	// writing goroutine instead of a helper goroutine. For benchmarks.
	NoBackgroundPrefault bool
	// NoHugePages disables asking for huge folios (MADV_HUGEPAGE) on the
	// mmap writer's windows. For benchmarks.
	NoHugePages bool
	// NoAsyncWriteback disables the mmap writer's starting writeback
	// (sync_file_range) every few MiB written. For benchmarks.
	NoAsyncWriteback bool
	// Mmap makes Create write through a shared mmap window instead of
	// write(2). Same bytes, same durability; on the machines measured so far
	// it is the slower path (the kernel zero-fills every page-cache page a
	// mapping faults in before the copy; see the package doc's figures).
	Mmap bool
	// Seal, when set, seals the file (seal.go, FORMAT.md "Seal section"):
	// every byte written is hashed as it is written, and Close writes the
	// signed seal before the index. Its format must be evidence.FormatPack.
	Seal *evidence.Sealer
	// HashBehind (with Seal) lets a frame's hash run on the Sealer's worker
	// while the next frame is built and written: the caller keeps each
	// frame's data blocks unchanged until the next WriteFrame, Flush or
	// Close returns (its frames alternate between two buffers, as
	// AsyncWrite asks). Without it the hash of a frame is done before
	// WriteFrame returns.
	HashBehind bool
	// FinalMetadata are metadata blobs Close writes, replacing any added
	// under the same names (a stamp's provenance: seal.go).
	FinalMetadata map[string][]byte
}

// sink is where a Writer puts records: an mmap window or a stream buffer.
type sink interface {
	// reserve returns n writable bytes at the current end of the file.
	reserve(n int) ([]byte, error)
	// commit appends the n bytes last reserved.
	commit(n int) error
	// flush makes committed bytes durable (mmap) or hands them to the
	// underlying writer (stream).
	flush() error
	// finish completes the file at size bytes and releases resources.
	finish(size int64) error
	// abort releases resources after a failure.
	abort() error
}

type topicStat struct {
	name, channel string
	messages      uint64
	bytes         uint64
	firstNs       int64
	lastNs        int64
}

type indexEntry struct {
	off    int64
	timeNs int64
	endNs  int64
}

type namedBlob struct {
	name string
	data []byte
}

// Writer writes a pack file: header, frames, metadata sections, index and
// trailer. Create makes one over an mmap'd file, NewStreamWriter over any
// io.Writer; both produce the same bytes for the same calls and options.
//
// A Writer is not safe for concurrent use. After an error every later call
// returns that error; Close still releases resources.
type Writer struct {
	opts WriterOptions
	sink sink
	path string
	off  int64 // bytes committed
	err  error

	meta  []byte // encoded meta scratch
	head  []byte // record head scratch (vecSink path)
	raw   []byte // concatenated data scratch (compression)
	comp  []byte // compressed scratch
	codec *codecs

	acct     accounting
	metadata []namedBlob
	mdIdx    map[string]int // metadata by name
	pending  *Frame         // Add's frame
	nextID   uint64
	closed   bool
	// pendingFirst is the time (MessageTime) of the pending frame's first
	// message, for TargetFrameSpan.
	pendingFirst int64

	types   map[topicKey]ingest.ContentID // each topic's current type (SetTopicType)
	bodies  map[ingest.ContentID]bool     // types whose body is in the file
	typeBuf []byte
	// pendingTopics indexes the topics of the pending frame's messages
	// [0, pendingIndexed) for SetTopicType, extended at each call and
	// cleared with the frame, so setting the types of n topics costs O(n)
	// in all instead of a scan of the frame each (50 000 topics: seconds).
	pendingTopics  map[topicKey]struct{}
	pendingIndexed int

	// provisional: WriteFrameProvisional's frame, written but not yet in
	// the index (held until KeepFrame or TakeBackFrame).
	provisional bool
	held        heldFrame
}

// heldFrame is a provisionally written frame: what KeepFrame adds to the
// index, and where TakeBackFrame puts the file back to.
type heldFrame struct {
	f     *Frame
	off   int64
	h     frameHeader
	table []byte // the frame's block table (a copy)
	ok    bool
}

func newWriter(s sink, path string, opts WriterOptions) (*Writer, error) {
	if opts.Compression > CompressZstd {
		_ = s.abort()
		return nil, fmt.Errorf("%w: %d", ErrUnsupportedCodec, opts.Compression)
	}
	if opts.CreatedNs == 0 {
		opts.CreatedNs = time.Now().UnixNano()
	}
	if opts.TargetFrameSize <= 0 {
		opts.TargetFrameSize = DefaultTargetFrameSize
	}
	if opts.Seal != nil {
		if opts.Seal.Format() != evidence.FormatPack {
			_ = s.abort()
			return nil, fmt.Errorf("BUG: pack: a sealer of %s files", opts.Seal.Format())
		}
		s = hashing(s, opts.Seal.Hasher, opts.HashBehind || opts.AsyncWrite)
	}
	if opts.TargetFrameSpan == 0 {
		opts.TargetFrameSpan = DefaultTargetFrameSpan
	}
	w := &Writer{opts: opts, sink: s, path: path, acct: newAccounting(), codec: newCodecs()}
	b, err := s.reserve(HeaderSize)
	if err == nil {
		putFileHeader(b, FileHeader{Major: FormatMajor, Minor: FormatMinor,
			CreatedNs: opts.CreatedNs, Writer: opts.Writer})
		err = s.commit(HeaderSize)
	}
	if err != nil {
		return nil, errors.Join(err, s.abort())
	}
	w.off = HeaderSize
	return w, nil
}

// NewStreamWriter returns a Writer that streams the file to w (a pipe,
// stdout, a socket, a file). Bytes are buffered; Flush hands them to w.
// Close writes the index and trailer and flushes but does not close w.
func NewStreamWriter(w io.Writer, opts WriterOptions) (*Writer, error) {
	return newWriter(&streamSink{w: w}, "", opts)
}

// Offset returns the number of bytes written so far (the offset at which the
// next frame will start).
func (w *Writer) Offset() int64 { return w.off }

// Frames returns how many frames have been written.
func (w *Writer) Frames() int { return len(w.acct.entries) }

// WriteFrame appends f as one frame. The frame's data section is compressed
// per WriterOptions.Compression. f is not retained: borrowed slices may be
// reused once WriteFrame returns. Steady state does not allocate.
func (w *Writer) WriteFrame(f *Frame) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	if w.pending != nil && w.pending.Len() > 0 {
		if err := w.writePending(); err != nil {
			return err
		}
	}
	return w.writeFrame(f)
}

func (w *Writer) writeFrame(f *Frame) error {
	w.meta = f.AppendMeta(w.meta[:0])
	raw := 0
	for _, b := range f.blocks {
		raw += len(b)
	}
	nb := len(f.blocks)
	if len(w.meta) > MaxFrameSize || raw > MaxFrameSize || nb > MaxFrameSize/BlockLenSize {
		return fmt.Errorf("%w: meta %d, data %d bytes, %d blocks", ErrFrameTooLarge, len(w.meta), raw, nb)
	}
	h := frameHeader{metaLen: uint32(len(w.meta)), nblocks: uint32(nb), rawLen: uint32(raw),
		stored: uint32(raw), codec: CompressNone, timeNs: f.timeNs, endNs: max(f.timeNs, f.doneNs)}
	var stored []byte
	if w.opts.Compression != CompressNone && raw > 0 {
		w.raw = w.raw[:0]
		for _, b := range f.blocks {
			w.raw = append(w.raw, b...)
		}
		var err error
		w.comp, err = w.codec.compress(w.opts.Compression, w.comp[:0], w.raw)
		if err != nil {
			return w.fail(err)
		}
		if len(w.comp) > 0 && len(w.comp) < raw {
			stored = w.comp
			h.codec = w.opts.Compression
			h.stored = uint32(len(stored))
		}
	}
	rec := int64(FrameHeaderSize) + int64(len(w.meta)) + int64(nb)*BlockLenSize + int64(h.stored)
	if rec > MaxFrameSize {
		return fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, rec)
	}
	if frameNeeds(&h, rec, len(f.msgs)) > writeLimit {
		// One set of limits: what a reader with default options refuses
		// is never written (FORMAT.md, "Integrity and recovery").
		return tooLargeError(&h, rec, len(f.msgs))
	}
	if vs, ok := w.sink.(vecSink); ok && stored == nil && raw >= vecMinData {
		return w.writeFrameVec(vs, f, &h, rec)
	}
	dst, err := w.sink.reserve(int(rec))
	if err != nil {
		return w.fail(err)
	}
	p := FrameHeaderSize
	p += copy(dst[p:], w.meta)
	for _, b := range f.blocks {
		le.PutUint32(dst[p:], uint32(len(b)))
		p += BlockLenSize
	}
	dataStart := p
	if stored != nil {
		p += copy(dst[p:], stored)
	} else {
		for _, b := range f.blocks {
			p += copy(dst[p:], b)
		}
	}
	h.dataCRC = crc(dst[dataStart:p])
	putFrameHeader(dst, &h)
	le.PutUint32(dst[4:], crc(dst[8:dataStart]))
	w.account(f, &h, dst[FrameHeaderSize+len(w.meta):dataStart])
	if err := w.sink.commit(int(rec)); err != nil {
		return w.fail(err)
	}
	w.off += rec
	return nil
}

// vecMinData is the uncompressed data size from which a frame goes to a
// vecSink as head plus the caller's blocks instead of being assembled.
const vecMinData = 64 << 10

// writeFrameVec writes an uncompressed frame as its head (header, meta,
// block table) followed by f's data blocks in place: the data is copied
// once, by the kernel, instead of into the record first.
func (w *Writer) writeFrameVec(vs vecSink, f *Frame, h *frameHeader, rec int64) error {
	dataStart := FrameHeaderSize + len(w.meta) + len(f.blocks)*BlockLenSize
	if cap(w.head) < dataStart {
		w.head = make([]byte, dataStart)
	}
	head := w.head[:dataStart]
	p := FrameHeaderSize
	p += copy(head[p:], w.meta)
	var dataCRC uint32
	for _, b := range f.blocks {
		le.PutUint32(head[p:], uint32(len(b)))
		p += BlockLenSize
		dataCRC = crcUpdate(dataCRC, b)
	}
	h.dataCRC = dataCRC
	putFrameHeader(head, h)
	le.PutUint32(head[4:], crc(head[8:dataStart]))
	if err := vs.writeVec(head, f.blocks, rec); err != nil {
		return w.fail(err)
	}
	w.account(f, h, head[FrameHeaderSize+len(w.meta):dataStart])
	w.off += rec
	return nil
}

// account adds the frame f written at w.off to the index, or holds it
// there for KeepFrame when it was written provisionally.
func (w *Writer) account(f *Frame, h *frameHeader, table []byte) {
	if !w.provisional {
		w.acct.add(f, w.off, h, table)
		return
	}
	w.held = heldFrame{f: f, off: w.off, h: *h, table: append(w.held.table[:0], table...), ok: true}
}

// rewinder is a sink that can take back what it accepted from an offset
// on (Create's write(2) path).
type rewinder interface {
	rewind(to int64) error
}

// WriteFrameProvisional writes f as WriteFrame does, but the frame can
// still be taken back: it is for a caller whose frame borrows memory that
// another thread may overwrite while the frame is written, and that checks
// only after the write (the kernel's copy done) whether it did. KeepFrame
// then adds the frame to the file's index; TakeBackFrame puts the file
// back to where the frame starts (the next frame is written over it). No
// other call may come in between, and f must stay unchanged until
// KeepFrame returns. Only Create's write(2) path without AsyncWrite
// supports it (ErrNotSupported).
func (w *Writer) WriteFrameProvisional(f *Frame) error { return w.writeProvisional(f, nil) }

func (w *Writer) writeProvisional(f *Frame, l evidence.Lender) error {
	if _, ok := w.sink.(rewinder); !ok || w.opts.AsyncWrite || w.opts.Mmap {
		return ErrNotSupported
	}
	if w.held.ok {
		return errors.New("pack: WriteFrameProvisional with a frame held")
	}
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	if w.pending != nil && w.pending.Len() > 0 {
		if err := w.writePending(); err != nil {
			return err
		}
	}
	w.provisional = true
	hs, sealed := w.sink.(sealing)
	if sealed {
		hs.base().lender = l
	}
	err := w.writeFrame(f)
	w.provisional = false
	if sealed && !hs.base().held {
		// not held for KeepFrame (no lender, or assembled in the buffer):
		// hashed before the caller checks the blocks
		hs.base().lender = nil
		hs.base().h.Wait()
	}
	return err
}

// WriteFrameLent is WriteFrameProvisional for a sealed file whose
// frame's blocks are lent (a ring's memory, which a producer may
// overwrite after the caller's check): the frame's hash runs on the
// Sealer's worker after KeepFrame, while the caller builds the next
// frame, and l (kept unchanged until the next WriteFrameLent, Flush or
// Close returns) tells after it whether the blocks still held what was
// written; when not, the worker hashes the frame's bytes read back from
// the file. Without a seal it is WriteFrameProvisional.
func (w *Writer) WriteFrameLent(f *Frame, l evidence.Lender) error {
	return w.writeProvisional(f, l)
}

// KeepFrame adds the frame WriteFrameProvisional wrote to the index.
func (w *Writer) KeepFrame() {
	if !w.held.ok {
		return
	}
	if k, ok := w.sink.(keeper); ok {
		k.keep()
	}
	w.acct.add(w.held.f, w.held.off, &w.held.h, w.held.table)
	w.held.f, w.held.ok = nil, false
}

// TakeBackFrame takes back the frame WriteFrameProvisional wrote: the
// file ends where it started again.
func (w *Writer) TakeBackFrame() error {
	if !w.held.ok {
		return nil
	}
	off := w.held.off
	w.held.f, w.held.ok = nil, false
	if err := w.sink.(rewinder).rewind(off); err != nil {
		return w.fail(err)
	}
	w.off = off
	return nil
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// Add appends one message to the Writer's pending FreeSync frame, copying
// meta and data, and writes that frame once its data reaches
// TargetFrameSize or it holds MaxFrameMessages messages; a message
// TargetFrameSpan or more after the frame's first starts the next frame.
// Frame ids count up from 0; a frame's time is its first message's genTs
// and its done time the largest genTs. Flush and Close write a pending
// frame. Mixing Add and WriteFrame is allowed; a pending frame is written
// before WriteFrame's.
func (w *Writer) Add(name, channel string, meta []byte, genTs, doneTs int64, data []byte) error {
	return w.add(name, channel, meta, genTs, doneTs, data, 0, false)
}

// AddSeq is Add of a message that carries its producer's sequence number
// (Message.Seq: a message read from MCAP, a JSON-lines "sequence").
func (w *Writer) AddSeq(name, channel string, meta []byte, genTs, doneTs int64, seq uint64, data []byte) error {
	return w.add(name, channel, meta, genTs, doneTs, data, seq, true)
}

func (w *Writer) add(name, channel string, meta []byte, genTs, doneTs int64, data []byte, seq uint64, hasSeq bool) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	p := w.pending
	if p == nil {
		p = &Frame{}
		p.Reset(0, 0)
		w.pending = p
	}
	t := MessageTime(&Message{GenTs: genTs, DoneTs: doneTs}, genTs)
	if p.Len() > 0 && w.opts.TargetFrameSpan > 0 && t-w.pendingFirst >= int64(w.opts.TargetFrameSpan) {
		if err := w.writePending(); err != nil {
			return err
		}
	}
	if p.Len() > 0 && int64(len(p.own)+len(meta)+len(data)) > writeLimit/2 {
		// A large message does not join a frame that would then be over
		// the readers' limit: it starts its own, written at once (alone
		// over the limit, it is refused here, not at Close).
		if err := w.writePending(); err != nil {
			return err
		}
	}
	if p.Len() == 0 {
		p.Reset(w.nextID, genTs)
		p.SetType(FreeSync)
		w.pendingFirst = t
	}
	p.AddMetaWithData(name, channel, meta, genTs, doneTs, data)
	if hasSeq {
		p.SetSeq(p.Len()-1, seq)
	}
	p.doneNs = max(p.doneNs, genTs)
	if len(p.own) >= w.opts.TargetFrameSize || p.Len() >= MaxFrameMessages || int64(len(p.own)) > writeLimit/2 {
		return w.writePending()
	}
	return nil
}

func (w *Writer) writePending() error {
	if w.pending == nil || w.pending.Len() == 0 {
		return nil
	}
	err := w.writeFrame(w.pending)
	if hs, ok := w.sink.(sealing); ok && hs.base().behind {
		hs.base().h.Wait() // Add's frame is reused at once
	}
	w.nextID++
	w.pending.Reset(0, 0)
	clear(w.pendingTopics)
	w.pendingIndexed = 0
	return err
}

// AddMetadata stores a named metadata blob (copied) in the file; it is
// written as a metadata section by Close. A later call with the same name
// replaces the earlier blob.
func (w *Writer) AddMetadata(name string, data []byte) error {
	if w.closed {
		return ErrClosed
	}
	if len(name)+len(data)+10 > MaxSectionSize {
		return fmt.Errorf("%w: metadata %q is %d bytes", ErrFrameTooLarge, name, len(data))
	}
	d := append([]byte(nil), data...)
	if i, ok := w.mdIdx[name]; ok {
		w.metadata[i].data = d
		return nil
	}
	if w.mdIdx == nil {
		w.mdIdx = map[string]int{}
	}
	w.mdIdx[name] = len(w.metadata)
	w.metadata = append(w.metadata, namedBlob{name: name, data: d})
	return nil
}

// Flush writes any pending Add frame and makes everything written so far
// durable (mmap writer: fdatasync) or hands it to the io.Writer (stream).
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	if err := w.writePending(); err != nil {
		return err
	}
	if err := w.sink.flush(); err != nil {
		return w.fail(err)
	}
	return nil
}

// Close writes any pending frame, the metadata sections, the index and the
// trailer, and completes the file (mmap writer: truncate to size, fsync,
// close). It returns the first error of the Writer's life, if any. Close is
// idempotent.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.held.ok {
		w.fail(errors.New("pack: Close with a provisional frame neither kept nor taken back"))
	}
	if w.err == nil {
		if err := w.writePending(); err != nil {
			w.fail(err)
		}
	}
	if w.err != nil {
		return errors.Join(w.err, w.sink.abort())
	}
	if err := w.writeTail(); err != nil {
		w.fail(err)
		return errors.Join(err, w.sink.abort())
	}
	if err := w.sink.finish(w.off); err != nil {
		return w.fail(err)
	}
	return nil
}

func (w *Writer) writeSection(kind uint32, payload []byte) (int64, error) {
	off := w.off
	n := SectionHeaderSize + len(payload)
	dst, err := w.sink.reserve(n)
	if err != nil {
		return 0, err
	}
	copy(dst[SectionHeaderSize:], payload)
	putSectionHeader(dst, kind, payload)
	if err := w.sink.commit(n); err != nil {
		return 0, err
	}
	w.off += int64(n)
	return off, nil
}

func (w *Writer) writeTail() error {
	w.finalMetadata()
	metaOffs := make([]int64, len(w.metadata))
	for i, m := range w.metadata {
		off, err := w.writeSection(SectionMetadata, appendMetadataPayload(nil, m.name, m.data))
		if err != nil {
			return err
		}
		metaOffs[i] = off
	}
	idx := buildIndex(w.acct.entries, w.acct.timeSorted, w.acct.topics, w.metadata, metaOffs)
	if w.opts.Seal != nil {
		return w.writeSealedTail(idx)
	}
	indexOff, err := w.writeSection(SectionIndex, idx)
	if err != nil {
		return err
	}
	dst, err := w.sink.reserve(TrailerSize)
	if err != nil {
		return err
	}
	putTrailer(dst, indexOff, w.off+TrailerSize)
	if err := w.sink.commit(TrailerSize); err != nil {
		return err
	}
	w.off += TrailerSize
	return nil
}

// sortedTopics returns topic stats in (name, channel) order.
func sortedTopics(ts []topicStat) []topicStat {
	out := append([]topicStat(nil), ts...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].name != out[j].name {
			return out[i].name < out[j].name
		}
		return out[i].channel < out[j].channel
	})
	return out
}

// vecSink is a sink that can take a record as a head and data blocks
// without their being assembled first.
type vecSink interface {
	// writeVec appends head followed by blocks, n bytes in all.
	writeVec(head []byte, blocks [][]byte, n int64) error
}

// streamSink buffers records and writes them to an io.Writer.
type streamSink struct {
	w   io.Writer
	buf []byte
}

const streamChunk = 1 << 20

func (s *streamSink) reserve(n int) ([]byte, error) {
	if cap(s.buf)-len(s.buf) < n {
		if err := s.flush(); err != nil {
			return nil, err
		}
		if cap(s.buf) < n {
			s.buf = make([]byte, 0, max(n, streamChunk))
		}
	}
	return s.buf[len(s.buf) : len(s.buf)+n], nil
}

func (s *streamSink) commit(n int) error {
	s.buf = s.buf[:len(s.buf)+n]
	if len(s.buf) >= streamChunk {
		return s.flush()
	}
	return nil
}

func (s *streamSink) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	return err
}

// writeVec buffers small pieces and writes large ones (vecMinData and
// up) straight from the caller's memory after flushing the buffer.
func (s *streamSink) writeVec(head []byte, blocks [][]byte, _ int64) error {
	if err := s.put(head); err != nil {
		return err
	}
	for _, b := range blocks {
		if err := s.put(b); err != nil {
			return err
		}
	}
	if len(s.buf) >= streamChunk {
		return s.flush()
	}
	return nil
}

func (s *streamSink) put(b []byte) error {
	if len(b) >= vecMinData {
		if err := s.flush(); err != nil {
			return err
		}
		_, err := s.w.Write(b)
		return err
	}
	dst, err := s.reserve(len(b))
	if err != nil {
		return err
	}
	copy(dst, b)
	s.buf = s.buf[:len(s.buf)+len(b)]
	return nil
}

func (s *streamSink) finish(int64) error { return s.flush() }
func (s *streamSink) abort() error       { return nil }
