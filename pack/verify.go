package pack

import (
	"runtime/debug"

	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/edr-lite/edr-lite/ingest"
)

// VerifyReport is what Verify found.
type VerifyReport struct {
	Path     string
	Size     int64
	Header   FileHeader
	Frames   int    // intact frames
	Messages uint64 // messages in intact frames
	Metadata int    // intact metadata sections
	Types    int    // intact type sections
	// Attachments is the intact attachment sections.
	Attachments int
	// Complete: the file has a valid trailer and an index that matches its
	// frames (it was closed). A file that is not complete but has no
	// Problems is a valid prefix (still being written, or cut at a record
	// boundary).
	Complete bool
	// Problems lists every damaged region or inconsistency, in file order,
	// each with the offset where it starts.
	Problems []*CorruptError
}

// OK reports whether no problem was found.
func (v *VerifyReport) OK() bool { return len(v.Problems) == 0 }

// Verify reads the whole file at path, checking the header, every record
// (bounds, both CRCs, meta decoding, decompression, data indexes), the
// index against the frames and the trailer, and reports every problem with
// its offset. Past a damaged region it resynchronises on the next intact
// record, as Recover does. The error is for I/O failures only.
func Verify(path string) (*VerifyReport, error) {
	return VerifyWith(path, ReaderOptions{})
}

// VerifyWith is Verify with reader options (MaxMemory: a frame that would
// take more to decode is a problem at its offset).
func VerifyWith(path string, opts ReaderOptions) (*VerifyReport, error) {
	b, release, err := MapFile(path)
	if err != nil {
		return nil, err
	}
	defer release()
	v, fault := verifyBytesGuarded(path, b, opts)
	if fault != nil {
		return nil, fault
	}
	return v, nil
}

// VerifyBytes is Verify over a file held in memory; name is used in reports.
func VerifyBytes(name string, b []byte) *VerifyReport {
	return verifyBytes(name, b, ReaderOptions{})
}

// verifyBytesGuarded is verifyBytes over a mapping: a fault on it (the
// file shrank while it was read) is the error.
func verifyBytesGuarded(name string, b []byte, opts ReaderOptions) (v *VerifyReport, err error) {
	defer guard(&err, name, b, debug.SetPanicOnFault(true))
	return verifyBytes(name, b, opts), nil
}

func verifyBytes(name string, b []byte, opts ReaderOptions) *VerifyReport {
	v := &VerifyReport{Path: name, Size: int64(len(b))}
	w := newWalker(name, b, opts)
	w.onFrame = func(off int64, rec []byte, f *Frame, h *frameHeader) {
		v.Frames++
		v.Messages += uint64(f.Len())
	}
	bodies := map[ingest.ContentID]ingest.Type{}
	w.onSection = func(off int64, kind uint32, payload []byte) {
		switch kind {
		case SectionMetadata:
			v.Metadata++
		case SectionType:
			if _, err := parseTypePayload(name, off, payload, bodies); err != nil {
				v.Problems = append(v.Problems, err.(*CorruptError))
			} else {
				v.Types++
			}
		case SectionAttachment:
			if _, err := parseAttachmentPayload(name, off, payload); err != nil {
				v.Problems = append(v.Problems, err.(*CorruptError))
			} else {
				v.Attachments++
			}
		}
	}
	w.onLoss = func(l LostRange, err *CorruptError) { v.Problems = append(v.Problems, err) }
	v.Header = w.walk()
	v.Complete = w.indexOK
	return v
}

// LostRange is one damaged region Recover could not salvage.
type LostRange struct {
	Offset int64 // file offset where the damage starts
	Length int64 // bytes skipped
	// Frames lost in the region. Exact when the file's index survived (it
	// lists every frame); otherwise the frames whose header survived plus
	// one when the region starts with an unreadable frame.
	Frames int
	// FromNs..ToNs bounds the lost frames' times. From the index when it
	// survived (first lost frame's time .. last lost frame's end);
	// otherwise from the end of the last intact frame before the region (or
	// a lost frame's own time when its header survived) to the time of the
	// next intact frame (0 when unknown: at the start or end of the file).
	FromNs, ToNs int64
	Reason       string
}

