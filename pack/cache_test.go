package pack

import (
	"path/filepath"
	"testing"
)

func TestFrameCacheServesRepeatedReads(t *testing.T) {
	frames := sampleFrames(20)
	path := filepath.Join(t.TempDir(), "z.pack")
	writeFile(t, path, frames, WriterOptions{Compression: CompressZstd})
	fc, err := NewFrameCache(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	r, err := OpenWith(path, ReaderOptions{Cache: fc})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f Frame
	first := make([]*byte, len(frames))
	for i, want := range frames {
		if err := r.ReadInto(&f); err != nil {
			t.Fatal(err)
		}
		framesEqual(t, &f, want)
		first[i] = &f.Block(0)[0]
	}
	fc.Wait()
	r.Rewind()
	hits := 0
	for i, want := range frames {
		if err := r.ReadInto(&f); err != nil {
			t.Fatal(err)
		}
		framesEqual(t, &f, want)
		if &f.Block(0)[0] == first[i] {
			hits++ // same buffer: served from the cache, not decompressed again
		}
	}
	if hits == 0 {
		t.Fatal("second pass never hit the cache")
	}
	if _, err := NewFrameCache(0); err == nil {
		t.Fatal("zero-size cache accepted")
	}
}
