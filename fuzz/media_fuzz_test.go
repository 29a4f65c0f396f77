package fuzz

import (
	"bytes"
	"encoding/hex"
	"errors"
	"image"
	"image/jpeg"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/media"
)

// fuzzMaxBox bounds the moov and moof boxes (read into memory) and a sample.
const fuzzMaxBox = 1 << 20

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// mp4Seed writes a small H.264 stream with B-frames through media.MP4Writer
// (the ffmpeg-made seeds, plain and fragmented, H.264 and H.265, are in
// testdata/fuzz/FuzzMP4).
func mp4Seed(derive bool) []byte {
	sps := mustHex("6764000aacd9447b0110000003001000000303c0f1225960")
	pps := mustHex("68ebe3cb22c0")
	var f seekBuffer
	w, err := media.NewMP4Writer(&f, media.CodecH264, media.MP4WriterOptions{DeriveDTS: derive})
	if err != nil {
		panic(err)
	}
	order := []int{0, 3, 1, 2, 6, 4, 5, 7}
	for i, k := range order {
		nal := []byte{0x41, 0x9a, byte(i + 1), 0x55}
		data := append([]byte{0, 0, 0, 1}, nal...)
		if k == 0 {
			data = bytes.Join([][]byte{{}, sps, pps, {0x65, 0x88, 0x80, 0x40}}, []byte{0, 0, 0, 1})
		}
		s := media.Sample{PTSNs: 1e9 + int64(k)*40e6, DTSNs: 1e9 + int64(i-1)*40e6, Key: k == 0, Data: data}
		if err := w.Write(&s); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return f.b
}

type seekBuffer struct {
	b   []byte
	pos int
}

func (s *seekBuffer) Write(p []byte) (int, error) {
	if n := s.pos + len(p); n > len(s.b) {
		s.b = append(s.b, make([]byte, n-len(s.b))...)
	}
	copy(s.b[s.pos:], p)
	s.pos += len(p)
	return len(p), nil
}

func (s *seekBuffer) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += int64(s.pos)
	case io.SeekEnd:
		off += int64(len(s.b))
	}
	s.pos = int(off)
	return off, nil
}

// FuzzMP4 feeds arbitrary bytes to the MP4 demuxer as a hostile .mp4
// file, read as it is and with AcceptCut (the seeds include files cut
// inside an mdat and inside a moof). Properties: no panic; an error
// leaves no reader; an open error and every Next error other than io.EOF
// is a *media.BoxError or ErrNoTrack (never a read error: every offset is
// checked first); errors are sticky; no more samples than the file has
// bytes (each claims at least one); every sample's data bounded by the
// limits and the file; memory bounded by MaxBoxBytes and MaxSampleBytes.
// With AcceptCut: a file read to its end as it is reads the same samples
// and no Cut; a Cut counts the samples read and lies inside the file.
func FuzzMP4(f *testing.F) {
	f.Add(mp4Seed(false))
	f.Add(mp4Seed(true))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, sum, cut, err := fuzzReadMP4(t, data, false)
		n2, sum2, cut2, err2 := fuzzReadMP4(t, data, true)
		if cut != nil {
			t.Fatal("a Cut without AcceptCut")
		}
		if err == io.EOF && (err2 != io.EOF || n2 != n || sum2 != sum || cut2 != nil) {
			t.Fatalf("read to its end: %d samples; with AcceptCut %d, cut %v, %v", n, n2, cut2, err2)
		}
		if cut2 != nil && (cut2.Read != int64(n2) || cut2.Size != int64(len(data)) || cut2.Offset < 0 ||
			cut2.Lost < 0 || cut2.String() == "") {
			t.Fatalf("%d samples, %+v", n2, cut2)
		}
	})
}

