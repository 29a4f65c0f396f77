package media

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// Parameter sets of 64x48 yuv420p streams made by x264 (High, -bf 2) and
// x265 (Main, default B-frames).
var (
	testSPS264 = unhex("6764000aacd9447b0110000003001000000303c0f1225960")
	testPPS264 = unhex("68ebe3cb22c0")
	testVPS265 = unhex("40010c01ffff01600000030090000003000003001e959809")
	testSPS265 = unhex("42010101600000030090000003000003001ea02083165959ae4caf016808000003000800000300f040")
	testPPS265 = unhex("4401c173d089")
)

func TestParseSPS(t *testing.T) {
	i, err := parseH264SPS(testSPS264)
	if err != nil || i.width != 64 || i.height != 48 || i.reorder != 2 || i.chromaFormat != 1 || i.bitDepthLuma != 0 {
		t.Errorf("H.264: %+v %v", i, err)
	}
	i, err = parseH265SPS(testSPS265)
	if err != nil || i.width != 64 || i.height != 48 || i.reorder < 1 || i.chromaFormat != 1 || i.subLayers != 1 || i.ptl[0] != 1 {
		t.Errorf("H.265: %+v %v", i, err)
	}
	// Every prefix is refused or parsed, never a panic.
	for n := range len(testSPS265) {
		parseH264SPS(testSPS264[:min(n, len(testSPS264))])
		parseH265SPS(testSPS265[:n])
	}
}

// slice returns a NAL unit of the given type with n payload bytes that
// hold no zero (so no start code can appear inside it).
func slice(rng *rand.Rand, c Codec, typ, n int) []byte {
	nal := make([]byte, n+2)
	if c == CodecH265 {
		nal[0], nal[1] = byte(typ<<1), 1
	} else {
		nal[0], nal[1] = byte(0x60|typ), 0x88
	}
	for i := 2; i < len(nal); i++ {
		nal[i] = byte(1 + rng.IntN(255))
	}
	return nal
}

func annexB(nals ...[]byte) []byte {
	var b []byte
	for _, n := range nals {
		b = appendAnnexB(b, n)
	}
	return b
}

func params(c Codec) [][]byte {
	if c == CodecH265 {
		return [][]byte{testVPS265, testSPS265, testPPS265}
	}
	return [][]byte{testSPS264, testPPS264}
}

// synthStream makes n samples in decode order: GOPs of gop frames, each
// P frame followed by bframes B frames shown before it; key frames carry
// the parameter sets; frame intervals jitter at ns precision when jitter.
func synthStream(rng *rand.Rand, c Codec, n, gop, bframes int, jitter bool) []Sample {
	idr, nonIDR := 5, 1
	if c == CodecH265 {
		idr, nonIDR = 19, 1
	}
	// Presentation times in display order.
	show := make([]int64, n)
	t := testStart
	for i := range show {
		show[i] = t
		t += 33_333_333
		if jitter {
			t += int64(rng.IntN(2_000_000)) - 1_000_000
		}
	}
	// Decode order: per GOP, I then (P, B...) groups.
	var order []int
	for g := 0; g < n; g += gop {
		end := min(g+gop, n)
		order = append(order, g)
		for i := g + 1; i < end; {
			p := min(i+bframes, end-1)
			order = append(order, p)
			for b := i; b < p; b++ {
				order = append(order, b)
			}
			i = p + 1
		}
	}
	out := make([]Sample, n)
	for i, k := range order {
		key := k%gop == 0
		var data []byte
		if key {
			data = annexB(append(params(c), slice(rng, c, idr, 50+rng.IntN(400)))...)
		} else {
			data = annexB(slice(rng, c, nonIDR, rng.IntN(300)))
		}
		out[i] = Sample{Index: int64(i), PTSNs: show[k], Key: key, Data: data}
	}
	// Decode times: presentation times in order, delayed by bframes frames.
	for i := range out {
		if i >= bframes {
			out[i].DTSNs = show[i-bframes]
		} else {
			out[i].DTSNs = show[0] - int64(bframes-i)*33_333_333
		}
	}
	return out
}

