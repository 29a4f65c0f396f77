//go:build !race && !ecu

package dumpfile

import "testing"

// TestMP4SourceAllocs: an MP4 read as a Source allocates nothing per
// sample after warm-up (demux, Annex B, the CompressedVideo message, the
// merge), nor when SeekTime starts it over.
func TestMP4SourceAllocs(t *testing.T) {
	path, sizes := testMP4(t, t.TempDir(), 300, 8<<10)
	src, err := OpenMedia(path, FormatMP4, MediaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m := NewMessages(src)
	n := 0
	step := func() {
		ok, err := m.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if err := m.SeekTime(0); err != nil {
				t.Fatal(err)
			}
			return
		}
		n++
		if len(m.Message().Data) < 8<<10 {
			t.Fatal("a message shorter than its sample")
		}
	}
	for range 2 * len(sizes) {
		step()
	}
	if a := testing.AllocsPerRun(1000, step); a != 0 {
		t.Errorf("an MP4 Source: %v allocs per sample, want 0", a)
	}
}
