package media

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// MP4WriterOptions configure an MP4Writer.
type MP4WriterOptions struct {
	// Timescale is the track's ticks per second. 0 chooses the first of
	// 90 kHz, 1 MHz and 1 GHz that keeps every time exact (and every
	// duration and offset in 32 bits), else 90 kHz (times rounded to the
	// nearest tick).
	Timescale uint32
	// OriginNs is the time that becomes the movie's time 0 (an edit list
	// maps it). 0, or a time after the earliest presentation time, means
	// the earliest presentation time.
	OriginNs int64
	// DeriveDTS: the samples carry no decode time (foxglove.CompressedVideo
	// has only the presentation time); derive it from the order of the
	// samples (decode order) and their presentation times. See Close.
	DeriveDTS bool
}

// MP4Writer remuxes a video stream (Annex B H.264 or H.265 samples in
// decode order, with presentation times and key-frame flags) into an MP4
// file: ftyp, mdat (written as the samples come, length-prefixed), then
// moov on Close. It is not safe for concurrent use.
type MP4Writer struct {
	w       io.WriteSeeker
	file    *os.File
	bw      *bufio.Writer
	codec   Codec
	opts    MP4WriterOptions
	mdatOff int64
	pos     int64

	samples []wsample
	sets    [3][][]byte // configuration VPS, SPS, PPS (H.264 uses SPS and PPS)
	inBand  bool        // parameter sets other than the configuration's stay in the samples
	lenBuf  [4]byte
	err     error
	closed  bool
}

type wsample struct {
	pts, dts, dur int64 // ns
	off           int64
	size          uint32
	key           bool
}

// CreateMP4 creates (or truncates) path and returns a writer into it;
// Close closes the file.
func CreateMP4(path string, codec Codec, opts MP4WriterOptions) (*MP4Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := NewMP4Writer(f, codec, opts)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	w.file = f
	return w, nil
}

// NewMP4Writer writes an MP4 into ws, from its current position.
func NewMP4Writer(ws io.WriteSeeker, codec Codec, opts MP4WriterOptions) (*MP4Writer, error) {
	if codec != CodecH264 && codec != CodecH265 {
		return nil, fmt.Errorf("%w: codec %v", ErrUnsupported, codec)
	}
	start, err := ws.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	w := &MP4Writer{w: ws, bw: bufio.NewWriterSize(ws, 1<<20), codec: codec, opts: opts}
	var b boxBuilder
	b.start("ftyp")
	b.b = append(b.b, "isom"...)
	b.u32(0x200)
	b.b = append(b.b, "isomiso2"...)
	if codec == CodecH264 {
		b.b = append(b.b, "avc1"...)
	}
	b.b = append(b.b, "mp41"...)
	b.end()
	w.mdatOff = start + int64(len(b.b))
	// mdat with a 64-bit size, patched by Close.
	b.u32(1)
	b.b = append(b.b, "mdat"...)
	b.u64(0)
	if _, err := w.bw.Write(b.b); err != nil {
		return nil, err
	}
	w.pos = start + int64(len(b.b))
	return w, nil
}

