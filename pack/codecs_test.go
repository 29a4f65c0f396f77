package pack

import (
	"path/filepath"
	"testing"
)

func TestCodecs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.pack")
	w, err := Create(p, WriterOptions{Compression: CompressLZ4, TargetFrameSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 2048) // compresses: stored as lz4
	noise := make([]byte, 2048) // does not: stored raw
	for i := range noise {
		noise[i] = byte(i*7919 + i*i*31 + i>>3)
	}
	w.Add("a", "", nil, 1, 1, zeros)
	w.Add("b", "", nil, 2, 2, noise)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := r.Codecs()
	if st.Frames[CompressLZ4] < 1 || st.Frames[CompressLZ4]+st.Frames[CompressNone] != r.Summary().Frames {
		t.Fatalf("codecs = %+v, frames %d", st, r.Summary().Frames)
	}
	if st.RawBytes != 4096 || st.StoredBytes >= st.RawBytes {
		t.Errorf("bytes stored %d of raw %d", st.StoredBytes, st.RawBytes)
	}
}