// RecoverReport says what Recover salvaged and what was lost.
type RecoverReport struct {
	Frames        int // frames salvaged
	Messages      uint64
	Metadata      int   // metadata sections salvaged
	Types         int   // type sections salvaged (written again: a body lost with a damaged region is stored again)
	Attachments   int   // attachment sections salvaged
	LostFrames    int   // sum of Lost[i].Frames
	LostBytes     int64 // sum of Lost[i].Length
	Lost          []LostRange
	HeaderRebuilt bool // the input header was damaged; a new one was written
}

// Recover copies every intact frame, metadata, type and attachment section of the file at in
// to a new file at out (written with Create, so out is complete and always
// verifies), resynchronising past damaged regions instead of stopping at the
// first, rebuilding the index, and reports exactly what was lost. A file cut
// at any byte recovers up to its last whole frame. Frames are copied byte
// for byte (same codec, same CRCs).
func Recover(in, out string) (*RecoverReport, error) {
	return RecoverWith(in, out, ReaderOptions{})
}

// RecoverWith is Recover with reader options (MaxMemory: a frame that
// would take more to decode is not salvaged).
func RecoverWith(in, out string, ropts ReaderOptions) (*RecoverReport, error) {
	b, release, err := MapFile(in)
	if err != nil {
		return nil, err
	}
	defer release()
	return recoverBytes(in, b, ropts, func(opts WriterOptions) (*Writer, error) { return Create(out, opts) })
}

// RecoverTo is Recover writing the salvaged file to any Writer made by mk
// (for example NewStreamWriter over a pipe). src is the damaged file's bytes.
func RecoverTo(name string, src []byte, mk func(WriterOptions) (*Writer, error)) (*RecoverReport, error) {
	return recoverBytes(name, src, ReaderOptions{}, mk)
}

func recoverBytes(name string, b []byte, ropts ReaderOptions, mk func(WriterOptions) (*Writer, error)) (*RecoverReport, error) {
	rep := &RecoverReport{}
	h, herr := parseFileHeader(name, b)
	opts := WriterOptions{Writer: h.Writer, CreatedNs: h.CreatedNs}
	if herr != nil {
		if errors.Is(herr, ErrUnsupportedVersion) {
			return nil, herr
		}
		rep.HeaderRebuilt = true
		opts = WriterOptions{Writer: "edr-lite recover"}
	}
	w, err := mk(opts)
	if err != nil {
		return nil, err
	}
	var werr error
	wk := newWalker(name, b, ropts)
	wk.onFrame = func(off int64, rec []byte, f *Frame, fh *frameHeader) {
		if werr == nil {
			werr = w.writeRaw(rec, f, fh)
		}
		rep.Frames++
		rep.Messages += uint64(f.Len())
	}
	bodies := map[ingest.ContentID]ingest.Type{}
	wk.onSection = func(off int64, kind uint32, payload []byte) {
		switch kind {
		case SectionMetadata:
			if nm, data, ok := parseMetadataPayload(payload); ok && werr == nil {
				werr = w.AddMetadata(nm, data)
				rep.Metadata++
			}
		case SectionType:
			// A type that does not decode (or whose body was lost) is
			// left out: its topic reads as untyped from there on.
			if t, err := parseTypePayload(name, off, payload, bodies); err == nil && werr == nil {
				werr = w.SetTopicType(t.Name, t.Channel, t.Type, t.FromNs)
				rep.Types++
			}
		case SectionAttachment:
			if a, err := parseAttachmentPayload(name, off, payload); err == nil && werr == nil {
				werr = w.AddAttachment(a)
				rep.Attachments++
			}
		}
	}
	wk.onLoss = func(l LostRange, err *CorruptError) {
		if l.Length == 0 { // an inconsistency, not lost bytes (e.g. a stale index)
			return
		}
		rep.Lost = append(rep.Lost, l)
		rep.LostFrames += l.Frames
		rep.LostBytes += l.Length
	}
	if _, err := wk.walkGuarded(); err != nil && werr == nil {
		werr = err // the file shrank while it was read
	}
	if cerr := w.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return rep, fmt.Errorf("pack: recover %s: %w", name, werr)
	}
	return rep, nil
}

