package media

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Codec is a video codec this package demuxes and muxes. Its String is the
// foxglove.CompressedVideo format.
type Codec uint8

const (
	CodecNone Codec = iota // not a supported video track
	CodecH264              // H.264 / AVC: "h264"
	CodecH265              // H.265 / HEVC: "h265"
)

func (c Codec) String() string {
	switch c {
	case CodecH264:
		return "h264"
	case CodecH265:
		return "h265"
	case CodecNone:
		return "none"
	}
	return "Codec(" + strconv.Itoa(int(c)) + ")"
}

// ParseCodec parses a CompressedVideo format: "h264" or "h265".
func ParseCodec(format string) (Codec, error) {
	switch format {
	case "h264":
		return CodecH264, nil
	case "h265":
		return CodecH265, nil
	}
	return CodecNone, fmt.Errorf("%w: video format %q (want h264 or h265)", ErrUnsupported, format)
}

// MP4Options configure OpenMP4 and NewMP4Reader.
type MP4Options struct {
	// StartNs is added to every time: the file's times are relative to
	// the start of the movie (after its edit list). CreationNs gives the
	// file's own idea of when that was, when it has one.
	StartNs int64
	// TrackID selects the track by its track_ID; 0 takes the first H.264
	// or H.265 video track.
	TrackID uint32
	// MaxBoxBytes bounds a moov or moof box, which is read into memory.
	// Default DefaultMaxBoxBytes.
	MaxBoxBytes int64
	// MaxSampleBytes bounds one sample. Default DefaultMaxSampleBytes.
	MaxSampleBytes int64
	// AcceptCut reads a file cut short (a copy interrupted, a recorder
	// that lost power) up to the cut: a top-level box that runs past the
	// end of the file, and a sample whose data does, are not errors; Next
	// gives every sample wholly in the file before the first that is not,
	// then io.EOF, and Cut says where the file ends and what was lost.
	// Without it they are errors. A cut moov box is an error either way
	// (the sample tables are lost).
	AcceptCut bool
}

// Cut says where an MP4 file read with MP4Options.AcceptCut is cut short
// and what of the selected track was lost.
type Cut struct {
	// Offset is where the lost data starts: the first sample not wholly
	// in the file, else the top-level box the end of the file cuts.
	Offset int64
	// Box is the top-level box the end of the file cuts ("mdat", "moof",
	// ...; "(top level)" when fewer bytes than a box header are left) and
	// BoxOffset its offset; Box is "" when every box fits and a sample
	// points past the end. BoxMissing is the bytes the box's declared size
	// runs past the end (0 when its size field itself is cut).
	Box        string
	BoxOffset  int64
	BoxMissing int64
	Size       int64 // the file's size
	Read       int64 // samples read before the cut
	// Lost is the samples the file's tables name that are not wholly in
	// the file (the rest of the moov's sample table, or of the fragment
	// the cut falls in). AtLeast: more may have been lost (a fragmented
	// file: what fragments followed is unknown).
	Lost    int64
	AtLeast bool
}

// String says it in one line: where the file ends, in which box, what
// was read and what was lost.
func (c *Cut) String() string {
	var s string
	switch {
	case c.Box != "" && c.BoxMissing > 0:
		s = fmt.Sprintf("cut short: its %d bytes end %d bytes into box %s at offset %d, %d bytes before the box does",
			c.Size, c.Size-c.BoxOffset, c.Box, c.BoxOffset, c.BoxMissing)
	case c.Box != "":
		s = fmt.Sprintf("cut short: its %d bytes end inside the header of box %s at offset %d", c.Size, c.Box, c.BoxOffset)
	default:
		s = fmt.Sprintf("cut short: its %d bytes end before its samples do", c.Size)
	}
	s += fmt.Sprintf("; %d samples read", c.Read)
	switch {
	case c.Lost > 0 && c.AtLeast:
		s += fmt.Sprintf(", at least %d lost from offset %d on (samples %d to %d, the rest of the fragment the cut falls in; any fragments after it are unknown)",
			c.Lost, c.Offset, c.Read, c.Read+c.Lost-1)
	case c.Lost > 0:
		s += fmt.Sprintf(", samples %d to %d (%d) lost from offset %d on", c.Read, c.Read+c.Lost-1, c.Lost, c.Offset)
	case c.AtLeast:
		s += ", the samples of the cut fragment and of any after it lost (how many is unknown)"
	default:
		s += ", none lost"
	}
	return s
}