// writeMP4 writes samples with MP4Writer into memory.
// tb is what the helpers need of testing.TB and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func writeMP4(t tb, c Codec, opts MP4WriterOptions, samples []Sample) []byte {
	t.Helper()
	ws := &memFile{}
	w, err := NewMP4Writer(ws, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		if err := w.Write(&samples[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return ws.b
}

// memFile is an io.WriteSeeker in memory.
type memFile struct {
	b   []byte
	pos int64
}

func (f *memFile) Write(p []byte) (int, error) {
	if end := f.pos + int64(len(p)); end > int64(len(f.b)) {
		f.b = append(f.b, make([]byte, end-int64(len(f.b)))...)
	}
	copy(f.b[f.pos:], p)
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += f.pos
	case io.SeekEnd:
		off += int64(len(f.b))
	}
	f.pos = off
	return off, nil
}

func readMP4(t tb, b []byte, opts MP4Options) []Sample {
	t.Helper()
	m, err := NewMP4Reader(bytes.NewReader(b), int64(len(b)), "mem.mp4", opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []Sample
	var s Sample
	for {
		err := m.Next(&s)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		c := s
		c.Data = bytes.Clone(s.Data)
		out = append(out, c)
	}
}

// TestMP4WriterReaderProperty: any stream (H.264 or H.265, GOP length,
// B-frame depth, jittered ns times) written with its decode times reads
// back identical: times exact (the writer picks a timescale that keeps
// them), key flags, bytes. Written with derived decode times, the reader
// gives the same presentation times and bytes, and decode times that are
// increasing and never after the presentation time.
func TestMP4WriterReaderProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := rapid.SampledFrom([]Codec{CodecH264, CodecH265}).Draw(rt, "codec")
		n := rapid.IntRange(1, 80).Draw(rt, "n")
		gop := rapid.IntRange(1, 20).Draw(rt, "gop")
		bf := rapid.IntRange(0, 3).Draw(rt, "bframes")
		jitter := rapid.Bool().Draw(rt, "jitter")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 0))
		in := synthStream(rng, c, n, gop, bf, jitter)
		back := readMP4(rt, writeMP4(rt, c, MP4WriterOptions{OriginNs: testStart - 1e9}, in), MP4Options{StartNs: testStart - 1e9})
		if len(back) != n {
			rt.Fatalf("%d samples back of %d", len(back), n)
		}
		for i := range in {
			a, b := in[i], back[i]
			if a.PTSNs != b.PTSNs || a.DTSNs != b.DTSNs || a.Key != b.Key || !bytes.Equal(a.Data, b.Data) {
				rt.Fatalf("sample %d: pts %d dts %d key %v; wrote %d %d %v (data equal %v)",
					i, b.PTSNs, b.DTSNs, b.Key, a.PTSNs, a.DTSNs, a.Key, bytes.Equal(a.Data, b.Data))
			}
		}
		back = readMP4(rt, writeMP4(rt, c, MP4WriterOptions{DeriveDTS: true}, in), MP4Options{StartNs: in[0].PTSNs})
		minPTS := in[0].PTSNs
		for _, s := range in {
			minPTS = min(minPTS, s.PTSNs)
		}
		for i := range in {
			a, b := in[i], back[i]
			if b.PTSNs-in[0].PTSNs != a.PTSNs-minPTS || a.Key != b.Key || !bytes.Equal(a.Data, b.Data) ||
				b.DTSNs > b.PTSNs || (i > 0 && b.DTSNs <= back[i-1].DTSNs) {
				rt.Fatalf("derived: sample %d: pts %d dts %d; wrote pts %d", i, b.PTSNs, b.DTSNs, a.PTSNs)
			}
		}
	})
}

