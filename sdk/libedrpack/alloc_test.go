//go:build cgo && !race

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

func writeTestPack(t *testing.T, path string, c pack.Compression) {
	w, err := pack.Create(path, pack.WriterOptions{Compression: c})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		f := pack.NewFrame(uint64(i), int64(i)*1e6)
		f.AddMeta("speed", "can0", []byte{1, 2, byte(i)}, int64(i), 0)
		f.AddMetaWithData("camera", "", []byte("jpeg"), int64(i), 0, bytes.Repeat([]byte{byte(i), 1}, 3000+i))
		f.AddMetaWithData("imu", "x", nil, int64(i), 0, make([]byte, i%7))
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadFrameAllocs: once its buffers have grown, reading frame after
// frame through the exported edrgo_pack_read_frame (what edr_pack_read_frame
// calls) allocates nothing in Go; the C view is reused too.
func TestReadFrameAllocs(t *testing.T) {
	dir := t.TempDir()
	paths := map[string]string{}
	for _, c := range []pack.Compression{pack.CompressNone, pack.CompressLZ4, pack.CompressZstd} {
		p := filepath.Join(dir, c.String()+".pack")
		writeTestPack(t, p, c)
		paths["pack-"+c.String()] = p
	}
	r, err := pack.Open(paths["pack-none"])
	if err != nil {
		t.Fatal(err)
	}
	mc := filepath.Join(dir, "x.mcap")
	f, _ := os.Create(mc)
	if _, err := mcap.ExportPack(r, f, mcap.ExportOptions{Options: mcap.Options{Compression: "zstd", ChunkSize: 64 << 10}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r.Close()
	paths["mcap"] = mc
	for name, p := range paths {
		read, done, err := openForTest(p)
		if err != nil {
			t.Fatal(err)
		}
		for range 200 { // grow the buffers: more than a pass over the file
			if err := read(); err != nil {
				t.Fatal(err)
			}
		}
		// one run of 1000 reads (20 passes over the file, seeks included):
		// the count is exact, not an average rounded down
		if n := testing.AllocsPerRun(1, func() {
			for range 1000 {
				if err := read(); err != nil {
					t.Fatal(err)
				}
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations in 1000 frames, want 0", name, n)
		}
		done()
	}
}