// Defaults of MP4Options.
const (
	DefaultMaxBoxBytes    = 256 << 20
	DefaultMaxSampleBytes = 64 << 20
)

// Track describes one track of an MP4 file.
type Track struct {
	ID            uint32 // track_ID (tkhd)
	Handler       string // handler type: "vide", "soun", ...
	Format        string // first sample entry type: "avc1", "hev1", "mp4a", ...
	Codec         Codec  // CodecH264 / CodecH265; CodecNone for any other track
	Timescale     uint32 // media timescale (mdhd), ticks per second
	Width, Height int    // from the visual sample entry
	Samples       int64  // samples in the moov's sample table (fragments not counted)
	Fragmented    bool   // the movie has mvex: samples (also) come in moof boxes
	// EditShiftNs is subtracted from the media times: the edit list's
	// media_time, less the duration of leading empty edits.
	EditShiftNs int64
	// EditsIgnored counts edit-list entries not applied (only leading
	// empty edits and the first media edit at rate 1 are).
	EditsIgnored int
}

// Sample is one video sample (one picture) in decode order.
type Sample struct {
	Index      int64 // position in decode order, from 0
	PTSNs      int64 // presentation time: StartNs + composition time - edit shift
	DTSNs      int64 // decode time, on the same clock
	DurationNs int64 // until the next sample's decode time
	Key        bool  // a sync sample (stss, or fragment sample flags)
	// Data is the picture in Annex B: 4-byte start codes, the sample
	// entry's parameter sets (VPS, SPS, PPS) before a key frame's NAL
	// units (after a leading access unit delimiter). Reused by the next
	// Next into this Sample.
	Data []byte
}

// MP4 demuxes one H.264 or H.265 track of an MP4 file (ISO-BMFF), plain
// or fragmented. Open it with OpenMP4 or NewMP4Reader, read samples with
// Next until io.EOF. It is not safe for concurrent use.
type MP4 struct {
	r      io.ReaderAt
	closer io.Closer
	file   string
	size   int64
	opts   MP4Options

	tracks     []Track
	trex       map[uint32]trexDefaults // mvex defaults by track_ID
	creationNs int64
	t          *trak // the selected track
	fragmented bool

	stbl stblCursor
	frag fragCursor

	// end is where the readable top-level boxes end: the file's size, or
	// the offset of the box the end of the file cuts (topCut, AcceptCut).
	end    int64
	topCut *Cut
	cut    *Cut // set when reading reached the cut

	index   int64
	claimed uint64 // bytes the samples read so far claim (at least 1 each)
	scratch []byte
	win     []byte // read-ahead: bytes [winOff, winOff+len(win)) of the file
	winOff  int64
	hdrBuf  [boxLargeHeader]byte
	err     error // sticky
}

// trak is the selected track's decoding state.
type trak struct {
	Track
	path      string
	nalLen    int    // NAL unit length field size, 1..4
	params    []byte // parameter sets in Annex B
	emptyNs   int64  // leading empty edits
	mediaTime int64  // first media edit's media_time, ticks

	stbl      box // for the tables, parsed when selected
	stblPath  string
	stsdEntry box
	mdhdOff   int64 // for errors
	elstOff   int64
}

type trexDefaults struct {
	duration, size, flags uint32
}

