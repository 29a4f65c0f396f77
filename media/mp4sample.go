package media

import (
	"encoding/binary"
	"io"
	"math"
	"slices"
)

// table is a sample table's entries, bounds-checked against its box.
type table struct {
	b    []byte // the entries
	n    uint32 // entry count
	off  int64  // box offset, for errors
	path string
}

func (t *table) u32(i uint32, at int) uint32 { return binary.BigEndian.Uint32(t.b[int(i)*at:]) }

// sampleLoc is where one sample is and when.
type sampleLoc struct {
	off      int64
	size     uint32
	dts      int64 // ticks
	dur      uint32
	cto      int32
	key      bool
	fromFrag bool   // the offset came from a trun (else stco/co64)
	srcOff   int64  // offset of the box that gave the offset
	srcPath  string // and its path
}

// stblCursor walks a progressive sample table (stts, ctts, stss, stsc,
// stsz/stz2, stco/co64) one sample at a time, without expanding it: the
// memory is the tables themselves, and every step does bounded work.
type stblCursor struct {
	n                                  uint32
	stts, ctts, stss, stsc, stco, stsz table
	hasCtts, hasStss, co64             bool
	constSize                          uint32
	szBits                             uint8
	i                                  uint32
	sttsI, sttsLeft, delta             uint32
	cttsI, cttsLeft                    uint32
	cto                                int32
	stssI                              uint32
	stscI, chunk, chunkLeft            uint32
	pos                                int64
	dts                                int64
}

// readTable reads a full box holding hdrWords 32-bit words (the entry
// count last) and entries of esize bits each, and checks that the box
// holds every entry it claims.
func readTable(m *MP4, b box, path string, hdrWords, ebits int) (table, []byte, error) {
	_, _, body, err := fullBox(b, m.file, path, 4*hdrWords)
	if err != nil {
		return table{}, nil, err
	}
	n := binary.BigEndian.Uint32(body[4*(hdrWords-1):])
	entries := body[4*hdrWords:]
	if need := (uint64(n)*uint64(ebits) + 7) / 8; need > uint64(len(entries)) {
		return table{}, nil, boxErr(m.file, path, b.off, ErrMalformed,
			"%d entries need %d bytes, the box holds %d", n, need, len(entries))
	}
	return table{b: entries, n: n, off: b.off, path: path}, body, nil
}

