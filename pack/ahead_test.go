package pack

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// readAll reads every frame with ReadInto into two Frames used in turn (a
// caller keeping the previous frame), checking that the previous frame's
// data is still intact after the next read, and returns clones.
func readAll(t *testing.T, r *Reader) ([]*Frame, []int64) {
	t.Helper()
	var out []*Frame
	var offs []int64
	var fr [2]Frame
	var prevData []byte
	for i := 0; ; i++ {
		f := &fr[i%2]
		err := r.ReadInto(f)
		if err == io.EOF {
			return out, offs
		}
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			g := &fr[(i-1)%2]
			if got := g.DataSize(); got != len(prevData) || !bytes.Equal(joinBlocks(g), prevData) {
				t.Fatalf("frame %d: the previous frame's data changed under the next read", i)
			}
		}
		prevData = joinBlocks(f)
		out = append(out, cloneFrame(t, f))
		offs = append(offs, r.FrameOffset())
	}
}

func joinBlocks(f *Frame) []byte {
	var b []byte
	for i := 0; i < f.NumBlocks(); i++ {
		b = append(b, f.Block(i)...)
	}
	return b
}

// aheadSmallFrames makes read-ahead run over the tests' small frames.
func aheadSmallFrames(t testing.TB) {
	old := aheadMinFrame
	aheadMinFrame = 0
	t.Cleanup(func() { aheadMinFrame = old })
}

// An indexed file of small frames is read without helpers (the hand-over
// would cost more than it moves); one of large frames with them.
func TestReadAheadSkipsSmallFrames(t *testing.T) {
	small := filepath.Join(t.TempDir(), "small.pack")
	writeFile(t, small, sampleFrames(50), WriterOptions{})
	large := filepath.Join(t.TempDir(), "large.pack")
	writeFile(t, large, benchFrames(8, 4, 16<<10, sensorData(1<<20, 5)), WriterOptions{})
	for _, tc := range []struct {
		path  string
		ahead bool
	}{{small, false}, {large, true}} {
		r, err := OpenWith(tc.path, ReaderOptions{ReadAhead: 1})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := readAll(t, r)
		if (r.ahead != nil) != tc.ahead || len(got) == 0 {
			t.Errorf("%s: read ahead %v, want %v (%d frames)", tc.path, r.ahead != nil, tc.ahead, len(got))
		}
		r.Close()
	}
}

// Read-ahead hands out the same frames, offsets and positions as the plain
// reader, for every codec, across rewinds, seeks and meta-only reads in
// between.
func TestReadAheadSameFrames(t *testing.T) {
	aheadSmallFrames(t)
	frames := sampleFrames(200)
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		path := filepath.Join(t.TempDir(), "a.pack")
		writeFile(t, path, frames, WriterOptions{Compression: c})
		for _, workers := range []int{1, 2, 3} {
			r, err := OpenWith(path, ReaderOptions{ReadAhead: workers})
			if err != nil {
				t.Fatal(err)
			}
			got, offs := readAll(t, r)
			if r.ahead == nil {
				t.Fatal("the reader did not read ahead")
			}
			if len(got) != len(frames) {
				t.Fatalf("codec %v workers %d: %d frames, want %d", c, workers, len(got), len(frames))
			}
			for i := range got {
				framesEqual(t, got[i], frames[i])
			}
			// Seek into the middle, read a few, a meta-only read, rewind.
			var f Frame
			if err := r.SeekFrame(offs[50]); err != nil {
				t.Fatal(err)
			}
			for i := 50; i < 55; i++ {
				if err := r.ReadInto(&f); err != nil {
					t.Fatal(err)
				}
				framesEqual(t, &f, frames[i])
				if r.FrameOffset() != offs[i] {
					t.Fatalf("frame %d at %d, want %d", i, r.FrameOffset(), offs[i])
				}
			}
			if err := r.ReadMetaInto(&f); err != nil || f.ID() != 55 {
				t.Fatalf("meta read after read-ahead: id %d, %v", f.ID(), err)
			}
			if err := r.ReadInto(&f); err != nil || f.ID() != 56 {
				t.Fatalf("read after a meta read: id %d, %v", f.ID(), err)
			}
			if err := r.SeekTime(frames[120].Time()); err != nil {
				t.Fatal(err)
			}
			if err := r.ReadInto(&f); err != nil || f.ID() != 120 {
				t.Fatalf("read after SeekTime: id %d, %v", f.ID(), err)
			}
			r.Rewind()
			again, _ := readAll(t, r)
			if len(again) != len(frames) {
				t.Fatalf("after Rewind: %d frames", len(again))
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if err := r.ReadInto(&f); !errors.Is(err, ErrClosed) {
				t.Fatalf("read after Close: %v", err)
			}
		}
	}
}

