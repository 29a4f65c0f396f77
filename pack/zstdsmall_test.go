package pack

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestZstdSmallFrames: frames of every small size, compressible, written
// with zstd carry their content size (FORMAT.md) and read back; the
// encoder left it out of frames under 256 bytes, which readers refused
// ("zstd frame content size differs"): a filtered typed dump, whose type
// sections cut frames short, was unreadable. A frame without it, as those
// writers wrote, still reads.
func TestZstdSmallFrames(t *testing.T) {
	c := newCodecs()
	for _, n := range []int{1, 17, 100, 255, 256, 1023, 1024, 1025, 5000, 300 << 10} {
		src := bytes.Repeat([]byte("edr-lite "), n/9+1)[:n]
		z, err := c.compress(CompressZstd, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		var h zstd.Header
		if err := h.Decode(z); err != nil || !h.HasFCS || h.FrameContentSize != uint64(n) {
			t.Errorf("%d bytes: content size %v %d, %v", n, h.HasFCS, h.FrameContentSize, err)
		}
		out, reason := c.decompress(CompressZstd, make([]byte, n), z, n)
		if reason != "" || !bytes.Equal(out, src) {
			t.Errorf("%d bytes: %s", n, reason)
		}
	}
	// a frame without the content size, as the encoder writes it by default
	old, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	src := bytes.Repeat([]byte("ab"), 60)
	z := old.EncodeAll(src, nil)
	var h zstd.Header
	if h.Decode(z); h.HasFCS {
		t.Fatal("the default encoder now writes the content size: the compatibility case is not tested")
	}
	if out, reason := c.decompress(CompressZstd, make([]byte, len(src)), z, len(src)); reason != "" || !bytes.Equal(out, src) {
		t.Errorf("frame without content size: %s", reason)
	}
	if _, reason := c.decompress(CompressZstd, make([]byte, len(src)+1), z, len(src)+1); reason == "" {
		t.Error("frame without content size decoded to another length")
	}

	// through the writer and the reader: many small compressible frames
	p := filepath.Join(t.TempDir(), "small.pack")
	w, err := Create(p, WriterOptions{Compression: CompressZstd, TargetFrameSize: 200})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := w.Add("t", "", nil, int64(i), int64(i)+1, bytes.Repeat([]byte{byte(i)}, 40)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f Frame
	n := 0
	for {
		if err := r.ReadInto(&f); err != nil {
			break
		}
		n += f.Len()
	}
	if n != 50 {
		t.Errorf("%d messages read back, want 50", n)
	}
}