func (c *stblCursor) init(m *MP4, t *trak) error {
	var seen = map[uint32]bool{}
	var err error
	sizes := false
	it := children(m.file, t.stblPath, t.stbl)
	for b, ok := it.next(); ok; b, ok = it.next() {
		path := t.stblPath + "/" + fourCCString(b.typ)
		switch b.typ {
		case typeStts, typeCtts, typeStss, typeStsc, typeStsz, typeStz2, typeStco, typeCo64:
		default:
			continue
		}
		if seen[b.typ] || (sizes && (b.typ == typeStsz || b.typ == typeStz2)) ||
			(b.typ == typeStco && seen[typeCo64]) || (b.typ == typeCo64 && seen[typeStco]) {
			return boxErr(m.file, path, b.off, ErrMalformed, "a second sample size, chunk offset or %s box", fourCCString(b.typ))
		}
		seen[b.typ] = true
		switch b.typ {
		case typeStts:
			c.stts, _, err = readTable(m, b, path, 1, 64)
		case typeCtts:
			c.ctts, _, err = readTable(m, b, path, 1, 64)
			c.hasCtts = true
		case typeStss:
			c.stss, _, err = readTable(m, b, path, 1, 32)
			c.hasStss = true
		case typeStsc:
			c.stsc, _, err = readTable(m, b, path, 1, 96)
		case typeStco:
			c.stco, _, err = readTable(m, b, path, 1, 32)
		case typeCo64:
			c.stco, _, err = readTable(m, b, path, 1, 64)
			c.co64 = true
		case typeStsz:
			sizes = true
			var body []byte
			if _, _, body, err = fullBox(b, m.file, path, 8); err != nil {
				return err
			}
			c.constSize = binary.BigEndian.Uint32(body)
			if c.constSize != 0 {
				c.stsz = table{n: binary.BigEndian.Uint32(body[4:]), off: b.off, path: path}
				if uint64(c.stsz.n)*uint64(c.constSize) > uint64(m.size) {
					return boxErr(m.file, path, b.off, ErrMalformed, "%d samples of %d bytes do not fit in the file's %d bytes",
						c.stsz.n, c.constSize, m.size)
				}
			} else {
				c.stsz, _, err = readTable(m, b, path, 2, 32)
				c.szBits = 32
			}
		case typeStz2:
			sizes = true
			var body []byte
			if _, _, body, err = fullBox(b, m.file, path, 8); err != nil {
				return err
			}
			c.szBits = body[3]
			if c.szBits != 4 && c.szBits != 8 && c.szBits != 16 {
				return boxErr(m.file, path, b.off, ErrMalformed, "field size %d", c.szBits)
			}
			c.stsz, _, err = readTable(m, b, path, 2, int(c.szBits))
		}
		if err != nil {
			return err
		}
	}
	if it.err != nil {
		return it.err
	}
	c.n = c.stsz.n
	if c.n == 0 {
		return nil
	}
	for _, need := range []uint32{typeStts, typeStsc, typeStco} {
		if !seen[need] && !(need == typeStco && seen[typeCo64]) {
			return boxErr(m.file, t.stblPath, t.stbl.off, ErrMalformed, "%d samples but no %s box", c.n, fourCCString(need))
		}
	}
	// stts must time every sample.
	var timed uint64
	for i := uint32(0); i < c.stts.n && timed < uint64(c.n); i++ {
		timed += uint64(c.stts.u32(i, 8))
	}
	if timed < uint64(c.n) {
		return boxErr(m.file, c.stts.path, c.stts.off, ErrMalformed, "times %d of %d samples", timed, c.n)
	}
	// stsc: first chunks increasing from 1; the chunks must hold every sample.
	var capacity uint64
	for i := uint32(0); i < c.stsc.n; i++ {
		first := c.stsc.u32(i, 12)
		last := c.stco.n + 1 // one past the last chunk of this run
		if i+1 < c.stsc.n {
			last = c.stsc.u32(i+1, 12)
		}
		if first == 0 || (i == 0 && first != 1) || last <= first && i+1 < c.stsc.n {
			return boxErr(m.file, c.stsc.path, c.stsc.off, ErrMalformed, "entry %d: first_chunk %d, next %d", i, first, last)
		}
		if last > first && capacity < uint64(c.n) {
			capacity += uint64(last-first) * uint64(binary.BigEndian.Uint32(c.stsc.b[int(i)*12+4:]))
		}
	}
	if capacity < uint64(c.n) {
		return boxErr(m.file, c.stsc.path, c.stsc.off, ErrMalformed,
			"%d chunks hold %d of %d samples", c.stco.n, capacity, c.n)
	}
	return nil
}

// size returns the size of sample i.
func (c *stblCursor) size(i uint32) uint32 {
	switch c.szBits {
	case 0:
		return c.constSize
	case 32:
		return binary.BigEndian.Uint32(c.stsz.b[4*int(i):])
	case 16:
		return uint32(binary.BigEndian.Uint16(c.stsz.b[2*int(i):]))
	case 8:
		return uint32(c.stsz.b[i])
	}
	v := c.stsz.b[i/2]
	if i%2 == 0 {
		return uint32(v >> 4)
	}
	return uint32(v & 15)
}

