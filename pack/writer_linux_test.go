//go:build linux

package pack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
	"golang.org/x/sys/unix"
)

// A full disk is an error from WriteFrame (fallocate says ENOSPC before any
// page is touched or any byte buffered, so there is no SIGBUS and no lost
// frame), Close reports it, and every frame WriteFrame accepted is in the
// file. Both Create paths: write(2) (default) and mmap.
func TestWriterDiskFull(t *testing.T) {
	for _, mmap := range []bool{false, true} {
		t.Run(fmt.Sprintf("mmap=%v", mmap), func(t *testing.T) { testWriterDiskFull(t, mmap) })
	}
}

func testWriterDiskFull(t *testing.T, mmap bool) {
	dir := t.TempDir()
	err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m")
	testutil.SkipIfNotSupported(t, err) // needs CAP_SYS_ADMIN to mount a small tmpfs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, 0) })
	path := filepath.Join(dir, "full.pack")
	w, err := Create(path, WriterOptions{Window: 64 << 10, Mmap: mmap})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 32<<10)
	accepted := 0
	var werr error
	for i := 0; i < 100; i++ {
		f := NewFrame(uint64(i), int64(i))
		f.AddMetaBorrowed("big", "", nil, int64(i), 0, data)
		if werr = w.WriteFrame(f); werr != nil {
			break
		}
		accepted++
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("after %d frames: %v, want ENOSPC", accepted, werr)
	}
	if err := w.WriteFrame(NewFrame(0, 0)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("error is not sticky: %v", err)
	}
	if err := w.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Close: %v, want the ENOSPC", err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fullCopy := filepath.Join(t.TempDir(), "full.copy")
	if err := os.WriteFile(fullCopy, full, 0o644); err != nil {
		t.Fatal(err)
	}
	// With default windows (far larger than the disk), a dump that fits is
	// still written: preallocation falls back to what each frame needs.
	os.Remove(path)
	small := filepath.Join(dir, "small.pack")
	sw, err := Create(small, WriterOptions{Mmap: mmap})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		f := NewFrame(uint64(i), int64(i))
		f.AddMetaBorrowed("big", "", nil, int64(i), 0, data)
		if err := sw.WriteFrame(f); err != nil {
			t.Fatalf("frame %d of a 256 KiB dump on an empty 1 MiB disk: %v", i, err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := VerifyFile(small); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "rec.pack")
	rep, err := Recover(fullCopy, out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Frames != accepted {
		t.Fatalf("recovered %d frames, writer accepted %d", rep.Frames, accepted)
	}
}

func TestCreateErrors(t *testing.T) {
	if _, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir.pack"), WriterOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Create in a missing directory: %v", err)
	}
	if _, err := Create(filepath.Join(t.TempDir(), "x.pack"), WriterOptions{Compression: 9}); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("unknown codec: %v", err)
	}
}

// The mmap writer's prefault goroutine ends with Close, after an error, and
// when Create itself fails.
func TestMmapWriterNoGoroutineLeak(t *testing.T) {
	testutil.VerifyNone(t)
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "a.pack"), WriterOptions{Mmap: true, Window: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range benchFrames(8, 2, 300<<10, sensorData(1<<20, 3)) {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := VerifyFile(filepath.Join(dir, "a.pack")); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(filepath.Join(dir, "b.pack"), WriterOptions{Mmap: true, Compression: 9}); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("unknown codec: %v", err)
	}
}

// TestWriteFrameProvisional: frames written provisionally and taken back
// leave no trace (the next frame is written over them, Close cuts the
// file after the last kept one), kept ones are indexed as WriteFrame's;
// large (writev) and small (buffered) frames, compressed or not. The other
// writers refuse it.
func TestWriteFrameProvisional(t *testing.T) {
	for _, c := range []Compression{CompressNone, CompressLZ4} {
		path := filepath.Join(t.TempDir(), "p.pack")
		w, err := Create(path, WriterOptions{Compression: c, Prealloc: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		f := NewFrame(0, 0)
		var kept []uint64
		for i := range 40 {
			size := 100 + i*7
			if i%3 == 0 {
				size = 300<<10 + i
			}
			data := make([]byte, size)
			for j := range data {
				data[j] = byte(i + j*13)
			}
			f.Reset(uint64(i), int64(1000+i))
			f.SetType(FreeSync)
			f.AddMetaBorrowed("t", "", nil, int64(1000+i), int64(1000+i), data)
			if i%4 == 1 {
				if err := w.WriteFrame(f); err != nil {
					t.Fatal(err)
				}
				kept = append(kept, uint64(i))
				continue
			}
			if err := w.WriteFrameProvisional(f); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 && i != 38 {
				if err := w.TakeBackFrame(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			w.KeepFrame()
			kept = append(kept, uint64(i))
		}
		f.Reset(99, 2000)
		f.AddMetaBorrowed("t", "", nil, 2000, 2000, make([]byte, 200<<10))
		if err := w.WriteFrameProvisional(f); err != nil {
			t.Fatal(err)
		}
		if err := w.TakeBackFrame(); err != nil { // the last one taken back: Close cuts the file
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) > 0 || !rep.Complete || rep.Frames != len(kept) {
			t.Fatalf("compression %v: verify: complete %v, %d frames (want %d), problems %v", c, rep.Complete, rep.Frames, len(kept), rep.Problems)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range kept {
			if err := r.ReadInto(f); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			d := f.Data(0)
			if f.ID() != id || d[len(d)-1] != byte(int(id)+(len(d)-1)*13) {
				t.Fatalf("frame %d: id %d, want %d", i, f.ID(), id)
			}
		}
		r.Close()
	}
	w, err := Create(filepath.Join(t.TempDir(), "m.pack"), WriterOptions{Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.WriteFrameProvisional(NewFrame(0, 0)); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("mmap writer: %v, want ErrNotSupported", err)
	}
}
