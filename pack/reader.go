package pack

import (
	"errors"
	"io"
	"math"
	"runtime/debug"
	"sort"
	"sync/atomic"
)

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Cache, when set, keeps decompressed data sections of compressed
	// frames for random access (repeated seeks, looped replay). It may be
	// shared by several Readers.
	Cache *FrameCache
	// MaxMemory bounds what decoding one frame may allocate: its messages,
	// its block table and, compressed, its data (DefaultMaxMemory when
	// 0). A frame that would take more is refused as damaged
	// (ErrMemoryLimit, with its offset) before anything is allocated.
	MaxMemory int64
	// ReadAhead, when > 0, has that many helper goroutines decode the
	// frames after the one ReadInto returns (CRC checks, decompression) on
	// other cores, in file order, bounded to 4 frames per helper and to
	// half of MaxMemory for what the caller's Frame and the helpers' hold
	// (a frame that does not fit is decoded by ReadInto into the caller's
	// Frame, reusing its buffers). Frames are handed over without
	// copying; results and errors are those of a reader without it. Close
	// ends the helpers. Ignored with a Cache, and for an indexed file whose
	// frames average under 16 KiB (the hand-over costs more than it
	// moves); ReadMetaInto does not use it.
	ReadAhead int
	// SkipDamaged reads past damage: a damaged frame or section does not
	// stop ReadInto and ReadMetaInto (whose error would stay until a seek),
	// they resynchronise on the next intact record as Recover does and go
	// on; Types leaves out a damaged type section (its topic reads as
	// untyped from there) and walks on. Reader.Skipped counts what was
	// passed over. A StreamReader skips a frame whose head checks out but
	// whose data does not; other damage still stops it.
	SkipDamaged bool
}

// Reader reads a pack file through a read-only mmap: frames in order with
// or without their data, tell / seek, seek by time through the index, the
// summary and the metadata sections.
//
// A Reader is not safe for concurrent use; open one per goroutine (they
// share the page cache). Bytes a Reader hands out alias its mapping and are
// valid until Close (see Frame for the exact lifetime).
type Reader struct {
	frameDecoder
	data    []byte
	release func() error
	hdr     FileHeader
	pos     int64
	last    int64 // offset of the frame the last read returned; -1 before
	end     int64 // end of the record region
	trailer bool  // the file has a valid trailer
	idx     *index
	indexed bool  // idx came from the file
	scanErr error // why a scan for the index stopped early
	fault   error // the last fault on the mapping (Fault)
	closed  bool
	meta    Frame // scratch for scans

	// seeked: SeekTime's from is in force: reads leave out the messages
	// before it (until SeekFrame or Rewind). covers[i] is the latest
	// message time of frames 0..i (index order), built by the first
	// SeekTime.
	seeked bool
	from   int64
	covers []int64

	skipDamaged bool    // ReaderOptions.SkipDamaged
	skipped     Skipped // what it passed over
	walk        *walker // its resynchronisation, made at the first damage

	aheadN int        // ReaderOptions.ReadAhead
	ahead  *readAhead // started by the first ReadInto

	types     []TopicType // Types, once walked
	typesErr  error
	typesDone bool
}

var readerIDs atomic.Uint64

// Open maps the file at path read-only and checks its header. A file
// with a valid trailer is indexed; one without (still being written,
// truncated, never closed) is read sequentially and its index is built by a
// scan when first needed.
func Open(path string) (*Reader, error) {
	return OpenWith(path, ReaderOptions{})
}

// OpenWith is Open with options.
func OpenWith(path string, opts ReaderOptions) (*Reader, error) {
	b, release, err := MapFile(path)
	if err != nil {
		return nil, err
	}
	r, err := newReader(path, b, opts)
	if err != nil {
		return nil, errors.Join(err, release())
	}
	r.release = release
	return r, nil
}

// NewBytesReader reads a pack file held in memory; name is used in errors.
// b must not change while the Reader is in use.
func NewBytesReader(name string, b []byte, opts ReaderOptions) (*Reader, error) {
	r, err := newReader(name, b, opts)
	if err != nil {
		return nil, err
	}
	r.release = func() error { return nil }
	return r, nil
}