func (c *stblCursor) next(m *MP4, loc *sampleLoc) (bool, error) {
	if c.i >= c.n {
		return false, nil
	}
	for c.chunkLeft == 0 { // bounded: every turn moves to the next chunk
		c.chunk++
		if c.chunk > c.stco.n {
			return false, boxErr(m.file, c.stsc.path, c.stsc.off, ErrMalformed, "sample %d is past the last chunk", c.i)
		}
		for c.stscI+1 < c.stsc.n && c.chunk >= c.stsc.u32(c.stscI+1, 12) {
			c.stscI++
		}
		c.chunkLeft = binary.BigEndian.Uint32(c.stsc.b[int(c.stscI)*12+4:])
		if c.co64 {
			c.pos = int64(binary.BigEndian.Uint64(c.stco.b[8*int(c.chunk-1):]))
		} else {
			c.pos = int64(c.stco.u32(c.chunk-1, 4))
		}
	}
	*loc = sampleLoc{off: c.pos, size: c.size(c.i), dts: c.dts, srcOff: c.stco.off, srcPath: c.stco.path}
	c.chunkLeft--
	c.pos += int64(loc.size)
	for c.sttsLeft == 0 { // bounded by the entries: init checked they time every sample
		c.sttsLeft, c.delta = c.stts.u32(c.sttsI, 8), binary.BigEndian.Uint32(c.stts.b[8*int(c.sttsI)+4:])
		c.sttsI++
	}
	c.sttsLeft--
	loc.dur = c.delta
	if c.dts > math.MaxInt64-int64(c.delta) {
		return false, boxErr(m.file, c.stts.path, c.stts.off, ErrMalformed, "decode time overflows at sample %d", c.i)
	}
	c.dts += int64(c.delta)
	if c.hasCtts {
		for c.cttsLeft == 0 && c.cttsI < c.ctts.n {
			// Version 0 offsets are read as signed too, as other readers do.
			c.cttsLeft, c.cto = c.ctts.u32(c.cttsI, 8), int32(binary.BigEndian.Uint32(c.ctts.b[8*int(c.cttsI)+4:]))
			c.cttsI++
		}
		if c.cttsLeft > 0 {
			c.cttsLeft--
			loc.cto = c.cto
		}
	}
	loc.key = true
	if c.hasStss {
		for c.stssI < c.stss.n && c.stss.u32(c.stssI, 4) < c.i+1 {
			c.stssI++
		}
		loc.key = c.stssI < c.stss.n && c.stss.u32(c.stssI, 4) == c.i+1
	}
	c.i++
	return true, nil
}

// trun flags and tfhd flags (ISO/IEC 14496-12, 8.8.7 and 8.8.8).
const (
	trunDataOffset      = 0x1
	trunFirstFlags      = 0x4
	trunDuration        = 0x100
	trunSize            = 0x200
	trunFlags           = 0x400
	trunCTO             = 0x800
	tfhdBaseOffset      = 0x1
	tfhdDescIndex       = 0x2
	tfhdDuration        = 0x8
	tfhdSize            = 0x10
	tfhdFlags           = 0x20
	tfhdDurationEmpty   = 0x10000
	tfhdDefaultBaseMoof = 0x20000
	sampleNonSync       = 0x10000
)

// trunRun is one trun of the selected track.
type trunRun struct {
	entries    []byte
	count      uint32
	flags      uint32
	firstFlags uint32
	esize      int
	dataPos    int64
	def        trexDefaults
	tfdt       int64
	hasTfdt    bool // first run of a traf with a tfdt
	off        int64
}

// fragCursor walks the moof boxes of a fragmented file, one at a time.
type fragCursor struct {
	next  int64 // next top-level offset to look at
	on    bool
	buf   []byte
	runs  []trunRun
	ri    int
	si    uint32
	pos   int64
	dts   int64
	track uint32
}

func (f *fragCursor) init(m *MP4) {
	f.on = m.fragmented
	f.track = m.t.ID
}

func (f *fragCursor) nextSample(m *MP4, loc *sampleLoc) (bool, error) {
	for {
		if f.ri < len(f.runs) && f.si < f.runs[f.ri].count {
			break
		}
		if f.ri+1 < len(f.runs) {
			f.ri++
			f.si = 0
		} else {
			ok, err := f.loadMoof(m)
			if err != nil || !ok {
				return false, err
			}
			f.ri, f.si = 0, 0
			if len(f.runs) == 0 {
				continue
			}
		}
		r := &f.runs[f.ri]
		f.pos = r.dataPos
		if r.hasTfdt {
			f.dts = r.tfdt
		}
	}
	r := &f.runs[f.ri]
	e := r.entries[int(f.si)*r.esize:]
	dur, size, flags := r.def.duration, r.def.size, r.def.flags
	var cto int32
	p := 0
	if r.flags&trunDuration != 0 {
		dur = binary.BigEndian.Uint32(e[p:])
		p += 4
	}
	if r.flags&trunSize != 0 {
		size = binary.BigEndian.Uint32(e[p:])
		p += 4
	}
	if r.flags&trunFlags != 0 {
		flags = binary.BigEndian.Uint32(e[p:])
		p += 4
	}
	if f.si == 0 && r.flags&trunFirstFlags != 0 {
		flags = r.firstFlags
	}
	if r.flags&trunCTO != 0 {
		cto = int32(binary.BigEndian.Uint32(e[p:]))
	}
	*loc = sampleLoc{off: f.pos, size: size, dts: f.dts, dur: dur, cto: cto, key: flags&sampleNonSync == 0,
		fromFrag: true, srcOff: r.off, srcPath: "moof/traf/trun"}
	if f.dts > math.MaxInt64-int64(dur) {
		return false, boxErr(m.file, "moof/traf/trun", r.off, ErrMalformed, "decode time overflows")
	}
	f.dts += int64(dur)
	f.pos += int64(size)
	f.si++
	return true, nil
}

