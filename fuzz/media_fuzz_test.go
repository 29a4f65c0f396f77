package fuzz

import (
	"bytes"
	"encoding/hex"
	"errors"
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
// file. Properties: no panic; an error leaves no reader; an open error and
// every Next error other than io.EOF is a *media.BoxError or ErrNoTrack
// (never a read error: every offset is checked first); errors are sticky;
// no more samples than the file has bytes (each claims at least one);
// every sample's data bounded by the limits and the file; memory bounded
// by MaxBoxBytes and MaxSampleBytes.
func FuzzMP4(f *testing.F) {
	f.Add(mp4Seed(false))
	f.Add(mp4Seed(true))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := media.NewMP4Reader(bytes.NewReader(data), int64(len(data)), "fuzz.mp4",
			media.MP4Options{MaxBoxBytes: fuzzMaxBox, MaxSampleBytes: fuzzMaxBox})
		var be *media.BoxError
		if err != nil {
			if m != nil {
				t.Fatal("error with a partial result")
			}
			if !errors.As(err, &be) && !errors.Is(err, media.ErrNoTrack) {
				t.Fatalf("open: unexpected error type %T: %v", err, err)
			}
			return
		}
		tr := m.Track()
		if tr.Codec != media.CodecH264 && tr.Codec != media.CodecH265 || tr.Timescale == 0 {
			t.Fatalf("selected %+v", tr)
		}
		var s media.Sample
		n := 0
		for {
			err = m.Next(&s)
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.As(err, &be) {
					t.Fatalf("Next: unexpected error type %T: %v", err, err)
				}
				if err2 := m.Next(&s); err2 != err {
					t.Fatalf("error not sticky: %v then %v", err, err2)
				}
				break
			}
			if n++; n > len(data) {
				t.Fatalf("%d samples from %d bytes", n, len(data))
			}
			if s.Index != int64(n-1) || len(s.Data) > 4*fuzzMaxBox+len(data) {
				t.Fatalf("sample %d: index %d, %d bytes", n-1, s.Index, len(s.Data))
			}
		}
	})
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