func newReader(path string, b []byte, opts ReaderOptions) (_ *Reader, err error) {
	defer guard(&err, path, b, debug.SetPanicOnFault(true))
	h, err := parseFileHeader(path, b)
	var headerLost *CorruptError
	if err != nil && opts.SkipDamaged && errors.Is(err, ErrChecksum) {
		// Its CRC does not check out, but the magic and the version do:
		// read on, the records carry their own CRCs.
		headerLost = err.(*CorruptError)
		var fixed [HeaderSize]byte
		copy(fixed[:], b)
		le.PutUint32(fixed[60:], crc(fixed[:60]))
		h, err = parseFileHeader(path, fixed[:])
	}
	if err != nil {
		return nil, err
	}
	r := &Reader{frameDecoder: frameDecoder{path: path, codec: newCodecs(), cache: opts.Cache, id: readerIDs.Add(1), maxMem: opts.MaxMemory},
		data: b, hdr: h, pos: HeaderSize, last: -1, end: int64(len(b))}
	if opts.Cache == nil {
		r.aheadN = max(opts.ReadAhead, 0)
	}
	r.skipDamaged = opts.SkipDamaged
	if headerLost != nil {
		r.skipped.add(LostRange{Offset: 0, Length: HeaderSize, Reason: headerLost.Reason})
	}
	if off, ok := parseTrailer(b); ok {
		r.trailer = true
		r.end = off
		if kind, payload, _, _, err := parseSection(b[off : int64(len(b))-TrailerSize]); err == nil && kind == SectionIndex {
			if x, reason := parseIndex(payload); reason == "" && x.valid(off) {
				r.idx, r.indexed = x, true
			}
		}
	}
	return r, nil
}

// valid checks that frame offsets increase and lie in the record region.
func (x *index) valid(end int64) bool {
	prev := int64(HeaderSize - 1)
	for i := 0; i < x.n; i++ {
		off, _, _ := x.entry(i)
		if off <= prev || off > end-FrameHeaderSize {
			return false
		}
		prev = off
	}
	for _, off := range x.metaOffs {
		if off < HeaderSize || off > end-SectionHeaderSize {
			return false
		}
	}
	return true
}

// Path returns the path the Reader was opened with.
func (r *Reader) Path() string { return r.path }

// Header returns the file header.
func (r *Reader) Header() FileHeader { return r.hdr }

// Size returns the file size in bytes.
func (r *Reader) Size() int64 { return int64(len(r.data)) }

// Indexed reports whether the file has a valid index (written by Close).
func (r *Reader) Indexed() bool { return r.indexed }

// ReadInto reads the next frame with its data into f, reusing f's buffers:
// steady state does not allocate. It returns io.EOF after the last frame
// and a *CorruptError when the frame is damaged (f is then empty). Both CRCs
// are checked and compressed data is decompressed into f.
func (r *Reader) ReadInto(f *Frame) (err error) {
	defer r.guard(&err, f, debug.SetPanicOnFault(true))
	for {
		if err := r.readInto(f); err != nil {
			if r.skipDamage(err) {
				continue
			}
			return err
		}
		if !r.seeked {
			return nil
		}
		if f.dropBefore(r.from); f.Len() > 0 {
			return nil
		}
	}
}

func (r *Reader) readInto(f *Frame) error {
	if r.aheadN > 0 && !r.closed {
		if r.ahead == nil {
			if r.indexed && r.idx.n > 0 && (r.end-HeaderSize)/int64(r.idx.n) < aheadMinFrame {
				// Small frames: the hand-over would cost more than the
				// decoding it moves to another core.
				r.aheadN = 0
				return r.next(f, true)
			}
			r.startAhead(r.aheadN)
		}
		return r.readAheadInto(f)
	}
	return r.next(f, true)
}

// ReadMetaInto reads the next frame's meta into f without touching its data
// pages: f's messages keep their DataIndex but f has no blocks (Data returns
// nil). Only the head CRC (header, meta, block table) is checked.
func (r *Reader) ReadMetaInto(f *Frame) (err error) {
	defer r.guard(&err, f, debug.SetPanicOnFault(true))
	for {
		if err := r.next(f, false); err != nil {
			if r.skipDamage(err) {
				continue
			}
			return err
		}
		if !r.seeked {
			return nil
		}
		if f.dropBefore(r.from); f.Len() > 0 {
			return nil
		}
	}
}