// loadMoof finds the next moof box and parses the selected track's runs.
func (f *fragCursor) loadMoof(m *MP4) (bool, error) {
	f.runs = f.runs[:0]
	for f.next < m.end { // the boxes before the cut (AcceptCut) are whole
		typ, hdr, total, err := topHeader(m.r, m.file, f.next, m.size, &m.hdrBuf)
		if err != nil {
			return false, err
		}
		off := f.next
		f.next += total
		if typ != typeMoof {
			continue
		}
		if total > m.opts.MaxBoxBytes {
			return false, boxErr(m.file, "moof", off, ErrLimit, "%d bytes, over MaxBoxBytes %d", total, m.opts.MaxBoxBytes)
		}
		f.buf = slices.Grow(f.buf[:0], int(total-hdr))[:total-hdr]
		if _, err := readFullAt(m.r, f.buf, off+hdr); err != nil {
			return false, err
		}
		return true, f.parseMoof(m, box{typ: typ, off: off, hdr: int(hdr), data: f.buf})
	}
	return false, nil
}

func (f *fragCursor) parseMoof(m *MP4, moof box) error {
	it := children(m.file, "moof", moof)
	prevEnd := moof.off // end of the previous traf's data
	first := true
	for b, ok := it.next(); ok; b, ok = it.next() {
		if b.typ != typeTraf {
			continue
		}
		end, err := f.parseTraf(m, moof.off, b, first, prevEnd)
		if err != nil {
			return err
		}
		prevEnd, first = end, false
	}
	return it.err
}

