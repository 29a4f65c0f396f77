package pack

import (
	"errors"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// shrinkingFile writes a file of 200 frames of about 16 KiB (3 MiB) and
// returns its path and frame offsets.
func shrinkingFile(t *testing.T, opts WriterOptions) (string, []int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shrink.pack")
	w, err := Create(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 16<<10)
	for i := range 200 {
		for j := range data {
			data[j] = byte((i*7919 + j*j) >> 3) // compresses a little
		}
		f := NewFrame(uint64(i), int64(i+1)*1e6)
		f.AddMetaWithData("camera", "", nil, int64(i+1)*1e6, int64(i+1)*1e6, data)
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return path, r.FrameOffsets()
}

// TestReaderSurvivesShrink (issue #31, item 3): a file truncated while a
// Reader has it mapped (re-created by a writer, cut by another process)
// gives errors naming the offset (ErrShrunk, or the damage the last page's
// zeros make), never a crash: the reads that follow, with and without
// read-ahead and data, a seek by time, the summary of a file without an
// index (a scan), the type sections, Verify and Recover. Before, the
// first read past the new end killed the process (SIGBUS: "fatal error:
// fault").
func TestReaderSurvivesShrink(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  ReaderOptions
		meta  bool
		strip bool
	}{{"data", ReaderOptions{}, false, false}, {"read-ahead", ReaderOptions{ReadAhead: 1}, false, false},
		{"meta", ReaderOptions{}, true, false}, {"no index", ReaderOptions{}, false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			path, offs := shrinkingFile(t, WriterOptions{Compression: CompressLZ4})
			if tc.strip {
				path = stripTail(t, path)
			}
			r, err := OpenWith(path, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var f Frame
			read := func() error {
				if tc.meta {
					return r.ReadMetaInto(&f)
				}
				return r.ReadInto(&f)
			}
			for range 3 {
				if err := read(); err != nil {
					t.Fatal(err)
				}
			}
			cut := offs[50] + 100 // a page well inside the file stays; the rest goes
			if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			var ce *CorruptError
			n := 3
			for {
				err := read()
				if err == nil {
					n++
					continue
				}
				if err == io.EOF || !errors.As(err, &ce) || ce.Offset < cut-4096 {
					t.Fatalf("after the file shrank to %d bytes, read %d: %v (offset %d)", cut, n, err, ce.Offset)
				}
				break
			}
			if n < 49 || n > 51 {
				t.Errorf("read %d frames before the cut at frame 50", n)
			}
			if err := r.SeekFrame(offs[150]); !errors.Is(err, ErrShrunk) {
				t.Errorf("SeekFrame past the end: %v", err)
			}
			err = r.SeekTime(int64(180) * 1e6)
			if !errors.Is(err, ErrShrunk) && !(tc.strip && err == nil && r.ScanError() != nil) {
				t.Errorf("SeekTime: %v (scan: %v)", err, r.ScanError())
			}
			if s := r.Summary(); !tc.strip && (s.Frames != 0 || !errors.Is(r.Fault(), ErrShrunk)) {
				t.Errorf("Summary after the index went: %d frames, fault %v", s.Frames, r.Fault())
			}
			if _, err := r.Types(); err != nil && !errors.Is(err, ErrShrunk) {
				t.Errorf("Types: %v", err)
			}
		})
	}
}

// TestVerifyRecoverSurviveShrink: Verify and Recover of a file that
// shrinks while they map it return an error naming the offset.
func TestVerifyRecoverSurviveShrink(t *testing.T) {
	path, offs := shrinkingFile(t, WriterOptions{})
	b, release, err := MapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := os.Truncate(path, offs[10]); err != nil {
		t.Fatal(err)
	}
	if _, err := verifyBytesGuarded(path, b, ReaderOptions{}); !errors.Is(err, ErrShrunk) {
		t.Errorf("verify: %v", err)
	}
	out := filepath.Join(t.TempDir(), "rec.pack")
	_, err = recoverBytes(path, b, ReaderOptions{}, func(o WriterOptions) (*Writer, error) { return Create(out, o) })
	var ce *CorruptError
	if !errors.Is(err, ErrShrunk) || !errors.As(err, &ce) || ce.Offset < offs[10]-4096 {
		t.Errorf("recover: %v", err)
	}
}

// TestFaultError: a fault on bytes a Reader handed out, touched by the
// caller after the file shrank, is named by FaultError (file, offset) for
// a caller that guards its own use as the edr-lite command does; a fault
// elsewhere is not ours (nil).
func TestFaultError(t *testing.T) {
	testutil.SkipUnderEmulation(t, "FaultError names the offset from the fault's address, and qemu-user delivers SIGBUS with address 0 (a Reader still turns it into ErrShrunk, at the file's new end: TestReaderSurvivesShrink)")
	path, offs := shrinkingFile(t, WriterOptions{})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f Frame
	r.SeekFrame(offs[100])
	if err := r.ReadInto(&f); err != nil {
		t.Fatal(err)
	}
	data := f.Data(0) // aliases the mapping
	if err := os.Truncate(path, offs[10]); err != nil {
		t.Fatal(err)
	}
	err = func() (err error) {
		defer func(old bool) {
			debug.SetPanicOnFault(old)
			err = FaultError(recover())
		}(debug.SetPanicOnFault(true))
		faultSink = data[len(data)/2] // past the new end
		return nil
	}()
	var ce *CorruptError
	if !errors.Is(err, ErrShrunk) || !errors.As(err, &ce) || ce.Path != path || ce.Offset < offs[100] || ce.Offset >= offs[101] {
		t.Fatalf("FaultError: %v", err)
	}
	if FaultError(errors.New("not a fault")) != nil || FaultError(nil) != nil {
		t.Fatal("FaultError of something else")
	}
}

var faultSink byte