func (r *Reader) next(f *Frame, withData bool) error {
	if r.closed {
		return ErrClosed
	}
	for {
		if r.pos >= r.end {
			return io.EOF
		}
		b := r.data[r.pos:r.end]
		if len(b) >= 4 && le.Uint32(b) == sectionMagic {
			_, _, rec, reason, err := parseSection(b)
			if err != nil {
				f.Reset(0, 0)
				return corrupt(r.path, r.pos, err, "%s", reason)
			}
			r.pos += rec
			continue
		}
		if !r.trailer && len(b) == TrailerSize && le.Uint32(b) == trailerMagic {
			return io.EOF // a trailer whose index is unusable
		}
		n, err := r.decodeFrame(b, r.pos, f, withData)
		if err != nil {
			return err
		}
		r.last = r.pos
		r.pos += n
		return nil
	}
}

// frameDecoder decodes frame records for a Reader or a StreamReader: the
// CRC checks, the meta, the block table and decompression.
type frameDecoder struct {
	path   string
	codec  *codecs
	cache  *FrameCache
	id     uint64 // cache key space of this reader
	maxMem int64  // ReaderOptions.MaxMemory
}

// limit is the decoder's memory limit per frame.
func (r *frameDecoder) limit() int64 {
	if r.maxMem > 0 {
		return r.maxMem
	}
	return DefaultMaxMemory
}

// decodeFrame decodes the frame record at b (file offset off) into f and
// returns the record length.
func (r *frameDecoder) decodeFrame(b []byte, off int64, f *Frame, withData bool) (int64, error) {
	var h frameHeader
	if reason, err := parseFrameHeader(b, &h); err != nil {
		f.Reset(0, 0)
		return 0, corrupt(r.path, off, err, "%s", reason)
	}
	rec := b[:h.recLen]
	if got := headCRCOf(rec, &h); got != h.headCRC {
		f.Reset(0, 0)
		return 0, corrupt(r.path, off+4, ErrChecksum, "frame head CRC32C %#08x, computed %#08x", h.headCRC, got)
	}
	meta := rec[FrameHeaderSize:h.tableOff]
	// A meta holds at most one message per two bytes (a tag and a
	// length). When that many fit the memory limit, the messages are
	// decoded in one pass as they come, their array growing within the
	// limit; a meta that could hold more is counted first and refused
	// before anything is allocated when it does.
	most := messagesWithin(&h, withData, r.limit())
	if len(meta)/2 > most {
		most = math.MaxInt
		if n, ok := countMessages(meta); ok {
			if frameCost(&h, n, withData) > r.limit() {
				f.Reset(0, 0)
				return 0, memoryError(r.path, off, &h, n, withData, r.limit())
			}
			f.msgs = growTo(f.msgs, n, int(r.limit()/messageCost))
		}
	}
	if err := f.unmarshalMetaAtMost(meta, most); err != nil {
		return 0, corrupt(r.path, off+FrameHeaderSize, err, "frame meta does not decode: %v", err)
	}
	table := rec[h.tableOff:h.dataOff]
	if !checkBlockTable(table, h.rawLen) {
		f.Reset(0, 0)
		return 0, corrupt(r.path, off+h.tableOff, ErrCorrupt, "block lengths do not sum to data length %d", h.rawLen)
	}
	for i := range f.msgs {
		if di := f.msgs[i].DataIndex; di < NoData || di >= int32(h.nblocks) {
			f.Reset(0, 0)
			return 0, corrupt(r.path, off+FrameHeaderSize, ErrBadMeta,
				"message %d: data_index %d, frame has %d blocks", i, di, h.nblocks)
		}
	}
	if !withData {
		return h.recLen, nil
	}
	data := rec[h.dataOff:]
	if got := crc(data); got != h.dataCRC {
		f.Reset(0, 0)
		return 0, corrupt(r.path, off+8, ErrChecksum, "frame data CRC32C %#08x, computed %#08x", h.dataCRC, got)
	}
	if h.codec != CompressNone {
		var reason string
		data, reason = r.decompress(f, &h, off, data)
		if reason != "" {
			f.Reset(0, 0)
			return 0, corrupt(r.path, off+h.dataOff, ErrCorrupt, "%s", reason)
		}
	}
	p := uint32(0)
	f.blocks = growTo(f.blocks, int(h.nblocks), int(r.limit()/blockCost))
	for i := 0; i < int(h.nblocks); i++ {
		n := le.Uint32(table[4*i:])
		f.blocks = append(f.blocks, data[p:p+n:p+n])
		p += n
	}
	return h.recLen, nil
}