// TestMP4WriterParameterSets: parameter sets leave the samples for the
// sample entry; a changed one stays in its sample (and the entry becomes
// avc3); 3-byte start codes are accepted.
func TestMP4WriterParameterSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	in := synthStream(rng, CodecH264, 30, 10, 0, false)
	pps2 := unhex("68ebe3cb22c1")
	in[10].Data = annexB(testSPS264, pps2, slice(rng, CodecH264, 5, 40))
	in[20].Data = bytes.ReplaceAll(in[20].Data, startCode[:], startCode[1:])
	b := writeMP4(t, CodecH264, MP4WriterOptions{}, in)
	if !bytes.Contains(b, []byte("avc3")) || bytes.Contains(b, []byte("avc1\x00")) {
		t.Error("a stream with in-band parameter sets must use avc3")
	}
	back := readMP4(t, b, MP4Options{StartNs: in[0].PTSNs})
	// The entry's parameter sets, then the in-band PPS (the in-band SPS
	// equals the entry's and was dropped).
	want := annexB(testSPS264, testPPS264, pps2)
	if !bytes.HasPrefix(back[10].Data, want) {
		t.Errorf("sample 10: %x", back[10].Data[:40])
	}
	if nal, _, _ := nextNAL(back[20].Data); !bytes.Equal(nal, testSPS264) {
		t.Errorf("3-byte start codes: %x", back[20].Data[:20])
	}
	if _, err := NewMP4Writer(&memFile{}, CodecNone, MP4WriterOptions{}); err == nil {
		t.Error("CodecNone accepted")
	}
	path := filepath.Join(t.TempDir(), "x.mp4")
	w, _ := CreateMP4(path, CodecH265, MP4WriterOptions{})
	w.Write(&Sample{Data: annexB(slice(rng, CodecH265, 1, 10))})
	if err := w.Close(); err != ErrNoParameterSets {
		t.Errorf("no parameter sets: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a failed Close left %s: %v", path, err)
	}
	w, _ = NewMP4Writer(&memFile{}, CodecH264, MP4WriterOptions{})
	w.Write(&Sample{DTSNs: 5, Data: in[0].Data})
	if err := w.Write(&Sample{DTSNs: 5, Data: in[1].Data}); err == nil {
		t.Error("equal decode times accepted")
	}
}

// TestDeriveDTS: I0 P3 B1 B2 with a declared depth of 2 (x264's with
// b-pyramid) and without (the least the stream needs: 1).
func TestDeriveDTS(t *testing.T) {
	pts := []int64{0, 30, 10, 20, 60, 40, 50}
	for _, c := range []struct {
		declared int
		want     []int64
	}{
		{2, []int64{-20, -10, 0, 10, 20, 30, 40}},
		{-1, []int64{-10, 0, 10, 20, 30, 40, 50}},
	} {
		got := deriveDTS(pts, c.declared)
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("declared %d: %v, want %v", c.declared, got, c.want)
				break
			}
		}
	}
}