// Write appends one sample: s.Data in Annex B (3- or 4-byte start codes),
// s.PTSNs, s.DTSNs (ignored with DeriveDTS), s.Key, and s.DurationNs
// (used for the last sample when > 0). Parameter sets are taken out of
// the samples into the sample entry (avcC / hvcC): the first sample that
// carries any gives the configuration, later copies of those are
// dropped, other parameter sets stay in the samples (and the entry is
// then avc3 / hev1). Write copies what it keeps; s is not retained.
func (w *MP4Writer) Write(s *Sample) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return os.ErrClosed
	}
	if !w.opts.DeriveDTS && len(w.samples) > 0 && s.DTSNs <= w.samples[len(w.samples)-1].dts {
		return fmt.Errorf("%w: sample %d: decode time %d not after %d", ErrMalformed, len(w.samples), s.DTSNs,
			w.samples[len(w.samples)-1].dts)
	}
	configured := w.sets[1] != nil
	start := w.pos
	for rest := s.Data; ; {
		nal, r, ok := nextNAL(rest)
		if !ok {
			break
		}
		rest = r
		if len(nal) == 0 {
			continue
		}
		if typ := nalType(w.codec, nal); isParameterSet(w.codec, typ) && len(nal) <= math.MaxUint16 {
			i := 1 // SPS
			switch typ {
			case h265NalVPS:
				i = 0
			case h264NalPPS, h265NalPPS:
				i = 2
			}
			if !configured {
				if !slices.ContainsFunc(w.sets[i], func(p []byte) bool { return bytes.Equal(p, nal) }) {
					w.sets[i] = append(w.sets[i], bytes.Clone(nal))
				}
				continue
			}
			if slices.ContainsFunc(w.sets[i], func(p []byte) bool { return bytes.Equal(p, nal) }) {
				continue
			}
			w.inBand = true
		}
		if uint64(len(nal)) > math.MaxUint32-4 || w.pos-start+4+int64(len(nal)) > math.MaxUint32 {
			w.err = fmt.Errorf("%w: sample %d over 4 GiB", ErrLimit, len(w.samples))
			return w.err
		}
		binary.BigEndian.PutUint32(w.lenBuf[:], uint32(len(nal)))
		w.bw.Write(w.lenBuf[:])
		if _, err := w.bw.Write(nal); err != nil {
			w.err = err
			return err
		}
		w.pos += 4 + int64(len(nal))
	}
	w.samples = append(w.samples, wsample{pts: s.PTSNs, dts: s.DTSNs, dur: s.DurationNs, off: start,
		size: uint32(w.pos - start), key: s.Key})
	return nil
}

// Close writes the moov box and closes the file CreateMP4 opened (and
// removes it if Close fails). With
// DeriveDTS, decode times are the presentation times in increasing order,
// delayed by d frames: d is the larger of the reordering depth the SPS
// declares (max_num_reorder_frames / sps_max_num_reorder_pics) and the
// least the stream needs (so that no frame is decoded after it is
// shown); the first d frames go back by the first frame interval. For
// encoders that declare their delay (x264, x265) this reproduces their
// decode times.
func (w *MP4Writer) Close() error {
	if w.closed {
		return os.ErrClosed
	}
	w.closed = true
	err := w.finish()
	if w.file != nil {
		if cerr := w.file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(w.file.Name()) // no half-written movie left behind
		}
	}
	return err
}

func (w *MP4Writer) finish() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		return err
	}
	if len(w.samples) == 0 {
		return fmt.Errorf("%w: no samples", ErrNoParameterSets)
	}
	if w.sets[1] == nil || w.sets[2] == nil || (w.codec == CodecH265 && w.sets[0] == nil) {
		return ErrNoParameterSets
	}
	var info spsInfo
	var err error
	if w.codec == CodecH264 {
		info, err = parseH264SPS(w.sets[1][0])
	} else {
		info, err = parseH265SPS(w.sets[1][0])
	}
	if err != nil {
		// Write anyway: players read the SPS themselves; the sample entry
		// then says 0x0 and no reordering is assumed.
		info = spsInfo{reorder: -1, chromaFormat: 1}
		if w.codec == CodecH265 && len(w.sets[1][0]) >= 15 {
			copy(info.ptl[:], unescapeRBSP(nil, w.sets[1][0][2:])[1:])
			info.subLayers = 1
		}
	}
	t, err := w.timeline(info.reorder)
	if err != nil {
		return err
	}
	// Patch the mdat size, then write moov at the end.
	var size [8]byte
	binary.BigEndian.PutUint64(size[:], uint64(w.pos-w.mdatOff))
	if _, err := w.w.Seek(w.mdatOff+8, io.SeekStart); err != nil {
		return err
	}
	if _, err := w.w.Write(size[:]); err != nil {
		return err
	}
	if _, err := w.w.Seek(w.pos, io.SeekStart); err != nil {
		return err
	}
	_, err = w.w.Write(w.moov(t, info))
	return err
}