// writeRaw appends an already encoded, verified frame record.
func (w *Writer) writeRaw(rec []byte, f *Frame, h *frameHeader) error {
	if w.err != nil {
		return w.err
	}
	dst, err := w.sink.reserve(len(rec))
	if err != nil {
		return w.fail(err)
	}
	copy(dst, rec)
	w.acct.add(f, w.off, h, rec[h.tableOff:h.dataOff])
	if err := w.sink.commit(len(rec)); err != nil {
		return w.fail(err)
	}
	w.off += int64(len(rec))
	return nil
}

// walker visits every record of a file, fully checked, and resynchronises
// past damage.
type walker struct {
	path string
	b    []byte
	r    Reader // decoder (CRCs, meta, decompression)
	f    Frame

	onFrame   func(off int64, rec []byte, f *Frame, h *frameHeader)
	onSection func(off int64, kind uint32, payload []byte)
	onLoss    func(l LostRange, err *CorruptError)

	indexOK bool
	idx     *index // the file's own index, when it checks out
	lastEnd int64  // end time of the last intact frame
	acct    accounting
	md      []namedBlob
	mdOffs  []int64
	// rc answers range CRCs in constant time; built at the first damage,
	// so honest files pay nothing and damaged ones stay linear.
	rc *crcRanges
}

func (w *walker) ranges() *crcRanges {
	if w.rc == nil {
		w.rc = newCRCRanges(w.b)
	}
	return w.rc
}

// headOK and dataOK check a parsed frame header's CRCs at p through the
// range CRCs (without hashing the frame).
func (w *walker) headOK(p int64, h *frameHeader) bool {
	return w.ranges().crc(p+8, p+h.dataOff) == h.headCRC
}

func (w *walker) dataOK(p int64, h *frameHeader) bool {
	return w.ranges().crc(p+h.dataOff, p+h.recLen) == h.dataCRC
}

// sectionOK checks the CRC of a section header at p through the range
// CRCs; false when the header does not parse.
func (w *walker) sectionOK(p, end int64) bool {
	if end-p < SectionHeaderSize {
		return false
	}
	n := int64(le.Uint32(w.b[p+12:]))
	if n > MaxSectionSize || p+SectionHeaderSize+n > end {
		return false
	}
	return w.ranges().crc(p+8, p+SectionHeaderSize+n) == le.Uint32(w.b[p+4:])
}

func newWalker(path string, b []byte, opts ReaderOptions) *walker {
	w := &walker{path: path, b: b, acct: newAccounting()}
	w.r = Reader{frameDecoder: frameDecoder{path: path, codec: newCodecs(), maxMem: opts.MaxMemory}, data: b}
	return w
}