// synthMP4 assembles an MP4 by hand, with the table shapes MP4Writer never
// writes: NAL lengths of 2 bytes, stz2, co64, ctts version 1 with negative
// offsets, several chunks of several samples, an edit list of version 1
// with a leading empty edit.
func synthMP4(t testing.TB, nals [][][]byte, deltas []uint32, ctos []int32, keys []bool, chunks []int) []byte {
	var mdat []byte
	var sizes []uint32
	var offs []uint64
	const dataStart = 1 << 12 // mdat data at 4 KiB: ftyp, free padding, mdat header
	i := 0
	for _, n := range chunks {
		offs = append(offs, dataStart+uint64(len(mdat)))
		for k := 0; k < n; k++ {
			start := len(mdat)
			for _, nal := range nals[i] {
				mdat = binary.BigEndian.AppendUint16(mdat, uint16(len(nal)))
				mdat = append(mdat, nal...)
			}
			sizes = append(sizes, uint32(len(mdat)-start))
			i++
		}
	}
	var b boxBuilder
	b.start("ftyp")
	b.b = append(b.b, "isom\x00\x00\x02\x00isom"...)
	b.end()
	b.start("free")
	b.zeros(dataStart - len(b.b) - 8)
	b.end()
	b.start("mdat")
	b.b = append(b.b, mdat...)
	b.end()
	b.start("moov")
	b.full("mvhd", 0, 0)
	b.zeros(8)
	b.u32(1000) // movie timescale
	b.zeros(88)
	b.end()
	b.start("trak")
	b.full("tkhd", 0, 3)
	b.zeros(8)
	b.u32(7) // track_ID
	b.zeros(68)
	b.end()
	b.start("edts")
	b.full("elst", 1, 0)
	b.u32(2)
	b.u64(250) // empty: 250 ms
	b.u64(^uint64(0))
	b.u32(0x10000)
	b.u64(10000)
	b.u64(900) // media_time: 900 ticks
	b.u32(0x10000)
	b.end()
	b.end()
	b.start("mdia")
	b.full("mdhd", 0, 0)
	b.zeros(8)
	b.u32(90000)
	b.u32(0)
	b.u32(0)
	b.end()
	b.full("hdlr", 0, 0)
	b.u32(0)
	b.b = append(b.b, "vide"...)
	b.zeros(13)
	b.end()
	b.start("minf")
	b.start("stbl")
	b.full("stsd", 0, 0)
	b.u32(1)
	b.start("avc1")
	b.zeros(6)
	b.u16(1)
	b.zeros(16)
	b.u16(64)
	b.u16(48)
	b.zeros(50)
	b.start("avcC")
	b.b = append(b.b, 1, testSPS264[1], testSPS264[2], testSPS264[3], 0xFC|1, 0xE1)
	b.u16(uint16(len(testSPS264)))
	b.b = append(b.b, testSPS264...)
	b.u8(1)
	b.u16(uint16(len(testPPS264)))
	b.b = append(b.b, testPPS264...)
	b.end()
	b.end()
	b.end()
	b.full("stts", 0, 0)
	b.u32(uint32(len(deltas)))
	for _, d := range deltas {
		b.u32(1)
		b.u32(d)
	}
	b.end()
	b.full("ctts", 1, 0)
	b.u32(uint32(len(ctos)))
	for _, c := range ctos {
		b.u32(1)
		b.u32(uint32(c))
	}
	b.end()
	b.full("stss", 0, 0)
	var keyIdx []uint32
	for i, k := range keys {
		if k {
			keyIdx = append(keyIdx, uint32(i+1))
		}
	}
	b.u32(uint32(len(keyIdx)))
	for _, k := range keyIdx {
		b.u32(k)
	}
	b.end()
	b.full("stsc", 0, 0)
	b.u32(uint32(len(chunks)))
	for i, n := range chunks {
		b.u32(uint32(i + 1))
		b.u32(uint32(n))
		b.u32(1)
	}
	b.end()
	b.full("stz2", 0, 0)
	b.u32(16) // reserved, field_size
	b.u32(uint32(len(sizes)))
	for _, s := range sizes {
		b.u16(uint16(s))
	}
	b.end()
	b.full("co64", 0, 0)
	b.u32(uint32(len(offs)))
	for _, o := range offs {
		b.u64(o)
	}
	b.end()
	b.end() // stbl
	b.end() // minf
	b.end() // mdia
	b.end() // trak
	b.end() // moov
	if uint64(len(mdat)) >= 1<<12 || binary.BigEndian.Uint32(b.b[dataStart-8:]) != uint32(8+len(mdat)) {
		t.Fatal("synthMP4: layout")
	}
	return b.b
}