// deriveDTS returns decode times (ticks) for presentation times pts
// (ticks, in decode order); see Close.
func deriveDTS(pts []int64, declared int) []int64 {
	n := len(pts)
	order := make([]int, n) // sample indices by presentation time
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpInt64(pts[a], pts[b]) })
	sorted := make([]int64, n)
	d := max(declared, 0)
	for rank, i := range order {
		sorted[rank] = pts[i]
		d = max(d, i-rank)
	}
	var step int64
	for i := 1; i < n && step == 0; i++ {
		step = sorted[i] - sorted[0]
	}
	dts := make([]int64, n)
	for i := range dts {
		if i >= d {
			dts[i] = sorted[i-d]
		} else {
			dts[i] = sorted[0] - int64(d-i)*step
		}
	}
	return dts
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// timeline is the track's times in ticks.
type timeline struct {
	timescale uint32
	dts, cto  []int64 // per sample: media decode time from 0; composition offset
	dur       []int64
	mediaTime int64 // edit: first media time shown (ticks); -1 no edit list
	empty     int64 // edit: leading empty time
	segment   int64 // edit: duration of the media shown
	mediaDur  int64 // sum of durations
	created   uint64
}

var timescales = [...]uint32{90_000, 1_000_000, 1_000_000_000}

func (w *MP4Writer) timeline(reorder int) (timeline, error) {
	s := w.samples
	minPTS := s[0].pts
	for _, x := range s {
		minPTS = min(minPTS, x.pts)
	}
	origin := w.opts.OriginNs
	if origin == 0 || origin > minPTS {
		origin = minPTS
	}
	// exact: every given time is a whole number of ticks, and the decode
	// times are increasing with gaps that fit stts.
	exact := func(ts uint32) bool {
		prev := int64(math.MinInt64)
		for i, x := range s {
			if t, ok := ticksToNs(nsToTicks(x.pts-origin, ts), ts); !ok || t != x.pts-origin {
				return false
			}
			if w.opts.DeriveDTS {
				continue
			}
			d := nsToTicks(x.dts-origin, ts)
			if t, ok := ticksToNs(d, ts); !ok || t != x.dts-origin || d <= prev || (i > 0 && d-prev > math.MaxUint32) {
				return false
			}
			if cto := nsToTicks(x.pts-origin, ts) - d; cto > math.MaxInt32 || cto < math.MinInt32 {
				return false
			}
			prev = d
		}
		return true
	}
	ts := w.opts.Timescale
	if ts == 0 {
		ts = timescales[0]
		for _, c := range timescales {
			if exact(c) {
				ts = c
				break
			}
		}
	}
	n := len(s)
	t := timeline{timescale: ts, cto: make([]int64, n), dur: make([]int64, n), mediaTime: -1}
	pts := make([]int64, n)
	for i, x := range s {
		pts[i] = nsToTicks(x.pts-origin, ts)
	}
	if w.opts.DeriveDTS {
		t.dts = deriveDTS(pts, reorder)
	} else {
		t.dts = make([]int64, n)
		for i, x := range s {
			t.dts[i] = nsToTicks(x.dts-origin, ts)
		}
	}
	d0 := t.dts[0]
	for i := range t.dts {
		if i > 0 && t.dts[i] <= t.dts[i-1] {
			if !w.opts.DeriveDTS {
				return t, fmt.Errorf("%w: samples %d and %d decode at the same tick of 1/%d s", ErrMalformed, i-1, i, ts)
			}
			t.dts[i] = t.dts[i-1] + 1 // equal presentation times: one tick apart
		}
		t.cto[i] = pts[i] - t.dts[i]
		if t.cto[i] > math.MaxInt32 || t.cto[i] < math.MinInt32 {
			return t, fmt.Errorf("%w: sample %d is presented %d ticks of 1/%d s after it is decoded", ErrLimit, i, t.cto[i], ts)
		}
	}
	for i := range t.dts {
		t.dts[i] -= d0
	}
	var end int64 // end of the last presented frame, media ticks
	for i := range s {
		switch {
		case i+1 < n:
			t.dur[i] = t.dts[i+1] - t.dts[i]
		case s[i].dur > 0:
			t.dur[i] = max(nsToTicks(s[i].dur, ts), 1)
		case i > 0:
			t.dur[i] = t.dur[i-1]
		default:
			t.dur[i] = int64(ts / 30)
		}
		if t.dur[i] > math.MaxUint32 {
			return t, fmt.Errorf("%w: %d ticks of 1/%d s between samples %d and %d", ErrLimit, t.dur[i], ts, i, i+1)
		}
		t.mediaDur += t.dur[i]
		end = max(end, t.dts[i]+t.cto[i]+t.dur[i])
	}
	switch {
	case d0 < 0:
		t.mediaTime = -d0
	case d0 > 0:
		// An empty edit until the first frame is shown, then the media
		// from that frame's composition time (an empty edit followed by
		// media_time 0 would be read the same by the standard, but not by
		// ffmpeg, which shows the first frame when the empty edit ends).
		minPTS := slices.Min(pts)
		t.empty, t.mediaTime = minPTS, minPTS-d0
	}
	t.segment = max(end-max(t.mediaTime, 0), 0)
	if sec := origin / nsPerSec; origin > 0 && sec < math.MaxInt64-mp4Epoch {
		t.created = uint64(sec + mp4Epoch)
	}
	return t, nil
}

