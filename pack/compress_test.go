package pack

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// demoLikeFrames builds frames like the demo vehicle's: five 512x400
// gray8 camera images (a moving gradient, frame number in the first 8
// bytes) and a few hundred small sensor messages per frame.
func demoLikeFrames(n int) []*Frame {
	out := make([]*Frame, n)
	img := uint64(0)
	for i := range out {
		t := int64(i) * 166_000_000
		f := NewFrame(uint64(i), t)
		for k := 0; k < 5; k++ {
			b := make([]byte, 512*400)
			for j := range b {
				b[j] = byte(j + int(img)*3)
			}
			binary.LittleEndian.PutUint64(b, img)
			img++
			f.AddMetaWithData("camera/front", "", nil, t+int64(k), t+int64(k), b)
		}
		for k := 0; k < 200; k++ {
			var b [24]byte
			binary.LittleEndian.PutUint32(b[:], uint32(i*200+k))
			f.AddMetaWithData("vehicle/imu", "", nil, t+int64(k), t+int64(k), b[:])
		}
		out[i] = f
	}
	return out
}

// Very compressible frames are stored compressed (no ratio cap makes the
// writer give up) and read back bit-exact.
func TestVeryCompressibleFrames(t *testing.T) {
	frames := demoLikeFrames(12)
	size := func(c Compression) int64 {
		path := filepath.Join(t.TempDir(), c.String()+".pack")
		writeFile(t, path, frames, WriterOptions{Compression: c, CreatedNs: 1})
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var f Frame
		for i := 0; ; i++ {
			err := r.ReadInto(&f)
			if err == io.EOF {
				if i != len(frames) {
					t.Fatalf("%v: %d frames, want %d", c, i, len(frames))
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for b := 0; b < f.NumBlocks(); b++ {
				if !bytes.Equal(f.Block(b), frames[i].Block(b)) {
					t.Fatalf("%v: frame %d block %d differs", c, i, b)
				}
			}
		}
		return st.Size()
	}
	raw := size(CompressNone)
	for _, c := range []struct {
		codec    Compression
		minRatio float64
	}{{CompressZstd, 100}, {CompressLZ4, 50}} {
		got := size(c.codec)
		ratio := float64(raw) / float64(got)
		t.Logf("%v: %d -> %d bytes, ratio %.1f", c.codec, raw, got, ratio)
		if ratio < c.minRatio {
			t.Errorf("%v: ratio %.1f on demo-like frames, want >= %v", c.codec, ratio, c.minRatio)
		}
	}
}

// The zstd block walk accepts what the encoder makes and rejects stored
// data whose blocks cannot produce the stated length (a decompression
// bomb's claim), do not tile the stored bytes, or use a reserved type.
func TestZstdBlocksBound(t *testing.T) {
	cs := newCodecs()
	defer cs.close()
	src := bytes.Repeat([]byte("abcdefgh"), 64<<10) // 512 KiB
	comp, err := cs.compress(CompressZstd, nil, src)
	if err != nil || len(comp) == 0 {
		t.Fatalf("compress: %d bytes, %v", len(comp), err)
	}
	if _, reason := cs.decompress(CompressZstd, make([]byte, len(src)), comp, len(src)); reason != "" {
		t.Fatalf("encoder output rejected: %s", reason)
	}
	// frame header: magic, descriptor 0xA0 (single segment, 4-byte content
	// size), content size; then the blocks.
	frame := func(fcs uint32, blocks ...byte) []byte {
		b := []byte{0x28, 0xB5, 0x2F, 0xFD, 0xA0}
		b = binary.LittleEndian.AppendUint32(b, fcs)
		return append(b, blocks...)
	}
	rle := func(size int, last bool) []byte {
		h := size<<3 | 1<<1
		if last {
			h |= 1
		}
		return []byte{byte(h), byte(h >> 8), byte(h >> 16), 'x'}
	}
	two := append(rle(100, false), rle(28, true)...)
	f := func(name string, stored []byte, rawLen int, ok bool) {
		t.Helper()
		out, reason := cs.decompress(CompressZstd, make([]byte, rawLen), stored, rawLen)
		if ok != (reason == "") {
			t.Errorf("%s: reason %q, want ok=%v", name, reason, ok)
		}
		if ok && !bytes.Equal(out, bytes.Repeat([]byte("x"), rawLen)) {
			t.Errorf("%s: wrong output", name)
		}
	}
	f("two RLE blocks", frame(128, two...), 128, true)
	f("claims more than the blocks make", frame(1<<20, two...), 1<<20, false)
	f("trailing bytes", append(frame(128, two...), 0), 128, false)
	f("truncated block header", frame(128, two[:6]...), 128, false)
	f("no last block", frame(100, rle(100, false)...), 100, false)
	f("reserved block type", frame(100, 3<<1|1, 0, 0), 100, false)
}
