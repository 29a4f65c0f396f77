//go:build !race

package pack

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/evidence"
)

// readLoop reads the next frame, rewinding at the end.
func readLoop(t *testing.T, r *Reader, f *Frame, meta bool) {
	read := r.ReadInto
	if meta {
		read = r.ReadMetaInto
	}
	err := read(f)
	if err == io.EOF {
		r.Rewind()
		err = read(f)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadIntoAllocs(t *testing.T) {
	frames := sampleFrames(64)
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		for _, meta := range []bool{false, true} {
			path := filepath.Join(t.TempDir(), "a.pack")
			writeFile(t, path, frames, WriterOptions{Compression: c})
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var f Frame
			for range 2 * len(frames) { // warm buffers, intern table, decoders
				readLoop(t, r, &f, meta)
			}
			if n := testing.AllocsPerRun(500, func() { readLoop(t, r, &f, meta) }); n != 0 {
				t.Errorf("codec %v meta-only %v: %v allocs per frame, want 0", c, meta, n)
			}
			// Exact over whole passes: the end of the file (io.EOF) and
			// Rewind allocate nothing either, with SkipDamaged too.
			r.SetSkipDamaged(true)
			if n := testing.AllocsPerRun(1, func() {
				for range 3 * len(frames) {
					readLoop(t, r, &f, meta)
				}
			}); n != 0 {
				t.Errorf("codec %v meta-only %v: %v allocs in three passes, want 0", c, meta, n)
			}
			r.Close()
		}
	}
}

// Read-ahead hands frames over by swapping buffers: nothing is allocated
// per frame once every slot's buffers have grown.
func TestReadAheadAllocs(t *testing.T) {
	aheadSmallFrames(t)
	frames := sampleFrames(64)
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		path := filepath.Join(t.TempDir(), "a.pack")
		writeFile(t, path, frames, WriterOptions{Compression: c})
		r, err := OpenWith(path, ReaderOptions{ReadAhead: 2})
		if err != nil {
			t.Fatal(err)
		}
		var f Frame
		for range 4 * len(frames) {
			readLoop(t, r, &f, false)
		}
		if n := testing.AllocsPerRun(500, func() { readLoop(t, r, &f, false) }); n != 0 {
			t.Errorf("codec %v read-ahead: %v allocs per frame, want 0", c, n)
		}
		r.Close()
	}
}

func TestSeekTimeAllocs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.pack")
	frames := sampleFrames(100)
	writeFile(t, path, frames, WriterOptions{})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	i := 0
	if n := testing.AllocsPerRun(500, func() {
		i++
		if err := r.SeekTime(frames[i%100].Time()); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("SeekTime: %v allocs, want 0", n)
	}
}

func TestWriteFrameAllocs(t *testing.T) {
	frames := sampleFrames(16)
	// and frames with blocks large enough to be written in place
	frames = append(frames, benchFrames(4, 2, 96<<10, sensorData(1<<20, 1))...)
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		w, err := NewStreamWriter(io.Discard, WriterOptions{Compression: c})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			w.WriteFrame(f)
		}
		i := 0
		if n := testing.AllocsPerRun(1000, func() {
			i++
			if err := w.WriteFrame(frames[i%len(frames)]); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("codec %v: WriteFrame %v allocs, want 0", c, n)
		}
		w.Close()
	}
}

func TestMetaCodecAllocs(t *testing.T) {
	f := sampleFrames(3)[2]
	buf := f.AppendMeta(nil)
	var g Frame
	g.UnmarshalMeta(buf)
	if n := testing.AllocsPerRun(1000, func() {
		buf = f.AppendMeta(buf[:0])
		if err := g.UnmarshalMeta(buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("meta encode+decode: %v allocs, want 0", n)
	}
}

// loopReader replays b forever from offset start on: a stream of frames
// without end.
type loopReader struct {
	b          []byte
	start, pos int
}

func (l *loopReader) Read(p []byte) (int, error) {
	if l.pos == len(l.b) {
		l.pos = l.start
	}
	n := copy(p, l.b[l.pos:])
	l.pos += n
	return n, nil
}

func TestStreamReadIntoAllocs(t *testing.T) {
	frames := sampleFrames(64)
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		for _, meta := range []bool{false, true} {
			var buf bytes.Buffer
			w, _ := NewStreamWriter(&buf, WriterOptions{Compression: c})
			for _, f := range frames {
				w.WriteFrame(f)
			}
			w.Flush() // no index or trailer: the frames repeat forever
			s, err := NewStreamReader(&loopReader{b: buf.Bytes(), start: HeaderSize, pos: 0})
			if err != nil {
				t.Fatal(err)
			}
			read := s.ReadInto
			if meta {
				read = s.ReadMetaInto
			}
			var f Frame
			for range 2 * len(frames) {
				if err := read(&f); err != nil {
					t.Fatal(err)
				}
			}
			if n := testing.AllocsPerRun(500, func() {
				if err := read(&f); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("codec %v meta-only %v: %v allocs per frame, want 0", c, meta, n)
			}
		}
	}
}

// TestSealedWriteAllocs: a sealed file's frames, lent to the seal's
// worker one behind (WriteFrameLent, KeepFrame) or written with
// HashBehind, allocate nothing in steady state.
func TestSealedWriteAllocs(t *testing.T) {
	s, _ := testSigner(t)
	sealer := evidence.NewSealer(s, evidence.FormatPack, evidence.Link{})
	sealer.Async(func() {})
	w, err := Create(filepath.Join(t.TempDir(), "sealed.pack"), WriterOptions{Seal: sealer, HashBehind: true})
	if err != nil {
		t.Fatal(err)
	}
	frames := benchFrames(2, 2, 96<<10, sensorData(1<<20, 1))
	var l tornLender
	i := 0
	step := func() {
		i++
		f := frames[i%len(frames)]
		if i%2 == 0 {
			if err := w.WriteFrame(f); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := w.WriteFrameLent(f, &l); err != nil {
			t.Fatal(err)
		}
		w.KeepFrame()
	}
	for range 4 {
		step()
	}
	if n := testing.AllocsPerRun(200, step); n != 0 {
		t.Errorf("sealed WriteFrameLent/WriteFrame: %v allocs, want 0", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