// OpenMP4 opens an MP4 file; see NewMP4Reader. Close closes the file.
func OpenMP4(path string, opts MP4Options) (*MP4, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	m, err := NewMP4Reader(f, st.Size(), path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	m.closer = f
	return m, nil
}

// NewMP4Reader reads the MP4 held by r (size bytes; name is for errors):
// it finds the moov box, lists the tracks, selects one (opts.TrackID, or
// the first H.264/H.265 video track) and checks its sample tables against
// the file. Memory is bounded by the moov box (at most
// opts.MaxBoxBytes) and one moof box at a time; every table's claimed
// size is checked against the bytes that hold it before anything is
// allocated.
func NewMP4Reader(r io.ReaderAt, size int64, name string, opts MP4Options) (*MP4, error) {
	if opts.MaxBoxBytes <= 0 {
		opts.MaxBoxBytes = DefaultMaxBoxBytes
	}
	if opts.MaxSampleBytes <= 0 {
		opts.MaxSampleBytes = DefaultMaxSampleBytes
	}
	m := &MP4{r: r, file: name, size: size, opts: opts, end: size}
	var moov box
	found := false
	for off := int64(0); off < size; {
		typ, hdr, total, err := m.topBox(off)
		if err != nil {
			return nil, err
		}
		if typ == typeMoov {
			if found {
				return nil, boxErr(name, "moov", off, ErrMalformed, "a second moov box")
			}
			if m.topCut != nil {
				return nil, boxErr(name, "moov", off, ErrMalformed,
					"the file ends %d bytes into the moov box, %d bytes before the box does: its sample tables are lost (nothing can be read)",
					size-off, m.topCut.BoxMissing)
			}
			if total > opts.MaxBoxBytes {
				return nil, boxErr(name, "moov", off, ErrLimit, "%d bytes, over MaxBoxBytes %d", total, opts.MaxBoxBytes)
			}
			data := make([]byte, total-hdr)
			if _, err := readFullAt(r, data, off+hdr); err != nil {
				return nil, err
			}
			moov, found = box{typ: typ, off: off, hdr: int(hdr), data: data}, true
		}
		if m.topCut != nil {
			break
		}
		off += total
	}
	if !found {
		if c := m.topCut; c != nil {
			return nil, boxErr(name, "moov", 0, ErrMalformed,
				"no moov box before the end of the file, which is cut short inside box %s at offset %d: the sample tables are lost (nothing can be read)",
				c.Box, c.BoxOffset)
		}
		return nil, boxErr(name, "moov", 0, ErrMalformed, "no moov box in %d bytes", size)
	}
	if err := m.parseMoov(moov); err != nil {
		return nil, err
	}
	return m, nil
}

// Tracks lists every track of the file, in file order.
func (m *MP4) Tracks() []Track { return m.tracks }

// Track describes the selected track.
func (m *MP4) Track() Track { return m.t.Track }

// CreationNs is the movie's creation time (mvhd) in ns since the UNIX
// epoch, or 0 when the file does not say.
func (m *MP4) CreationNs() int64 { return m.creationNs }

// Rewind makes the next Next read the first sample again (and clears an
// error other than a closed reader).
func (m *MP4) Rewind() {
	if m.err == os.ErrClosed {
		return
	}
	m.err, m.index, m.claimed = nil, 0, 0
	c := &m.stbl
	c.i, c.sttsI, c.sttsLeft, c.delta, c.cttsI, c.cttsLeft, c.cto, c.stssI = 0, 0, 0, 0, 0, 0, 0, 0
	c.stscI, c.chunk, c.chunkLeft, c.pos, c.dts = 0, 0, 0, 0, 0
	f := &m.frag
	f.next, f.runs, f.ri, f.si, f.pos, f.dts = 0, f.runs[:0], 0, 0, 0, 0
}

// SetStartNs changes MP4Options.StartNs (the time of the movie's time 0)
// for the samples read from now on, and rewinds. A caller that read the
// file through once with StartNs 0 can so place it by what it holds (its
// duration, its first decode time) without opening it again.
func (m *MP4) SetStartNs(ns int64) {
	m.opts.StartNs = ns
	m.Rewind()
}

// Close closes the file OpenMP4 opened; for NewMP4Reader it does nothing.
func (m *MP4) Close() error {
	m.err = os.ErrClosed
	if m.closer != nil {
		c := m.closer
		m.closer = nil
		return c.Close()
	}
	return nil
}

// topBox reads the header of the top-level box at off. With AcceptCut, a
// box the end of the file cuts is recorded as m.topCut (and m.end set to
// its offset) and returned with the bytes the file holds of it.
func (m *MP4) topBox(off int64) (typ uint32, hdr, total int64, err error) {
	if !m.opts.AcceptCut {
		return topHeader(m.r, m.file, off, m.size, &m.hdrBuf)
	}
	typ, hdr, declared, err := topHeaderCut(m.r, m.file, off, m.size, &m.hdrBuf)
	if err != nil {
		return 0, 0, 0, err
	}
	left := m.size - off
	if hdr > 0 && declared <= uint64(left) {
		return typ, hdr, int64(declared), nil
	}
	if m.topCut == nil {
		c := &Cut{Offset: off, Box: "(top level)", BoxOffset: off, Size: m.size}
		if hdr != 0 {
			c.Box = fourCCString(typ)
		}
		if hdr > 0 {
			c.BoxMissing = int64(min(declared-uint64(left), 1<<62))
		}
		m.topCut, m.end = c, off
	}
	return typ, max(hdr, 0), left, nil
}

// Cut says where the file is cut short and what was lost, once Next has
// returned io.EOF (MP4Options.AcceptCut); nil for a whole file.
func (m *MP4) Cut() *Cut { return m.cut }

// Seconds from 1904-01-01 (ISO-BMFF times) to 1970-01-01.
const mp4Epoch = 2082844800

func fullBox(b box, file, path string, minLen int) (version uint8, flags uint32, body []byte, err error) {
	if len(b.data) < fullBoxHeader+minLen {
		return 0, 0, nil, boxErr(file, path, b.off, ErrMalformed, "%d bytes, need %d", len(b.data), fullBoxHeader+minLen)
	}
	v := binary.BigEndian.Uint32(b.data)
	return uint8(v >> 24), v & 0xFFFFFF, b.data[fullBoxHeader:], nil
}

func (m *MP4) parseMoov(moov box) error {
	it := children(m.file, "moov", moov)
	var movieTimescale uint32
	var mvhdOff int64
	var traks []*trak
	trex := map[uint32]trexDefaults{}
	for b, ok := it.next(); ok; b, ok = it.next() {
		switch b.typ {
		case typeMvhd:
			mvhdOff = b.off
			v, _, body, err := fullBox(b, m.file, "moov/mvhd", 20)
			if err != nil {
				return err
			}
			var created uint64
			if v == 1 {
				if len(body) < 28 {
					return boxErr(m.file, "moov/mvhd", b.off, ErrMalformed, "version 1 in %d bytes", len(b.data))
				}
				created, movieTimescale = binary.BigEndian.Uint64(body), binary.BigEndian.Uint32(body[16:])
			} else {
				created, movieTimescale = uint64(binary.BigEndian.Uint32(body)), binary.BigEndian.Uint32(body[8:])
			}
			if created > mp4Epoch && created < mp4Epoch+1<<33 {
				m.creationNs = int64(created-mp4Epoch) * nsPerSec
			}
		case typeTrak:
			t, err := m.parseTrak(b, fmt.Sprintf("moov/trak[%d]", len(traks)))
			if err != nil {
				return err
			}
			traks = append(traks, t)
		case typeMvex:
			m.fragmented = true
			mit := children(m.file, "moov/mvex", b)
			for c, ok := mit.next(); ok; c, ok = mit.next() {
				if c.typ != typeTrex {
					continue
				}
				_, _, body, err := fullBox(c, m.file, "moov/mvex/trex", 20)
				if err != nil {
					return err
				}
				trex[binary.BigEndian.Uint32(body)] = trexDefaults{
					duration: binary.BigEndian.Uint32(body[8:]),
					size:     binary.BigEndian.Uint32(body[12:]),
					flags:    binary.BigEndian.Uint32(body[16:]),
				}
			}
			if mit.err != nil {
				return mit.err
			}
		}
	}
	if it.err != nil {
		return it.err
	}
	m.trex = trex
	for _, t := range traks {
		t.Fragmented = m.fragmented
		m.tracks = append(m.tracks, t.Track)
		if m.t == nil && t.Codec != CodecNone && (m.opts.TrackID == 0 || m.opts.TrackID == t.ID) {
			m.t = t
		}
	}
	if m.t == nil {
		if m.opts.TrackID != 0 {
			return fmt.Errorf("%w: %s: no H.264/H.265 track with track_ID %d", ErrNoTrack, m.file, m.opts.TrackID)
		}
		return fmt.Errorf("%w: %s", ErrNoTrack, m.file)
	}
	return m.selectTrack(movieTimescale, mvhdOff)
}

// parseTrak reads a trak's headers, edit list and first sample entry
// type, and keeps its stbl for selectTrack.
func (m *MP4) parseTrak(tb box, path string) (*trak, error) {
	t := &trak{path: path}
	var edts box
	it := children(m.file, path, tb)
	for b, ok := it.next(); ok; b, ok = it.next() {
		switch b.typ {
		case typeTkhd:
			v, _, body, err := fullBox(b, m.file, path+"/tkhd", 12)
			if err != nil {
				return nil, err
			}
			if v == 1 {
				if len(body) < 20 {
					return nil, boxErr(m.file, path+"/tkhd", b.off, ErrMalformed, "version 1 in %d bytes", len(b.data))
				}
				t.ID = binary.BigEndian.Uint32(body[16:])
			} else {
				t.ID = binary.BigEndian.Uint32(body[8:])
			}
		case typeEdts:
			edts = b
		case typeMdia:
			if err := m.parseMdia(t, b, path+"/mdia"); err != nil {
				return nil, err
			}
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	if edts.data != nil {
		eit := children(m.file, path+"/edts", edts)
		for b, ok := eit.next(); ok; b, ok = eit.next() {
			if b.typ == typeElst {
				t.elstOff = b.off
				if err := m.parseElst(t, b, path+"/edts/elst"); err != nil {
					return nil, err
				}
				break
			}
		}
		if eit.err != nil {
			return nil, eit.err
		}
	}
	return t, nil
}

func (m *MP4) parseMdia(t *trak, mdia box, path string) error {
	it := children(m.file, path, mdia)
	for b, ok := it.next(); ok; b, ok = it.next() {
		switch b.typ {
		case typeMdhd:
			t.mdhdOff = b.off
			v, _, body, err := fullBox(b, m.file, path+"/mdhd", 16)
			if err != nil {
				return err
			}
			if v == 1 {
				if len(body) < 28 {
					return boxErr(m.file, path+"/mdhd", b.off, ErrMalformed, "version 1 in %d bytes", len(b.data))
				}
				t.Timescale = binary.BigEndian.Uint32(body[16:])
			} else {
				t.Timescale = binary.BigEndian.Uint32(body[8:])
			}
		case typeHdlr:
			_, _, body, err := fullBox(b, m.file, path+"/hdlr", 8)
			if err != nil {
				return err
			}
			t.Handler = fourCCString(binary.BigEndian.Uint32(body[4:]))
		case typeMinf:
			mit := children(m.file, path+"/minf", b)
			for c, ok := mit.next(); ok; c, ok = mit.next() {
				if c.typ == typeStbl {
					t.stbl, t.stblPath = c, path+"/minf/stbl"
					if err := m.parseStsd(t); err != nil {
						return err
					}
				}
			}
			if mit.err != nil {
				return mit.err
			}
		}
	}
	if it.err != nil {
		return it.err
	}
	if t.Handler != "vide" {
		t.Codec = CodecNone
	}
	return nil
}

// Visual sample entry: 8 bytes of SampleEntry, 16 reserved, width u16,
// height u16, then 50 bytes to the child boxes.
const (
	visualEntryWidth    = 24
	visualEntryChildren = 78
)

// parseStsd reads the first sample entry's type (and size, for a visual
// entry); the codec configuration is read by selectTrack.
func (m *MP4) parseStsd(t *trak) error {
	it := children(m.file, t.stblPath, t.stbl)
	for b, ok := it.next(); ok; b, ok = it.next() {
		if b.typ != typeStsd {
			continue
		}
		_, _, body, err := fullBox(b, m.file, t.stblPath+"/stsd", 4)
		if err != nil {
			return err
		}
		if binary.BigEndian.Uint32(body) == 0 {
			return nil
		}
		eit := &boxIter{file: m.file, path: t.stblPath + "/stsd", b: body[4:], base: b.off + int64(b.hdr) + fullBoxHeader + 4}
		e, ok := eit.next()
		if !ok {
			if eit.err != nil {
				return eit.err
			}
			return boxErr(m.file, t.stblPath+"/stsd", b.off, ErrMalformed, "entry count > 0 but no entry")
		}
		t.Format = fourCCString(e.typ)
		t.stsdEntry = e
		switch e.typ {
		case typeAvc1, typeAvc3:
			t.Codec = CodecH264
		case typeHvc1, typeHev1:
			t.Codec = CodecH265
		}
		if t.Codec != CodecNone && len(e.data) >= visualEntryChildren {
			t.Width = int(binary.BigEndian.Uint16(e.data[visualEntryWidth:]))
			t.Height = int(binary.BigEndian.Uint16(e.data[visualEntryWidth+2:]))
		}
		return nil
	}
	return it.err
}

// parseElst applies leading empty edits and the first media edit at rate
// 1; anything else is counted in EditsIgnored.
func (m *MP4) parseElst(t *trak, b box, path string) error {
	v, _, body, err := fullBox(b, m.file, path, 4)
	if err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(body)
	esize := 12
	if v == 1 {
		esize = 20
	}
	if uint64(n)*uint64(esize) > uint64(len(body)-4) {
		return boxErr(m.file, path, b.off, ErrMalformed, "%d entries of %d bytes in %d bytes", n, esize, len(body)-4)
	}
	var empty uint64
	media := false
entries:
	for i := uint32(0); i < n; i++ {
		e := body[4+int(i)*esize:]
		var dur uint64
		var mt int64
		var rate uint32
		if v == 1 {
			dur, mt, rate = binary.BigEndian.Uint64(e), int64(binary.BigEndian.Uint64(e[8:])), binary.BigEndian.Uint32(e[16:])
		} else {
			dur, mt, rate = uint64(binary.BigEndian.Uint32(e)), int64(int32(binary.BigEndian.Uint32(e[4:]))), binary.BigEndian.Uint32(e[8:])
		}
		switch {
		case media:
			t.EditsIgnored++
		case mt == -1:
			if empty+dur < empty {
				return boxErr(m.file, path, b.off, ErrMalformed, "empty edits overflow")
			}
			empty += dur
		case rate != 0x00010000 || mt < 0:
			t.EditsIgnored = int(n)
			t.mediaTime, empty = 0, 0
			break entries // the list is not simple: ignore it all
		default:
			t.mediaTime, media = mt, true
		}
	}
	if empty > 0 {
		t.emptyNs = int64(min(empty, 1<<62)) // converted by selectTrack with the movie timescale
	}
	return nil
}

// selectTrack reads the selected track's codec configuration and checks
// its sample tables.
func (m *MP4) selectTrack(movieTimescale uint32, mvhdOff int64) error {
	t := m.t
	if t.Timescale == 0 {
		return boxErr(m.file, t.path+"/mdia/mdhd", t.mdhdOff, ErrMalformed, "timescale 0")
	}
	if t.emptyNs != 0 {
		if movieTimescale == 0 {
			return boxErr(m.file, "moov/mvhd", mvhdOff, ErrMalformed, "timescale 0 with empty edits")
		}
		ns, ok := ticksToNs(t.emptyNs, movieTimescale)
		if !ok {
			return boxErr(m.file, t.path+"/edts/elst", t.elstOff, ErrMalformed, "empty edits overflow")
		}
		t.emptyNs = ns
	}
	shift, ok := ticksToNs(t.mediaTime, t.Timescale)
	if !ok {
		return boxErr(m.file, t.path+"/edts/elst", t.elstOff, ErrMalformed, "media_time overflows")
	}
	t.EditShiftNs = shift - t.emptyNs
	if err := m.parseCodecConfig(t); err != nil {
		return err
	}
	if err := m.stbl.init(m, t); err != nil {
		return err
	}
	t.Samples = int64(m.stbl.n)
	for i := range m.tracks {
		if m.tracks[i].ID == t.ID {
			m.tracks[i] = t.Track
		}
	}
	m.frag.init(m)
	return nil
}

// parseCodecConfig reads avcC / hvcC: the NAL length size and the
// parameter sets (Annex B, VPS then SPS then PPS).
func (m *MP4) parseCodecConfig(t *trak) error {
	e := t.stsdEntry
	path := t.stblPath + "/stsd/" + t.Format
	if len(e.data) < visualEntryChildren {
		return boxErr(m.file, path, e.off, ErrMalformed, "visual sample entry of %d bytes", len(e.data))
	}
	it := &boxIter{file: m.file, path: path, b: e.data[visualEntryChildren:], base: e.off + int64(e.hdr) + visualEntryChildren}
	want := typeAvcC
	if t.Codec == CodecH265 {
		want = typeHvcC
	}
	for b, ok := it.next(); ok; b, ok = it.next() {
		if b.typ != want {
			continue
		}
		var err error
		if t.Codec == CodecH264 {
			t.nalLen, t.params, err = parseAvcC(b.data)
		} else {
			t.nalLen, t.params, err = parseHvcC(b.data)
		}
		if err != nil {
			return boxErr(m.file, path+"/"+fourCCString(want), b.off, ErrMalformed, "%v", err)
		}
		return nil
	}
	if it.err != nil {
		return it.err
	}
	return boxErr(m.file, path, e.off, ErrMalformed, "no %s box", fourCCString(want))
}