func (r *frameDecoder) decompress(f *Frame, h *frameHeader, off int64, src []byte) ([]byte, string) {
	if r.cache != nil {
		if b, ok := r.cache.get(r.id, off); ok && len(b) == int(h.rawLen) {
			return b, ""
		}
	}
	raw := int(h.rawLen)
	dst := f.scratch
	if r.cache != nil || cap(dst) < raw {
		// Cached buffers are shared and immutable: never decode into one.
		dst = make([]byte, raw)
	}
	out, reason := r.codec.decompress(h.codec, dst, src, raw)
	if reason != "" {
		return nil, reason
	}
	if r.cache != nil {
		r.cache.put(r.id, off, out)
	} else {
		f.scratch = dst
	}
	return out, ""
}

// Tell returns the offset of the next record to be read.
func (r *Reader) Tell() int64 { return r.pos }

// FrameOffset returns the offset of the frame the last successful read
// returned (a section in between makes it differ from Tell before the
// read), -1 before the first.
func (r *Reader) FrameOffset() int64 { return r.last }

// SeekFrame moves to off, which must be the offset of a frame (as returned by
// Tell before a read, or found in the index) or the end of the frames.
func (r *Reader) SeekFrame(off int64) (err error) {
	defer r.guard(&err, nil, debug.SetPanicOnFault(true))
	if r.closed {
		return ErrClosed
	}
	if off == r.end {
		r.pos, r.seeked = off, false
		return nil
	}
	if off < HeaderSize || off > r.end-4 {
		return ErrBadOffset
	}
	if m := le.Uint32(r.data[off:]); m != frameMagic && m != sectionMagic {
		return ErrBadOffset
	}
	r.pos, r.seeked = off, false
	return nil
}

// Rewind moves to the first frame; reads return whole frames again.
func (r *Reader) Rewind() { r.pos, r.seeked = HeaderSize, false }

// SeekTime moves so that the reads that follow return exactly the messages
// whose time (MessageTime) is >= ns, in file order, whatever the frames'
// bounds: it goes to the first frame holding such a message, and until the
// next SeekFrame or Rewind every frame read leaves out its messages before
// ns (a frame left with none is skipped). The first SeekTime of a Reader
// finds each frame's latest message time from its meta (head CRC checked,
// no data touched; a frame whose head does not check out is never skipped,
// so reading reports its damage) and keeps it, 8 bytes a frame; later
// seeks are a binary search, O(log n). A file without an index is scanned
// once (headers and metas only) to build one.
func (r *Reader) SeekTime(ns int64) (err error) {
	defer r.guard(&err, nil, debug.SetPanicOnFault(true))
	if r.closed {
		return ErrClosed
	}
	x := r.index()
	r.seeked, r.from = true, ns
	if r.covers == nil && x.n > 0 {
		// A seek into the first frame (replay's start, the first
		// message's time) needs no pass over every frame's meta: the
		// search below would stop at 0 as soon as that frame holds a
		// message at or after ns.
		if off, _, _ := x.entry(0); r.latestIn(off) >= ns {
			r.pos = off
			return nil
		}
	}
	if r.covers == nil {
		r.covers = r.frameCovers(x)
	}
	i := sort.Search(x.n, func(i int) bool { return r.covers[i] >= ns })
	if i == x.n {
		r.pos = r.end
		return nil
	}
	r.pos, _, _ = x.entry(i)
	return nil
}

// frameCovers returns, for each frame of x, the latest message time of the
// frames up to it (a running maximum, so SeekTime can binary-search it).
func (r *Reader) frameCovers(x *index) []int64 {
	out := make([]int64, x.n)
	run := int64(math.MinInt64)
	for i := range out {
		off, _, _ := x.entry(i)
		run = max(run, r.latestIn(off))
		out[i] = run
	}
	return out
}

// latestIn returns the latest MessageTime of the frame at off, from its
// meta; math.MaxInt64 when its head does not check out (it is then never
// skipped), math.MinInt64 when it holds no message.
func (r *Reader) latestIn(off int64) int64 {
	var h frameHeader
	b := r.data[off:r.end]
	if _, err := parseFrameHeader(b, &h); err != nil || headCRCOf(b[:h.recLen], &h) != h.headCRC {
		return math.MaxInt64
	}
	t, ok := latestMessageTime(b[FrameHeaderSize:h.tableOff])
	if !ok {
		return math.MaxInt64
	}
	return t
}

// index returns the file's index, scanning to build one if needed.
func (r *Reader) index() *index {
	if r.idx == nil {
		r.idx = r.scan()
	}
	return r.idx
}

// ScanError returns why the scan that built the index of a file without a
// valid index stopped before the end (nil when it reached the end or the
// file has an index).
func (r *Reader) ScanError() (err error) {
	defer r.guard(&err, nil, debug.SetPanicOnFault(true))
	r.index()
	return r.scanErr
}