// A damaged frame gives the same error, offset and position with and
// without read-ahead, and the frames before it are read.
func TestReadAheadDamageSameError(t *testing.T) {
	aheadSmallFrames(t)
	frames := sampleFrames(40)
	for _, c := range []Compression{CompressNone, CompressLZ4} {
		var buf bytes.Buffer
		w, _ := NewStreamWriter(&buf, WriterOptions{CreatedNs: 1, Compression: c})
		for _, f := range frames {
			w.WriteFrame(f)
		}
		w.Close()
		good := buf.Bytes()
		r0, _ := NewBytesReader("x", good, ReaderOptions{})
		offs := r0.FrameOffsets()
		for _, at := range []int64{offs[17] + 2, offs[17] + FrameHeaderSize + 3, offs[18] - 1, offs[39] + 1} {
			b := bytes.Clone(good)
			b[at] ^= 0x40
			run := func(ahead int) (n int, pos int64, err error) {
				r, _ := NewBytesReader("x.pack", b, ReaderOptions{ReadAhead: ahead})
				defer r.Close()
				var f Frame
				for {
					if err = r.ReadInto(&f); err != nil {
						return n, r.Tell(), err
					}
					n++
				}
			}
			n0, pos0, err0 := run(0)
			n1, pos1, err1 := run(2)
			if n0 != n1 || pos0 != pos1 || err0 == nil || err1 == nil || err0.Error() != err1.Error() {
				t.Fatalf("codec %v flip at %d: plain %d frames, %v, pos %d; read-ahead %d frames, %v, pos %d",
					c, at, n0, err0, pos0, n1, err1, pos1)
			}
		}
	}
}

// The decompression buffers the read-ahead slots hold stay within
// MaxMemory: a limit just above one frame still reads the whole file, one
// frame at a time.
func TestReadAheadMemoryBound(t *testing.T) {
	aheadSmallFrames(t)
	frames := benchFrames(30, 4, 64<<10, sensorData(1<<20, 9))
	path := filepath.Join(t.TempDir(), "a.pack")
	writeFile(t, path, frames, WriterOptions{Compression: CompressLZ4})
	// Each frame decompresses to 256 KiB: the budget (half the limit)
	// holds the caller's and one or two more.
	const limit = 1400 << 10
	r, err := OpenWith(path, ReaderOptions{ReadAhead: 2, MaxMemory: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f Frame
	ahead := false
	for i := 0; ; i++ {
		err := r.ReadInto(&f)
		if err == io.EOF {
			if i != len(frames) {
				t.Fatalf("%d frames, want %d", i, len(frames))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ahead = ahead || r.ahead.n > 0
		if held := r.ahead.held + frameHeld(&f); held > limit/2 {
			t.Fatalf("frame %d: the caller and the slots hold %d bytes of buffers, budget %d", i, held, limit/2)
		}
		var sum int64
		for _, s := range r.ahead.ring {
			sum += s.held
		}
		if sum != r.ahead.held {
			t.Fatalf("frame %d: slots hold %d bytes, accounted %d", i, sum, r.ahead.held)
		}
	}
	if !ahead {
		t.Fatal("no frame was read ahead: the test no longer tests the bound")
	}
}

// TestReadAheadLargeFrameOnce: a frame that does not fit twice in the
// budget is decoded into the caller's Frame, so re-reading it (a rewind,
// as the offline verbs do after finding the first message) reuses the
// caller's buffers instead of holding a second copy in a slot (the hostile
// corpus' frame of 4 M data blocks took 120 MB a copy).
func TestReadAheadLargeFrameOnce(t *testing.T) {
	aheadSmallFrames(t)
	f0 := NewFrame(0, 1)
	for i := 0; i < 50_000; i++ {
		f0.AddMetaBorrowed("t", "", nil, int64(i+1), int64(i+1), []byte{byte(i)})
	}
	path := filepath.Join(t.TempDir(), "big.pack")
	writeFile(t, path, []*Frame{f0}, WriterOptions{})
	need := int64(50_000) * (messageCost + blockCost) // about 5 MB
	limit := need * 3 / 2                             // one frame fits, not two; nor one in half
	r, err := OpenWith(path, ReaderOptions{ReadAhead: 1, MaxMemory: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f Frame
	for pass := 0; pass < 3; pass++ {
		r.Rewind()
		if err := r.ReadInto(&f); err != nil {
			t.Fatal(err)
		}
		if f.Len() != 50_000 {
			t.Fatalf("pass %d: %d messages", pass, f.Len())
		}
		if r.ahead != nil {
			var slots int64
			for _, s := range r.ahead.ring {
				slots += frameHeld(&s.f)
			}
			if slots > need/4 || r.ahead.n != 0 {
				t.Fatalf("pass %d: the slots hold %d bytes, %d frames in flight, beside the caller's %d", pass, slots, r.ahead.n, frameHeld(&f))
			}
		}
		if err := r.ReadInto(&f); err != io.EOF {
			t.Fatalf("pass %d: after the frame: %v", pass, err)
		}
	}
}