// walk visits the whole file and returns its header (zero when damaged).
func (w *walker) walk() FileHeader {
	defer w.r.codec.close()
	b := w.b
	h, herr := parseFileHeader(w.path, b)
	var ce *CorruptError
	badMagic := herr != nil && errors.Is(herr, ErrBadMagic)
	if herr != nil {
		errors.As(herr, &ce)
		// With our magic the header's bytes are lost and the records after it
		// are still ours; without, the scan from offset 0 counts the bytes.
		n := min(int64(len(b)), HeaderSize)
		if badMagic {
			n = 0
		}
		w.onLoss(LostRange{Offset: 0, Length: n, Reason: ce.Reason}, ce)
	}
	end := int64(len(b))
	indexOff, hasTrailer := parseTrailer(b)
	if hasTrailer {
		end -= TrailerSize
	} else if t := int64(len(b)) - TrailerSize; t >= HeaderSize && le.Uint32(b[t:]) == trailerMagic &&
		[8]byte(b[t+24:]) == TrailerEndMagic {
		w.onLoss(LostRange{Offset: t, Length: TrailerSize, Reason: "damaged trailer"},
			corrupt(w.path, t, ErrChecksum, "trailer does not check out"))
		end = t
	}
	if hasTrailer {
		if kind, payload, _, _, err := parseSection(b[indexOff:end]); err == nil && kind == SectionIndex {
			if x, reason := parseIndex(payload); reason == "" && x.valid(indexOff) {
				w.idx = x
			}
		}
	}
	var storedIndex []byte
	pos := min(int64(HeaderSize), end)
	if badMagic {
		pos = 0 // not even our magic: look for records from the start
	}
	for pos < end {
		n, kind, payload, reason, err := w.check(pos, end)
		if err == nil {
			if kind == SectionIndex && pos == indexOff {
				storedIndex = payload
			}
			pos += n
			continue
		}
		// Damaged: find the next intact record.
		next, lostFrames, from := w.resync(pos, end, n)
		to := int64(0)
		if next < end {
			var fh frameHeader
			if _, e := parseFrameHeader(b[next:end], &fh); e == nil {
				to = fh.timeNs
			}
		}
		if from == 0 {
			from = w.lastEnd
		}
		if w.idx != nil {
			// The index says exactly which frames the region held.
			lostFrames, from, to = w.idx.lostIn(pos, next, from, to)
		}
		l := LostRange{Offset: pos, Length: next - pos, Frames: lostFrames, FromNs: from, ToNs: to, Reason: reason}
		w.onLoss(l, corrupt(w.path, pos, err, "%s (%d bytes skipped)", reason, next-pos))
		pos = next
	}
	if hasTrailer {
		want := buildIndex(w.acct.entries, w.acct.timeSorted, w.acct.topics, w.md, w.mdOffs)
		switch {
		case storedIndex == nil:
			w.onLoss(LostRange{Offset: indexOff, Reason: "trailer points to no index"},
				corrupt(w.path, indexOff, ErrCorrupt, "trailer points to no intact index section"))
		case !bytes.Equal(storedIndex, want):
			w.onLoss(LostRange{Offset: indexOff, Reason: "index does not match frames"},
				corrupt(w.path, indexOff, ErrCorrupt, "index does not match the frames in the file"))
		default:
			w.indexOK = true
		}
	}
	return h
}

// walkGuarded is walk over a mapping: a fault on it (the file shrank
// while it was read) is the error.
func (w *walker) walkGuarded() (h FileHeader, err error) {
	defer guard(&err, w.path, w.b, debug.SetPanicOnFault(true))
	return w.walk(), nil
}

// check fully checks the record at pos. For a frame whose head checks out
// but whose data does not, n is the record length (trusted from the head).
func (w *walker) check(pos, end int64) (n int64, kind uint32, payload []byte, reason string, err error) {
	b := w.b[pos:end]
	if len(b) >= 4 && le.Uint32(b) == sectionMagic {
		if w.rc != nil && len(b) >= SectionHeaderSize && !w.sectionOK(pos, end) {
			return 0, 0, nil, "section CRC32C mismatch or bad length", ErrChecksum
		}
		kind, payload, rec, reason, err := parseSection(b)
		if err != nil {
			return 0, 0, nil, reason, err
		}
		if kind == SectionMetadata {
			nm, _, ok := parseMetadataPayload(payload)
			if !ok {
				return 0, 0, nil, "metadata section payload malformed", ErrCorrupt
			}
			w.md = append(w.md, namedBlob{name: nm})
			w.mdOffs = append(w.mdOffs, pos)
		}
		if kind != SectionIndex {
			w.onSection(pos, kind, payload)
		}
		return rec, kind, payload, "", nil
	}
	var h frameHeader
	if reason, err := parseFrameHeader(b, &h); err != nil {
		if err == ErrTruncated && len(b) >= 4 && le.Uint32(b) == frameMagic {
			return 0, 0, nil, "frame truncated (" + reason + ")", err
		}
		return 0, 0, nil, reason, err
	}
	if w.rc != nil {
		// Past damage already: a header claiming a long frame is not
		// hashed in full to find its head CRC wrong.
		if got := w.rc.crc(pos+8, pos+h.dataOff); got != h.headCRC {
			return 0, 0, nil, fmt.Sprintf("frame head CRC32C %#08x, computed %#08x", h.headCRC, got), ErrChecksum
		}
	}
	rec, err := w.r.decodeFrame(b, pos, &w.f, true)
	if err != nil {
		var ce *CorruptError
		errors.As(err, &ce)
		if headCRCOf(b[:h.recLen], &h) == h.headCRC {
			return h.recLen, 0, nil, ce.Reason, ce.Err
		}
		return 0, 0, nil, ce.Reason, ce.Err
	}
	w.acct.add(&w.f, pos, &h, b[h.tableOff:h.dataOff])
	w.lastEnd = h.endNs
	w.onFrame(pos, b[:rec], &w.f, &h)
	return rec, 0, nil, "", nil
}