// boxBuilder appends boxes; start and end nest.
type boxBuilder struct {
	b     []byte
	stack []int
}

func (b *boxBuilder) start(typ string) {
	b.stack = append(b.stack, len(b.b))
	b.b = append(b.b, 0, 0, 0, 0)
	b.b = append(b.b, typ...)
}

func (b *boxBuilder) full(typ string, version uint8, flags uint32) {
	b.start(typ)
	b.u32(uint32(version)<<24 | flags)
}

func (b *boxBuilder) end() {
	p := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	binary.BigEndian.PutUint32(b.b[p:], uint32(len(b.b)-p))
}

func (b *boxBuilder) u8(v uint8)   { b.b = append(b.b, v) }
func (b *boxBuilder) u16(v uint16) { b.b = binary.BigEndian.AppendUint16(b.b, v) }
func (b *boxBuilder) u32(v uint32) { b.b = binary.BigEndian.AppendUint32(b.b, v) }
func (b *boxBuilder) u64(v uint64) { b.b = binary.BigEndian.AppendUint64(b.b, v) }
func (b *boxBuilder) zeros(n int)  { b.b = append(b.b, make([]byte, n)...) }

// timeField writes a version-dependent time or duration.
func (b *boxBuilder) timeField(v1 bool, v uint64) {
	if v1 {
		b.u64(v)
	} else {
		b.u32(uint32(v))
	}
}

var unityMatrix = [9]uint32{0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000}