// fuzzReadMP4 reads every sample of data and checks FuzzMP4's properties;
// it returns the samples read, a sum of their bytes, the Cut and the
// error that ended the reading (io.EOF at the end).
func fuzzReadMP4(t *testing.T, data []byte, acceptCut bool) (n int, sum uint64, cut *media.Cut, end error) {
	m, err := media.NewMP4Reader(bytes.NewReader(data), int64(len(data)), "fuzz.mp4",
		media.MP4Options{MaxBoxBytes: fuzzMaxBox, MaxSampleBytes: fuzzMaxBox, AcceptCut: acceptCut})
	var be *media.BoxError
	if err != nil {
		if m != nil {
			t.Fatal("error with a partial result")
		}
		if !errors.As(err, &be) && !errors.Is(err, media.ErrNoTrack) {
			t.Fatalf("open: unexpected error type %T: %v", err, err)
		}
		return 0, 0, nil, err
	}
	tr := m.Track()
	if tr.Codec != media.CodecH264 && tr.Codec != media.CodecH265 || tr.Timescale == 0 {
		t.Fatalf("selected %+v", tr)
	}
	var s media.Sample
	for {
		err = m.Next(&s)
		if err == io.EOF {
			return n, sum, m.Cut(), err
		}
		if err != nil {
			if !errors.As(err, &be) {
				t.Fatalf("Next: unexpected error type %T: %v", err, err)
			}
			if err2 := m.Next(&s); err2 != err {
				t.Fatalf("error not sticky: %v then %v", err, err2)
			}
			return n, sum, m.Cut(), err
		}
		if n++; n > len(data) {
			t.Fatalf("%d samples from %d bytes", n, len(data))
		}
		if s.Index != int64(n-1) || len(s.Data) > 4*fuzzMaxBox+len(data) {
			t.Fatalf("sample %d: index %d, %d bytes", n-1, s.Index, len(s.Data))
		}
		for _, c := range s.Data {
			sum = sum*31 + uint64(c)
		}
		sum += uint64(s.PTSNs)*7 + uint64(s.DTSNs)
	}
}

// FuzzJPEGTime feeds arbitrary file names to NameTime and arbitrary bytes
// to EXIFTime. Properties: no panic; a name's time written back as a
// 19-digit name reads the same; EXIFTime errors wrap ErrNotJPEG or
// ErrNoTime; the same input gives the same answer.
func FuzzJPEGTime(f *testing.F) {
	for _, name := range []string{"1796218342052000000.jpg", "cam_20261202T133222.052Z.jpeg", "20261202_133222_052000.jpg",
		"2026-12-02T13:32:22.052+01:00.jpg", "img_1764682342052.jpg", "frame_000123.jpg"} {
		f.Add(name, []byte("\xff\xd8\xff\xe1\x00\x08Exif\x00\x00\xff\xd9"))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		ns, ok := media.NameTime(name, nil)
		if ns2, ok2 := media.NameTime(name, nil); ns2 != ns || ok2 != ok {
			t.Fatal("NameTime is not deterministic")
		}
		if ok && ns >= 0 {
			s := strconv.FormatInt(ns, 10)
			back, ok := media.NameTime(strings.Repeat("0", 19-len(s))+s+".jpg", nil)
			if !ok || back != ns {
				t.Fatalf("%q: %d, written back as a 19-digit name: %d %v", name, ns, back, ok)
			}
		}
		loc := time.FixedZone("", 3600)
		ns, err := media.EXIFTime(data, loc)
		if err != nil {
			if !errors.Is(err, media.ErrNotJPEG) && !errors.Is(err, media.ErrNoTime) {
				t.Fatalf("EXIFTime: unexpected error %v", err)
			}
			if ns != 0 {
				t.Fatal("time with an error")
			}
			return
		}
		if ns2, err2 := media.EXIFTime(data, loc); ns2 != ns || err2 != nil {
			t.Fatal("EXIFTime is not deterministic")
		}
	})
}

// jpegSeed encodes a small image with image/jpeg.
func jpegSeed() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 24, 16))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 75}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// FuzzJPEGCheck feeds arbitrary bytes to CheckJPEG, which walks a JPEG
// to its end-of-image marker (seeds: a whole image, and the same cut in
// its header, in its image data and just before its end marker).
// Properties: no panic; errors wrap ErrCutJPEG, ErrDamagedJPEG or
// ErrNotJPEG; a whole image has image data; the answer does not change
// when bytes are appended to a whole image (they come after its end) and
// is the same for the same input.
func FuzzJPEGCheck(f *testing.F) {
	whole := jpegSeed()
	for _, n := range []int{len(whole), len(whole) - 1, len(whole) / 2, 200, 20} {
		f.Add(whole[:n])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		data, err := media.CheckJPEG(b)
		if err != nil && !errors.Is(err, media.ErrCutJPEG) && !errors.Is(err, media.ErrDamagedJPEG) && !errors.Is(err, media.ErrNotJPEG) {
			t.Fatalf("unexpected error %v", err)
		}
		if err == nil && !data {
			t.Fatal("whole without image data")
		}
		if d2, err2 := media.CheckJPEG(b); d2 != data || (err2 == nil) != (err == nil) {
			t.Fatal("not deterministic")
		}
		if err == nil {
			if d2, err2 := media.CheckJPEG(append(b[:len(b):len(b)], 0xFF, 0x00, 0x12)); !d2 || err2 != nil {
				t.Fatalf("bytes after the end: %v %v", d2, err2)
			}
		}
	})
}