// resync returns the offset of the next intact record after the damaged one
// at pos, how many frames the skipped region held, and the time of the first
// of them when known. skip > 0 is a damaged record's trusted length.
func (w *walker) resync(pos, end, skip int64) (next int64, frames int, fromNs int64) {
	b := w.b
	var h frameHeader
	if end-pos >= FrameHeaderSize {
		// A frame whose only damage is its magic still has a checking head.
		var hb [FrameHeaderSize]byte
		copy(hb[:], b[pos:])
		le.PutUint32(hb[:], frameMagic)
		if _, err := parseFrameHeader(b[pos:end], &h); err == nil || le.Uint32(b[pos:]) == frameMagic {
			frames = 1
		}
		// hb[8:] are the record's own bytes: the magic is not covered.
		if _, err := parseFrameHeaderAvail(hb[:], end-pos, &h); err == nil && w.headOK(pos, &h) {
			frames, fromNs = 1, h.timeNs
			if skip == 0 {
				skip = h.recLen
			}
		}
	} else if end-pos >= 4 && le.Uint32(b[pos:]) == frameMagic {
		frames = 1
	}
	start := pos + 1
	if skip > 0 {
		start = pos + skip
	}
	for p := start; p < end; {
		i := bytes.IndexByte(b[p:end], 'E')
		if i < 0 {
			break
		}
		p += int64(i)
		if p+4 <= end {
			// Each candidate is judged by its CRCs in constant time (range
			// CRCs); only one whose CRCs hold is decoded in full.
			switch le.Uint32(b[p:]) {
			case sectionMagic:
				if w.sectionOK(p, end) && w.intact(p, end) {
					return p, frames, fromNs
				}
			case frameMagic:
				if _, err := parseFrameHeader(b[p:end], &h); err == nil && w.headOK(p, &h) {
					if w.dataOK(p, &h) && w.intact(p, end) {
						return p, frames, fromNs
					}
					frames++ // header intact, data damaged
					if fromNs == 0 {
						fromNs = h.timeNs
					}
					p += h.recLen
					continue
				}
			}
		}
		p++
	}
	return end, frames, fromNs
}

// intact reports whether a whole, valid record starts at p (without
// side effects).
func (w *walker) intact(p, end int64) bool {
	b := w.b[p:end]
	if le.Uint32(b) == sectionMagic {
		_, _, _, _, err := parseSection(b)
		return err == nil
	}
	var f Frame
	_, err := w.r.decodeFrame(b, p, &f, true)
	return err == nil
}

// VerifyFile is a convenience that returns an error listing the first
// problems when the file does not verify.
func VerifyFile(path string) error {
	v, err := Verify(path)
	if err != nil {
		return err
	}
	if v.OK() {
		return nil
	}
	return fmt.Errorf("pack: %s: %d problems, first: %w", path, len(v.Problems), v.Problems[0])
}

// lostIn counts the indexed frames starting in [from, to) and returns their
// time span (defaults kept when there are none).
func (x *index) lostIn(from, to, fromNs, toNs int64) (n int, first, last int64) {
	first, last = fromNs, toNs
	i0 := sort.Search(x.n, func(i int) bool { o, _, _ := x.entry(i); return o >= from })
	for i := i0; i < x.n; i++ {
		off, t, e := x.entry(i)
		if off >= to {
			break
		}
		if n == 0 {
			first = t
		}
		last = e
		n++
	}
	return n, first, last
}