func (w *MP4Writer) moov(t timeline, info spsInfo) []byte {
	s := w.samples
	movieDur := t.mediaDur
	if t.mediaTime >= 0 {
		movieDur = t.empty + t.segment
	}
	v1 := uint64(movieDur) > math.MaxUint32 || uint64(t.mediaDur) > math.MaxUint32 || t.created > math.MaxUint32
	var version uint8
	if v1 {
		version = 1
	}
	var b boxBuilder
	b.start("moov")

	b.full("mvhd", version, 0)
	b.timeField(v1, t.created)
	b.timeField(v1, t.created)
	b.u32(t.timescale)
	b.timeField(v1, uint64(movieDur))
	b.u32(0x10000) // rate 1.0
	b.u16(0x100)   // volume 1.0
	b.zeros(10)
	for _, m := range unityMatrix {
		b.u32(m)
	}
	b.zeros(24)
	b.u32(2) // next_track_ID
	b.end()

	b.start("trak")
	b.full("tkhd", version, 3) // enabled, in movie
	b.timeField(v1, t.created)
	b.timeField(v1, t.created)
	b.u32(1) // track_ID
	b.u32(0)
	b.timeField(v1, uint64(movieDur))
	b.zeros(8)
	b.u16(0) // layer
	b.u16(0) // alternate_group
	b.u16(0) // volume
	b.u16(0)
	for _, m := range unityMatrix {
		b.u32(m)
	}
	b.u32(uint32(info.width) << 16)
	b.u32(uint32(info.height) << 16)
	b.end()

	if t.mediaTime >= 0 {
		b.start("edts")
		b.full("elst", version, 0)
		entries := uint32(1)
		if t.empty > 0 {
			entries = 2
		}
		b.u32(entries)
		if t.empty > 0 {
			b.timeField(v1, uint64(t.empty))
			if v1 {
				b.u64(math.MaxUint64) // media_time -1
			} else {
				b.u32(math.MaxUint32)
			}
			b.u32(0x10000)
		}
		b.timeField(v1, uint64(t.segment))
		b.timeField(v1, uint64(t.mediaTime))
		b.u32(0x10000)
		b.end()
		b.end()
	}

	b.start("mdia")
	b.full("mdhd", version, 0)
	b.timeField(v1, t.created)
	b.timeField(v1, t.created)
	b.u32(t.timescale)
	b.timeField(v1, uint64(t.mediaDur))
	b.u16(0x55c4) // language "und"
	b.u16(0)
	b.end()
	b.full("hdlr", 0, 0)
	b.u32(0)
	b.b = append(b.b, "vide"...)
	b.zeros(12)
	b.b = append(b.b, "VideoHandler\x00"...)
	b.end()

	b.start("minf")
	b.full("vmhd", 0, 1)
	b.zeros(8)
	b.end()
	b.start("dinf")
	b.full("dref", 0, 0)
	b.u32(1)
	b.full("url ", 0, 1) // media in this file
	b.end()
	b.end()
	b.end()

	b.start("stbl")
	w.stsd(&b, info)

	b.full("stts", 0, 0)
	runs := len(b.b)
	b.u32(0)
	n := uint32(0)
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && t.dur[j] == t.dur[i] {
			j++
		}
		b.u32(uint32(j - i))
		b.u32(uint32(t.dur[i]))
		n++
		i = j
	}
	binary.BigEndian.PutUint32(b.b[runs:], n)
	b.end()

	if slices.ContainsFunc(t.cto, func(c int64) bool { return c != 0 }) {
		var cv uint8
		if slices.ContainsFunc(t.cto, func(c int64) bool { return c < 0 }) {
			cv = 1
		}
		b.full("ctts", cv, 0)
		runs := len(b.b)
		b.u32(0)
		n := uint32(0)
		for i := 0; i < len(s); {
			j := i
			for j < len(s) && t.cto[j] == t.cto[i] {
				j++
			}
			b.u32(uint32(j - i))
			b.u32(uint32(int32(t.cto[i])))
			n++
			i = j
		}
		binary.BigEndian.PutUint32(b.b[runs:], n)
		b.end()
	}

	if slices.ContainsFunc(s, func(x wsample) bool { return !x.key }) {
		b.full("stss", 0, 0)
		runs := len(b.b)
		b.u32(0)
		n := uint32(0)
		for i, x := range s {
			if x.key {
				b.u32(uint32(i + 1))
				n++
			}
		}
		binary.BigEndian.PutUint32(b.b[runs:], n)
		b.end()
	}

	b.full("stsc", 0, 0) // one sample per chunk
	b.u32(1)
	b.u32(1)
	b.u32(1)
	b.u32(1)
	b.end()

	b.full("stsz", 0, 0)
	if !slices.ContainsFunc(s, func(x wsample) bool { return x.size != s[0].size }) && s[0].size > 0 {
		b.u32(s[0].size)
		b.u32(uint32(len(s)))
	} else {
		b.u32(0)
		b.u32(uint32(len(s)))
		for _, x := range s {
			b.u32(x.size)
		}
	}
	b.end()

	if s[len(s)-1].off > math.MaxUint32 {
		b.full("co64", 0, 0)
		b.u32(uint32(len(s)))
		for _, x := range s {
			b.u64(uint64(x.off))
		}
	} else {
		b.full("stco", 0, 0)
		b.u32(uint32(len(s)))
		for _, x := range s {
			b.u32(uint32(x.off))
		}
	}
	b.end()

	b.end() // stbl
	b.end() // minf
	b.end() // mdia
	b.end() // trak
	b.end() // moov
	return b.b
}