func TestMP4TableVariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	var nals [][][]byte
	keys := []bool{true, false, false, false, true, false}
	for _, k := range keys {
		if k {
			nals = append(nals, [][]byte{slice(rng, CodecH264, 9, 0), slice(rng, CodecH264, 5, 30)}) // AUD, IDR
		} else {
			nals = append(nals, [][]byte{slice(rng, CodecH264, 1, rng.IntN(20))})
		}
	}
	deltas := []uint32{3000, 3000, 3003, 2997, 3000, 3000}
	ctos := []int32{900, 6000, -3000, 0, 900, -900}
	b := synthMP4(t, nals, deltas, ctos, keys, []int{3, 2, 1})
	m, err := NewMP4Reader(bytes.NewReader(b), int64(len(b)), "synth.mp4", MP4Options{StartNs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if tr := m.Track(); tr.ID != 7 || tr.Width != 64 || tr.EditShiftNs != 10_000_000-250_000_000 || tr.Samples != 6 {
		t.Fatalf("track %+v", tr)
	}
	var s Sample
	var dts int64
	for i := range keys {
		if err := m.Next(&s); err != nil {
			t.Fatal(err)
		}
		// ns = 1000 (start) + 250 ms (empty edit) + (ticks - 900) / 90 kHz
		ns := func(ticks int64) int64 { return int64(math.Round(float64(ticks) * 1e9 / 90000)) }
		wantDTS := 1000 + 250_000_000 + ns(dts-900)
		wantPTS := 1000 + 250_000_000 + ns(dts+int64(ctos[i])-900)
		var want []byte
		if keys[i] {
			want = annexB(nals[i][0], testSPS264, testPPS264, nals[i][1]) // AUD first, then parameter sets
		} else {
			want = annexB(nals[i]...)
		}
		if s.DTSNs != wantDTS || s.PTSNs != wantPTS || s.Key != keys[i] || !bytes.Equal(s.Data, want) ||
			s.DurationNs != ns(int64(deltas[i])) {
			t.Errorf("sample %d: %d %d %v %x; want %d %d %v %x", i, s.PTSNs, s.DTSNs, s.Key, s.Data, wantPTS, wantDTS, keys[i], want)
		}
		dts += int64(deltas[i])
	}
	if err := m.Next(&s); err != io.EOF {
		t.Errorf("after the last sample: %v", err)
	}
	m.Rewind()
	if err := m.Next(&s); err != nil || s.Index != 0 || !s.Key {
		t.Errorf("after Rewind: %+v %v", s, err)
	}
}

// fmp4 assembles a fragmented MP4 by hand: two tracks (7: video, 9:
// other); the first moof has track 9's traf first (explicit data offset)
// and track 7's traf with no base offset (so its data follows track 9's)
// and a run without data offset; the second moof uses
// default-base-is-moof, tfdt version 1, and two runs, the second without
// a data offset. first_sample_flags mark key frames.
func fmp4(t testing.TB, rng *rand.Rand) ([]byte, []Sample) {
	var b boxBuilder
	b.start("ftyp")
	b.b = append(b.b, "iso6\x00\x00\x02\x00iso6"...)
	b.end()
	b.start("moov")
	b.full("mvhd", 0, 0)
	b.zeros(8)
	b.u32(1000)
	b.zeros(88)
	b.end()
	for _, id := range []uint32{9, 7} {
		b.start("trak")
		b.full("tkhd", 0, 3)
		b.zeros(8)
		b.u32(id)
		b.zeros(68)
		b.end()
		b.start("mdia")
		b.full("mdhd", 0, 0)
		b.zeros(8)
		b.u32(1000)
		b.zeros(8)
		b.end()
		b.full("hdlr", 0, 0)
		b.u32(0)
		if id == 7 {
			b.b = append(b.b, "vide"...)
		} else {
			b.b = append(b.b, "meta"...)
		}
		b.zeros(13)
		b.end()
		b.start("minf")
		b.start("stbl")
		b.full("stsd", 0, 0)
		b.u32(1)
		if id == 7 {
			b.start("hvc1")
			b.zeros(6)
			b.u16(1)
			b.zeros(16)
			b.u16(64)
			b.u16(48)
			b.zeros(50)
			b.start("hvcC")
			b.b = append(b.b, 1)
			b.zeros(20)
			b.u8(0xFC | 3)
			b.u8(3)
			for _, p := range [][]byte{testVPS265, testSPS265, testPPS265} {
				b.u8(0x80 | p[0]>>1)
				b.u16(1)
				b.u16(uint16(len(p)))
				b.b = append(b.b, p...)
			}
			b.end()
			b.end()
		} else {
			b.start("mett")
			b.zeros(8)
			b.end()
		}
		b.end()
		for _, tb := range []string{"stts", "stsc", "stco"} {
			b.full(tb, 0, 0)
			b.u32(0)
			b.end()
		}
		b.full("stsz", 0, 0)
		b.u64(0)
		b.end()
		b.end()
		b.end()
		b.end()
		b.end()
	}
	b.start("mvex")
	for _, id := range []uint32{7, 9} {
		b.full("trex", 0, 0)
		b.u32(id)
		b.u32(1)
		b.u32(40) // default duration
		b.u32(11) // default size (track 9)
		b.u32(sampleNonSync)
		b.end()
	}
	b.end()
	b.end() // moov

	var want []Sample
	dts := int64(0)
	mkSample := func(key bool, cto int32, dur int64) []byte {
		nal := slice(rng, CodecH265, map[bool]int{true: 19, false: 1}[key], rng.IntN(50))
		data := annexB(nal)
		if key {
			data = annexB(testVPS265, testSPS265, testPPS265, nal)
		}
		want = append(want, Sample{Index: int64(len(want)), PTSNs: (dts + int64(cto)) * 1e6, DTSNs: dts * 1e6,
			DurationNs: dur * 1e6, Key: key, Data: data})
		dts += dur
		return binary.BigEndian.AppendUint32(nil, uint32(len(nal))) // length prefix; caller appends nal
	}
	// moof 1
	moof1 := len(b.b)
	var mdat []byte
	other := bytes.Repeat([]byte{0xEE}, 3*11)
	var v1 [][]byte
	for i := 0; i < 3; i++ {
		key := i == 0
		p := mkSample(key, 80, 40)
		nal := want[len(want)-1].Data[len(want[len(want)-1].Data)-int(binary.BigEndian.Uint32(p)):]
		v1 = append(v1, append(p, nal...))
	}
	b.start("moof")
	b.full("mfhd", 0, 0)
	b.u32(1)
	b.end()
	b.start("traf")
	b.full("tfhd", 0, tfhdSize)
	b.u32(9)
	b.u32(11)
	b.end()
	b.full("trun", 0, trunDataOffset)
	b.u32(3)
	patch := len(b.b)
	b.u32(0) // data_offset, patched
	b.end()
	b.end()
	b.start("traf")
	b.full("tfhd", 0, 0) // no base: follows track 9's data
	b.u32(7)
	b.end()
	b.full("tfdt", 0, 0)
	b.u32(0)
	b.end()
	b.full("trun", 0, trunFirstFlags|trunSize|trunCTO)
	b.u32(3)
	b.u32(0) // first_sample_flags: sync
	for _, s := range v1 {
		b.u32(uint32(len(s)))
		b.u32(80)
	}
	b.end()
	b.end()
	b.end() // moof
	binary.BigEndian.PutUint32(b.b[patch:], uint32(len(b.b)-moof1+8))
	mdat = append(other, bytes.Join(v1, nil)...)
	b.start("mdat")
	b.b = append(b.b, mdat...)
	b.end()
	// moof 2
	dts = 500
	var runs [2][][]byte
	for r := 0; r < 2; r++ {
		for i := 0; i < 2; i++ {
			key := r == 1 && i == 0
			p := mkSample(key, 0, 33)
			nal := want[len(want)-1].Data[len(want[len(want)-1].Data)-int(binary.BigEndian.Uint32(p)):]
			runs[r] = append(runs[r], append(p, nal...))
		}
	}
	moof2 := len(b.b)
	b.start("moof")
	b.full("mfhd", 0, 0)
	b.u32(2)
	b.end()
	b.start("traf")
	b.full("tfhd", 0, tfhdDefaultBaseMoof|tfhdDuration)
	b.u32(7)
	b.u32(33)
	b.end()
	b.full("tfdt", 1, 0)
	b.u64(500)
	b.end()
	b.full("trun", 0, trunDataOffset|trunSize|trunFlags)
	b.u32(2)
	patch = len(b.b)
	b.u32(0)
	for _, s := range runs[0] {
		b.u32(uint32(len(s)))
		b.u32(sampleNonSync)
	}
	b.end()
	b.full("trun", 0, trunSize|trunFlags)
	b.u32(2)
	for i, s := range runs[1] {
		b.u32(uint32(len(s)))
		if i == 0 {
			b.u32(0)
		} else {
			b.u32(sampleNonSync)
		}
	}
	b.end()
	b.end()
	b.end()
	binary.BigEndian.PutUint32(b.b[patch:], uint32(len(b.b)-moof2+8))
	b.start("mdat")
	b.b = append(b.b, bytes.Join(append(runs[0], runs[1]...), nil)...)
	b.end()
	return b.b, want
}

func TestMP4FragmentOffsets(t *testing.T) {
	b, want := fmp4(t, rand.New(rand.NewPCG(3, 3)))
	m, err := NewMP4Reader(bytes.NewReader(b), int64(len(b)), "frag.mp4", MP4Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr := m.Tracks(); len(tr) != 2 || tr[0].Codec != CodecNone || m.Track().ID != 7 || !m.Track().Fragmented || m.Track().Codec != CodecH265 {
		t.Fatalf("tracks %+v", tr)
	}
	got := readMP4(t, b, MP4Options{})
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d", len(got), len(want))
	}
	for i := range want {
		a, g := want[i], got[i]
		if a.PTSNs != g.PTSNs || a.DTSNs != g.DTSNs || a.DurationNs != g.DurationNs || a.Key != g.Key || !bytes.Equal(a.Data, g.Data) {
			t.Errorf("sample %d: %d %d %d %v %x\nwant %d %d %d %v %x", i, g.PTSNs, g.DTSNs, g.DurationNs, g.Key, g.Data,
				a.PTSNs, a.DTSNs, a.DurationNs, a.Key, a.Data)
		}
	}
}