// parseTraf reads one traf: its base data offset, decode time and runs
// (kept for the selected track; sized for any track, since the next traf
// may start where this one's data ends). It returns the end of its data.
func (f *fragCursor) parseTraf(m *MP4, moofOff int64, traf box, first bool, prevEnd int64) (int64, error) {
	var tfhd, tfdt box
	it := children(m.file, "moof/traf", traf)
	for b, ok := it.next(); ok; b, ok = it.next() {
		switch b.typ {
		case typeTfhd:
			if tfhd.data == nil {
				tfhd = b
			}
		case typeTfdt:
			if tfdt.data == nil {
				tfdt = b
			}
		}
	}
	if it.err != nil {
		return 0, it.err
	}
	if tfhd.data == nil {
		return 0, boxErr(m.file, "moof/traf", traf.off, ErrMalformed, "no tfhd box")
	}
	_, flags, body, err := fullBox(tfhd, m.file, "moof/traf/tfhd", 4)
	if err != nil {
		return 0, err
	}
	track := binary.BigEndian.Uint32(body)
	def := m.trex[track]
	base := moofOff
	if !first && flags&tfhdDefaultBaseMoof == 0 {
		base = prevEnd
	}
	p := 4
	field := func(bit uint32, n int) (uint64, bool) {
		if flags&bit == 0 {
			return 0, true
		}
		if p+n > len(body) {
			return 0, false
		}
		var v uint64
		if n == 8 {
			v = binary.BigEndian.Uint64(body[p:])
		} else {
			v = uint64(binary.BigEndian.Uint32(body[p:]))
		}
		p += n
		return v, true
	}
	bo, ok1 := field(tfhdBaseOffset, 8)
	_, ok2 := field(tfhdDescIndex, 4)
	d, ok3 := field(tfhdDuration, 4)
	s, ok4 := field(tfhdSize, 4)
	fl, ok5 := field(tfhdFlags, 4)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return 0, boxErr(m.file, "moof/traf/tfhd", tfhd.off, ErrMalformed, "flags 0x%x need more than %d bytes", flags, len(tfhd.data))
	}
	if flags&tfhdBaseOffset != 0 {
		if bo > uint64(m.size) {
			return 0, boxErr(m.file, "moof/traf/tfhd", tfhd.off, ErrMalformed, "base_data_offset %d past the end of the file", bo)
		}
		base = int64(bo)
	}
	if flags&tfhdDuration != 0 {
		def.duration = uint32(d)
	}
	if flags&tfhdSize != 0 {
		def.size = uint32(s)
	}
	if flags&tfhdFlags != 0 {
		def.flags = uint32(fl)
	}
	mine := track == f.track
	var decode int64
	hasTfdt := false
	if mine && tfdt.data != nil {
		v, _, body, err := fullBox(tfdt, m.file, "moof/traf/tfdt", 4)
		if err != nil {
			return 0, err
		}
		t := uint64(binary.BigEndian.Uint32(body))
		if v == 1 {
			if len(body) < 8 {
				return 0, boxErr(m.file, "moof/traf/tfdt", tfdt.off, ErrMalformed, "version 1 in %d bytes", len(tfdt.data))
			}
			t = binary.BigEndian.Uint64(body)
		}
		if t > math.MaxInt64/2 {
			return 0, boxErr(m.file, "moof/traf/tfdt", tfdt.off, ErrMalformed, "baseMediaDecodeTime %d", t)
		}
		decode, hasTfdt = int64(t), true
	}
	end := base
	firstRun := true
	it = children(m.file, "moof/traf", traf)
	for b, ok := it.next(); ok; b, ok = it.next() {
		if b.typ != typeTrun || flags&tfhdDurationEmpty != 0 {
			continue
		}
		_, tflags, body, err := fullBox(b, m.file, "moof/traf/trun", 4)
		if err != nil {
			return 0, err
		}
		r := trunRun{count: binary.BigEndian.Uint32(body), flags: tflags, def: def, off: b.off}
		p := 4
		pos := end
		if tflags&trunDataOffset != 0 {
			if p+4 > len(body) {
				return 0, boxErr(m.file, "moof/traf/trun", b.off, ErrMalformed, "no room for data_offset")
			}
			pos = base + int64(int32(binary.BigEndian.Uint32(body[p:])))
			p += 4
		}
		if tflags&trunFirstFlags != 0 {
			if p+4 > len(body) {
				return 0, boxErr(m.file, "moof/traf/trun", b.off, ErrMalformed, "no room for first_sample_flags")
			}
			r.firstFlags = binary.BigEndian.Uint32(body[p:])
			p += 4
		}
		for _, bit := range [...]uint32{trunDuration, trunSize, trunFlags, trunCTO} {
			if tflags&bit != 0 {
				r.esize += 4
			}
		}
		r.entries = body[p:]
		if uint64(r.count)*uint64(r.esize) > uint64(len(r.entries)) {
			return 0, boxErr(m.file, "moof/traf/trun", b.off, ErrMalformed,
				"%d samples of %d bytes need %d bytes, the box holds %d", r.count, r.esize, uint64(r.count)*uint64(r.esize), len(r.entries))
		}
		var total uint64
		if tflags&trunSize != 0 {
			off := 0
			if tflags&trunDuration != 0 {
				off = 4
			}
			for i := 0; i < int(r.count); i++ {
				total += uint64(binary.BigEndian.Uint32(r.entries[i*r.esize+off:]))
			}
		} else {
			total = uint64(r.count) * uint64(def.size)
		}
		if r.esize == 0 && uint64(r.count)*uint64(max(def.size, 1)) > uint64(m.size) {
			return 0, boxErr(m.file, "moof/traf/trun", b.off, ErrMalformed,
				"%d samples of %d bytes do not fit in the file's %d bytes", r.count, def.size, m.size)
		}
		// With AcceptCut, data past the end of the file is what a cut lost:
		// Next stops at the first sample not wholly in the file.
		if pos < 0 || !m.opts.AcceptCut && (total > uint64(m.size) || uint64(pos)+total > uint64(m.size)) {
			return 0, boxErr(m.file, "moof/traf/trun", b.off, ErrMalformed,
				"data at %d + %d bytes runs past the end of the file (%d bytes)", pos, total, m.size)
		}
		r.dataPos = pos
		end = pos + int64(total)
		if mine {
			r.tfdt, r.hasTfdt = decode, hasTfdt && firstRun
			f.runs = append(f.runs, r)
		}
		firstRun = false
	}
	return end, it.err
}