// stsd writes the visual sample entry with its avcC or hvcC.
func (w *MP4Writer) stsd(b *boxBuilder, info spsInfo) {
	b.full("stsd", 0, 0)
	b.u32(1)
	entry := map[bool]map[Codec]string{
		false: {CodecH264: "avc1", CodecH265: "hvc1"},
		true:  {CodecH264: "avc3", CodecH265: "hev1"},
	}[w.inBand][w.codec]
	b.start(entry)
	b.zeros(6)
	b.u16(1) // data_reference_index
	b.zeros(16)
	b.u16(uint16(info.width))
	b.u16(uint16(info.height))
	b.u32(0x480000) // 72 dpi
	b.u32(0x480000)
	b.u32(0)
	b.u16(1) // frame_count
	b.zeros(32)
	b.u16(0x18) // depth
	b.u16(0xFFFF)
	if w.codec == CodecH264 {
		b.start("avcC")
		sps := w.sets[1][0]
		b.u8(1)
		b.u8(sps[1]) // profile_idc
		b.u8(sps[2]) // constraint flags
		b.u8(sps[3]) // level_idc
		b.u8(0xFC | 3)
		b.u8(0xE0 | uint8(min(len(w.sets[1]), 31)))
		for _, p := range w.sets[1][:min(len(w.sets[1]), 31)] {
			b.u16(uint16(len(p)))
			b.b = append(b.b, p...)
		}
		b.u8(uint8(min(len(w.sets[2]), 255)))
		for _, p := range w.sets[2][:min(len(w.sets[2]), 255)] {
			b.u16(uint16(len(p)))
			b.b = append(b.b, p...)
		}
		if h264HighProfile(uint32(sps[1])) {
			b.u8(0xFC | uint8(info.chromaFormat))
			b.u8(0xF8 | uint8(info.bitDepthLuma))
			b.u8(0xF8 | uint8(info.bitDepthChroma))
			b.u8(0)
		}
		b.end()
	} else {
		b.start("hvcC")
		b.u8(1)
		b.b = append(b.b, info.ptl[:]...)
		b.u16(0xF000) // min_spatial_segmentation_idc 0
		b.u8(0xFC)    // parallelismType unknown
		b.u8(0xFC | uint8(info.chromaFormat))
		b.u8(0xF8 | uint8(info.bitDepthLuma))
		b.u8(0xF8 | uint8(info.bitDepthChroma))
		b.u16(0) // avgFrameRate
		nest := uint8(0)
		if info.temporalIDNest {
			nest = 1
		}
		b.u8(uint8(info.subLayers&7)<<3 | nest<<2 | 3)
		b.u8(3)
		complete := uint8(0x80)
		if w.inBand {
			complete = 0
		}
		for i, typ := range [3]uint8{h265NalVPS, h265NalSPS, h265NalPPS} {
			b.u8(complete | typ)
			b.u16(uint16(len(w.sets[i])))
			for _, p := range w.sets[i] {
				b.u16(uint16(len(p)))
				b.b = append(b.b, p...)
			}
		}
		b.end()
	}
	b.end() // entry
	b.end() // stsd
}
