//go:build !race

package durable

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestFilterWriteAllocs: writing through a Filter (hand-overs both ways,
// the File's writes) allocates nothing.
func TestFilterWriteAllocs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d := New(f, path, Options{})
	fl := NewFilter(d, nil)
	fl.Start(fl.Sink())
	p := make([]byte, 64<<10)
	testutil.AssertNoAllocs(t, func() {
		if _, err := fl.Write(p); err != nil {
			t.Fatal(err)
		}
	})
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	fl.Flush()
	d.Abort()
}

// TestFilterBuffersReused: a Filter takes its buffers from those of the
// Filters before it (a recorder's dumps one after another), so its whole
// life allocates far less than one buffer.
func TestFilterBuffersReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	p := make([]byte, 64<<10)
	life := func() {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		d := New(f, path, Options{})
		fl := NewFilter(d, nil)
		fl.Start(fl.Sink())
		for range 3 * FilterBuffers * BufferSize / len(p) {
			if _, err := fl.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := fl.Close(); err != nil {
			t.Fatal(err)
		}
		fl.Flush()
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
	if least > BufferSize/8 { // an os.File, channels, the Filter: a few KiB
		t.Fatalf("a Filter's life allocated %d bytes, want under %d", least, BufferSize/8)
	}
}