// Next reads the next sample in decode order into s, reusing s.Data. It
// returns io.EOF after the last sample; any other error is sticky (a
// *BoxError naming the table or run that was wrong, or a read error).
// After warm-up (s.Data large enough) it does not allocate.
func (m *MP4) Next(s *Sample) error {
	if m.err != nil {
		return m.err
	}
	if err := m.next(s); err != nil {
		m.err = err
		return err
	}
	return nil
}

func (m *MP4) next(s *Sample) error {
	var loc sampleLoc
	ok, err := m.stbl.next(m, &loc)
	if err != nil {
		return err
	}
	if !ok && m.frag.on {
		if m.frag.next == 0 { // first fragment sample: continue the moov's timeline
			m.frag.dts = m.stbl.dts
		}
		ok, err = m.frag.nextSample(m, &loc)
		if err != nil {
			return err
		}
	}
	if !ok {
		if c := m.topCut; c != nil && m.cut == nil {
			// Every sample the tables name was read; the cut box held
			// none of them, or (a fragmented file) those of a cut moof.
			cut := *c
			cut.Read, cut.AtLeast = m.index, m.fragmented && c.Box != "mdat"
			m.cut = &cut
		}
		return io.EOF
	}
	t := m.t
	// Samples of a real file do not overlap, so together they hold no
	// more bytes than the file: a file claiming more (overlapping or
	// empty samples by the billion) is refused, which bounds the number of
	// samples, and the work, by the file's size.
	if m.opts.AcceptCut && loc.off >= 0 && loc.off > m.size-int64(loc.size) {
		m.cutAt(&loc) // the first sample not wholly in a cut file: the end
		return io.EOF
	}
	if m.claimed += max(uint64(loc.size), 1); m.claimed > uint64(m.size) {
		return boxErr(m.file, loc.srcPath, loc.srcOff, ErrMalformed, "sample %d: the samples claim more bytes than the file's %d",
			m.index, m.size)
	}
	if int64(loc.size) > m.opts.MaxSampleBytes {
		return boxErr(m.file, loc.srcPath, loc.srcOff, ErrLimit, "sample %d: %d bytes, over MaxSampleBytes %d",
			m.index, loc.size, m.opts.MaxSampleBytes)
	}
	if loc.off < 0 || loc.off > m.size-int64(loc.size) {
		return boxErr(m.file, loc.srcPath, loc.srcOff, ErrMalformed, "sample %d: %d bytes at offset %d run past the end of the file (%d bytes)",
			m.index, loc.size, loc.off, m.size)
	}
	var prefix []byte
	if loc.key {
		prefix = t.params
	}
	size := int(loc.size)
	if t.nalLen == 4 {
		// In place: each 4-byte length becomes a start code.
		s.Data = slices.Grow(s.Data[:0], len(prefix)+size)[:len(prefix)+size]
		copy(s.Data, prefix)
		body := s.Data[len(prefix):]
		if err := m.readAt(body, loc.off); err != nil {
			return err
		}
		for p := 0; p < len(body); {
			if len(body)-p < 4 {
				return m.nalErr(&loc, p)
			}
			n := binary.BigEndian.Uint32(body[p:])
			if uint64(n) > uint64(len(body)-p-4) {
				return m.nalErr(&loc, p)
			}
			copy(body[p:], startCode[:])
			p += 4 + int(n)
		}
	} else {
		m.scratch = slices.Grow(m.scratch[:0], size)[:size]
		if err := m.readAt(m.scratch, loc.off); err != nil {
			return err
		}
		s.Data = append(s.Data[:0], prefix...)
		for p := 0; p < size; {
			if size-p < t.nalLen {
				return m.nalErr(&loc, p)
			}
			var n uint64
			for _, c := range m.scratch[p : p+t.nalLen] {
				n = n<<8 | uint64(c)
			}
			p += t.nalLen
			if n > uint64(size-p) {
				return m.nalErr(&loc, p-t.nalLen)
			}
			s.Data = appendAnnexB(s.Data, m.scratch[p:p+int(n)])
			p += int(n)
		}
	}
	if len(prefix) > 0 {
		moveAUDFirst(t.Codec, s.Data, len(prefix))
	}
	dts := loc.dts - t.mediaTime
	pts := dts + int64(loc.cto)
	var ok1, ok2, ok3 bool
	s.DTSNs, ok1 = ticksToNs(dts, t.Timescale)
	s.PTSNs, ok2 = ticksToNs(pts, t.Timescale)
	s.DurationNs, ok3 = ticksToNs(int64(loc.dur), t.Timescale)
	if ok1 && ok2 {
		s.DTSNs, ok1 = addNs(s.DTSNs, m.opts.StartNs+t.emptyNs)
		s.PTSNs, ok2 = addNs(s.PTSNs, m.opts.StartNs+t.emptyNs)
	}
	if !(ok1 && ok2 && ok3) {
		return boxErr(m.file, loc.srcPath, loc.srcOff, ErrMalformed, "sample %d: time overflows int64 nanoseconds", m.index)
	}
	s.Key = loc.key
	s.Index = m.index
	m.index++
	return nil
}