// scan walks records from the first frame, checking head CRCs, until the
// end or the first damaged record.
func (r *Reader) scan() *index {
	acct := newAccounting()
	var md []namedBlob
	var mdOffs []int64
	pos := int64(HeaderSize)
	for pos < r.end {
		b := r.data[pos:r.end]
		if len(b) >= 4 && le.Uint32(b) == sectionMagic {
			kind, payload, rec, reason, err := parseSection(b)
			if err != nil {
				r.scanErr = corrupt(r.path, pos, err, "%s", reason)
				break
			}
			if kind == SectionMetadata {
				if name, _, ok := parseMetadataPayload(payload); ok {
					md = append(md, namedBlob{name: name})
					mdOffs = append(mdOffs, pos)
				}
			}
			pos += rec
			continue
		}
		if len(b) == TrailerSize && le.Uint32(b) == trailerMagic {
			break
		}
		n, err := r.decodeFrame(b, pos, &r.meta, false)
		if err != nil {
			r.scanErr = err
			break
		}
		var h frameHeader
		parseFrameHeader(b, &h)
		acct.add(&r.meta, pos, &h, b[h.tableOff:h.dataOff])
		pos += n
	}
	r.meta.Reset(0, 0)
	x, reason := parseIndex(buildIndex(acct.entries, acct.timeSorted, acct.topics, md, mdOffs))
	if reason != "" {
		panic("BUG: pack: scanned index does not parse: " + reason)
	}
	return x
}

// Summary returns frames, messages, time range, topics and metadata names
// from the index (built by a header-only scan when the file has none).
func (r *Reader) Summary() (s Summary) {
	var fault error
	defer zeroOnFault(&fault, &s)
	defer r.guard(&fault, nil, debug.SetPanicOnFault(true))
	x := r.index()
	s = Summary{Header: r.hdr, Frames: x.n, Indexed: r.indexed, TimeSorted: x.timeSorted,
		Size: int64(len(r.data)), Topics: append([]TopicSummary(nil), x.topics...),
		Metadata: append([]string(nil), x.metaNames...)}
	for i := 0; i < x.n; i++ {
		_, t, e := x.entry(i)
		if i == 0 || t < s.FirstNs {
			s.FirstNs = t
		}
		if i == 0 || e > s.LastNs {
			s.LastNs = e
		}
	}
	for _, t := range x.topics {
		s.Messages += t.Messages
	}
	return s
}

// FrameOffsets returns the offsets of all frames, from the index.
func (r *Reader) FrameOffsets() (out []int64) {
	var fault error
	defer zeroOnFault(&fault, &out)
	defer r.guard(&fault, nil, debug.SetPanicOnFault(true))
	x := r.index()
	out = make([]int64, x.n)
	for i := range out {
		out[i], _, _ = x.entry(i)
	}
	return out
}

// Metadata returns the metadata blob stored under name. The bytes alias the
// mapping: valid until Close, read-only.
func (r *Reader) Metadata(name string) (_ []byte, _ bool) {
	var fault error // then nil, false
	defer r.guard(&fault, nil, debug.SetPanicOnFault(true))
	x := r.index()
	if x.metaIdx == nil {
		// One map for every lookup: callers walking MetadataNames stay
		// linear in the number of sections.
		x.metaIdx = make(map[string]int, len(x.metaNames))
		for i, n := range x.metaNames {
			if _, dup := x.metaIdx[n]; !dup {
				x.metaIdx[n] = i
			}
		}
	}
	i, ok := x.metaIdx[name]
	if !ok {
		return nil, false
	}
	kind, payload, _, _, err := parseSection(r.data[x.metaOffs[i]:r.end])
	if err != nil || kind != SectionMetadata {
		return nil, false
	}
	if nm, data, ok := parseMetadataPayload(payload); ok && nm == name {
		return data, true
	}
	return nil, false
}

// MetadataNames returns the names of the metadata sections.
func (r *Reader) MetadataNames() (_ []string) {
	var fault error // then nil
	defer r.guard(&fault, nil, debug.SetPanicOnFault(true))
	return append([]string(nil), r.index().metaNames...)
}

// Close unmaps the file. Bytes handed out by the Reader become invalid.
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.stopAhead()
	r.closed = true
	r.codec.close()
	r.data = nil
	err := r.release()
	if err != nil {
		return err
	}
	return nil
}
