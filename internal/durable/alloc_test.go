//go:build !race

package durable

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestBehindBuffersReused: a Behind takes its two buffers from those of
// the Behinds released before it (a recorder's encrypted dumps one after
// another), so its whole life allocates far less than one buffer.
func TestBehindBuffersReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	p := make([]byte, 64<<10)
	life := func() {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		d := New(f, path, Options{Async: true})
		b := NewBehind(d)
		for range 3 * BufferSize / len(p) {
			if _, err := b.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		b.Release()
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	life()
	least := uint64(1 << 62)
	for range 5 { // the least of 5: a GC in one may empty the pool
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		life()
		runtime.ReadMemStats(&m1)
		least = min(least, m1.TotalAlloc-m0.TotalAlloc)
	}
	if least > BufferSize/8 { // an os.File, channels, the Behind: a few KiB
		t.Fatalf("a Behind's life allocated %d bytes, want under %d", least, BufferSize/8)
	}
}