// cutAt records that reading stops at the sample loc, which is not wholly
// in the file (AcceptCut), and what the tables say is lost with it.
func (m *MP4) cutAt(loc *sampleLoc) {
	c := Cut{Offset: loc.off, Size: m.size, Read: m.index}
	if tc := m.topCut; tc != nil {
		c.Box, c.BoxOffset, c.BoxMissing = tc.Box, tc.BoxOffset, tc.BoxMissing
	}
	if loc.fromFrag {
		f := &m.frag
		c.Lost = int64(f.runs[f.ri].count - f.si + 1)
		for _, r := range f.runs[f.ri+1:] {
			c.Lost += int64(r.count)
		}
		c.AtLeast = true
	} else {
		c.Lost = int64(m.stbl.n-m.stbl.i) + 1
		c.AtLeast = m.fragmented
	}
	m.cut = &c
}

// readWindow is the read-ahead of small samples: one pread fills it, and
// the samples that follow in the file are copied out of it. Samples of
// smallSample bytes or more are read directly: for them a second copy
// costs more than the system call it saves (BenchmarkMP4Next).
const (
	readWindow  = 1 << 20
	smallSample = 16 << 10
)

// readAt reads len(dst) bytes at off (inside the file: the caller checked).
func (m *MP4) readAt(dst []byte, off int64) error {
	if len(dst) >= smallSample {
		_, err := readFullAt(m.r, dst, off)
		return err
	}
	if off < m.winOff || off+int64(len(dst)) > m.winOff+int64(len(m.win)) {
		n := min(int64(readWindow), m.size-off)
		if m.win == nil {
			m.win = make([]byte, min(int64(readWindow), m.size)) // no more than the file
		}
		m.win = m.win[:n]
		if _, err := readFullAt(m.r, m.win, off); err != nil {
			m.win = m.win[:0]
			return err
		}
		m.winOff = off
	}
	copy(dst, m.win[off-m.winOff:])
	return nil
}

func (m *MP4) nalErr(loc *sampleLoc, p int) error {
	return boxErr(m.file, "mdat", loc.off, ErrMalformed, "sample %d: NAL unit length at byte %d of %d runs past the sample",
		m.index, p, loc.size)
}

// moveAUDFirst moves an access unit delimiter that follows the prefix
// (the parameter sets) in front of it, where the standard wants it.
func moveAUDFirst(c Codec, data []byte, prefix int) {
	rest := data[prefix:]
	if len(rest) < 5 || !isAUD(c, nalType(c, rest[4:])) {
		return
	}
	n := 4
	if j := findStart(rest, 4); j >= 0 {
		n = j
		if n > 4 && rest[n-1] == 0 { // the next start code is 00 00 00 01
			n--
		}
	} else {
		n = len(rest)
	}
	var aud [32]byte
	if n > len(aud) {
		return
	}
	copy(aud[:], rest[:n])
	copy(data[n:], data[:prefix])
	copy(data, aud[:n])
}
