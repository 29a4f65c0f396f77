package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// findBoxes returns the offsets of the boxes at path ("moov/trak/mdia"),
// in file order, walking only the named containers.
func findBoxes(b []byte, path string) []int {
	parts := strings.Split(path, "/")
	var walk func(data []byte, base int, depth int) []int
	walk = func(data []byte, base int, depth int) []int {
		var out []int
		it := &boxIter{b: data, base: int64(base)}
		for x, ok := it.next(); ok; x, ok = it.next() {
			if fourCCString(x.typ) != parts[depth] {
				continue
			}
			if depth == len(parts)-1 {
				out = append(out, int(x.off))
			} else {
				out = append(out, walk(x.data, int(x.off)+x.hdr, depth+1)...)
			}
		}
		return out
	}
	return walk(b, 0, 0)
}

func put32(b []byte, off int, v uint32) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint32(c[off:], v)
	return c
}

func put64(b []byte, off int, v uint64) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint64(c[off:], v)
	return c
}

// TestMP4Hostile: damaged and hostile files are refused with a *BoxError
// that names the box and its offset, quickly, allocating little more than
// the file: boxes claiming 2^63 bytes, sample tables larger than the file,
// 0-size and undersized boxes, children overrunning parents, chunk offsets
// past the end, stsc runs going backwards, a second moov, limits,
// NAL lengths overrunning a sample, a timescale of 0, hostile fragments.
func TestMP4Hostile(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	base := writeMP4(t, CodecH264, MP4WriterOptions{}, synthStream(rng, CodecH264, 30, 10, 2, false))
	frag, _ := fmp4(t, rng)
	moov := findBoxes(base, "moov")[0]
	stbl := "moov/trak/mdia/minf/stbl/"
	at := func(b []byte, path string) int { return findBoxes(b, path)[0] }
	stsz, stts, stco, stsc := at(base, stbl+"stsz"), at(base, stbl+"stts"), at(base, stbl+"stco"), at(base, stbl+"stsc")
	mdhd, mdat := at(base, "moov/trak/mdia/mdhd"), at(base, "mdat")
	trun := findBoxes(frag, "moof/traf/trun")[1] // track 7's
	moof := findBoxes(frag, "moof")[0]
	tfhd := findBoxes(frag, "moof/traf/tfhd")[2]  // second moof's
	trun2 := findBoxes(frag, "moof/traf/trun")[2] // second moof's first
	bigMoof := binary.BigEndian.AppendUint32(nil, 4008)
	bigMoof = append(bigMoof, "moof"...)
	bigMoof = append(bigMoof, make([]byte, 4000)...)
	junk := binary.BigEndian.AppendUint32(nil, 1)
	junk = append(junk, "junk"...)
	junk = binary.BigEndian.AppendUint64(junk, 1<<63)

	for _, c := range []struct {
		name   string
		file   []byte
		opts   MP4Options
		box    string // the error's box path ends with this
		off    int
		err    error
		atNext bool // refused by Next rather than by the open
	}{
		{"box claiming 2^63 bytes", append(bytes.Clone(base), junk...), MP4Options{}, "junk", len(base), ErrMalformed, false},
		{"mdat claiming 2^63 bytes", put64(base, mdat+8, 1<<63), MP4Options{}, "mdat", mdat, ErrMalformed, false},
		{"moov claiming 4 GiB", put32(base, moov, 0xFFFFFFFF), MP4Options{}, "moov", moov, ErrMalformed, false},
		{"stsz table larger than the file", put32(base, stsz+16, 1<<30), MP4Options{}, "stsz", stsz, ErrMalformed, false},
		{"stsz 2^32-1 samples of 4 GiB", put32(put32(base, stsz+12, 0xFFFFFFFF), stsz+16, 0xFFFFFFFF), MP4Options{}, "stsz", stsz, ErrMalformed, false},
		{"stts table larger than the file", put32(base, stts+12, 0xFFFFFFFF), MP4Options{}, "stts", stts, ErrMalformed, false},
		{"stts timing too few samples", put32(base, stts+16, 1), MP4Options{}, "stts", stts, ErrMalformed, false},
		{"0-size box inside moov", put32(base, moov+8+108, 0), MP4Options{}, "moov/trak", moov + 8 + 108, ErrMalformed, false},
		{"box smaller than its header", put32(base, at(base, "moov/trak/mdia/minf/stbl"), 4), MP4Options{}, "stbl", at(base, "moov/trak/mdia/minf/stbl"), ErrMalformed, false},
		{"child overrunning its parent", put32(base, at(base, stbl+"stsd"), 1<<20), MP4Options{}, "stsd", at(base, stbl+"stsd"), ErrMalformed, false},
		{"stsc going backwards", put32(base, stsc+16, 2), MP4Options{}, "stsc", stsc, ErrMalformed, false},
		{"stsc samples per chunk 0", put32(base, stsc+20, 0), MP4Options{}, "stsc", stsc, ErrMalformed, false},
		{"a second moov", append(bytes.Clone(base), base[moov:]...), MP4Options{}, "moov", len(base), ErrMalformed, false},
		{"moov over MaxBoxBytes", base, MP4Options{MaxBoxBytes: 100}, "moov", moov, ErrLimit, false},
		{"timescale 0", put32(base, mdhd+20, 0), MP4Options{}, "mdhd", mdhd, ErrMalformed, false},
		{"chunk offset past the end", put32(base, stco+16, 0xFFFFFF00), MP4Options{}, "stco", stco, ErrMalformed, true},
		{"sample over MaxSampleBytes", base, MP4Options{MaxSampleBytes: 10}, "stco", stco, ErrLimit, true},
		{"NAL length overrunning its sample", put32(base, mdat+16, 0xFFFFFF), MP4Options{}, "mdat", mdat + 16, ErrMalformed, true},
		{"trun claiming 2^32-1 samples", put32(frag, trun+12, 0xFFFFFFFF), MP4Options{}, "trun", trun, ErrMalformed, true},
		{"moof claiming more than the file", put32(frag, moof, 0x7FFFFFFF), MP4Options{}, "moof", moof, ErrMalformed, false},
		{"moof over MaxBoxBytes", append(bytes.Clone(frag), bigMoof...), MP4Options{MaxBoxBytes: 3000}, "moof", len(frag), ErrLimit, true},
		{"tfhd flags needing more bytes than it has", put32(frag, tfhd+8, tfhdBaseOffset), MP4Options{}, "tfhd", tfhd, ErrMalformed, true},
		{"trun data past the end", put32(frag, trun2+16, 0x7FFFFFFF), MP4Options{}, "trun", trun2, ErrMalformed, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			m, err := NewMP4Reader(bytes.NewReader(c.file), int64(len(c.file)), "hostile.mp4", c.opts)
			if c.atNext {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				var s Sample
				for err == nil {
					err = m.Next(&s)
				}
				if err == io.EOF {
					t.Fatal("read to the end")
				}
				if err2 := m.Next(&s); err2 != err {
					t.Errorf("error not sticky: %v then %v", err, err2)
				}
			} else if m != nil {
				t.Fatal("error with a partial result")
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			var be *BoxError
			if !errors.As(err, &be) || !errors.Is(err, c.err) || !strings.HasSuffix(be.Box, c.box) ||
				be.Offset != int64(c.off) {
				t.Fatalf("got %v, want a %v BoxError on %s at %d", err, c.err, c.box, c.off)
			}
			t.Logf("%v", err)
			if elapsed > 200*time.Millisecond {
				t.Errorf("took %v", elapsed)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20+2*uint64(len(c.file)) {
				t.Errorf("allocated %d bytes for a %d-byte file", alloc, len(c.file))
			}
		})
	}
}

// TestMP4Truncated: every prefix of a plain and a fragmented file is
// either refused or read to a clean end, never a panic or a hang.
func TestMP4Truncated(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	plain := writeMP4(t, CodecH265, MP4WriterOptions{}, synthStream(rng, CodecH265, 12, 4, 1, true))
	frag, _ := fmp4(t, rng)
	for _, b := range [][]byte{plain, frag} {
		for n := 0; n <= len(b); n += 1 + n/50 {
			m, err := NewMP4Reader(bytes.NewReader(b[:n]), int64(n), "cut.mp4", MP4Options{})
			if err != nil {
				continue
			}
			var s Sample
			for i := 0; err == nil; i++ {
				if i > 1000 {
					t.Fatalf("prefix %d: more than 1000 samples", n)
				}
				err = m.Next(&s)
			}
		}
	}
}
