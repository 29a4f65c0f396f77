package pack

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"testing/iotest"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// streamFile writes frames with a stream writer into memory; closed adds
// the metadata, index and trailer.
func streamFile(t testing.TB, frames []*Frame, opts WriterOptions, closed bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	w.SetDumpInfo(dumpinfo.Info{Writer: "stream-test", StartNs: 5, EndNs: 9})
	w.AddMetadata("extra", []byte("blob"))
	if closed {
		err = w.Close()
	} else {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readStream reads every frame of b through a StreamReader over r(b).
func readStream(t *testing.T, src io.Reader) (*StreamReader, []*Frame, error) {
	t.Helper()
	s, err := NewStreamReader(src)
	if err != nil {
		return nil, nil, err
	}
	var out []*Frame
	var f Frame
	for {
		if err := s.ReadInto(&f); err != nil {
			if err == io.EOF {
				return s, out, nil
			}
			if f.Len() != 0 || f.NumBlocks() != 0 {
				t.Fatal("error left a partial frame")
			}
			return s, out, err
		}
		out = append(out, cloneFrame(t, &f))
	}
}

// cloneFrame copies f out of the reader's buffers.
func cloneFrame(t *testing.T, f *Frame) *Frame {
	parts := f.Parts()
	for i := range parts {
		parts[i] = bytes.Clone(parts[i])
	}
	c, err := FrameFromParts(parts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStreamReaderReadsWhatTheMmapReaderReads(t *testing.T) {
	frames := sampleFrames(40)
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		for _, closed := range []bool{true, false} {
			b := streamFile(t, frames, WriterOptions{Compression: c, Writer: "w"}, closed)
			// one byte at a time: every read of the stream is short
			s, got, err := readStream(t, iotest.OneByteReader(bytes.NewReader(b)))
			if err != nil {
				t.Fatalf("codec %v closed %v: %v", c, closed, err)
			}
			if len(got) != len(frames) {
				t.Fatalf("codec %v closed %v: %d frames, want %d", c, closed, len(got), len(frames))
			}
			for i := range got {
				framesEqual(t, got[i], frames[i])
			}
			if s.Header().Writer != "w" {
				t.Errorf("header writer %q", s.Header().Writer)
			}
			if s.Tell() != int64(len(b)) {
				t.Errorf("Tell at the end %d, stream has %d bytes", s.Tell(), len(b))
			}
			d, ok := s.DumpInfo()
			if closed != ok || (ok && d.Writer != "stream-test") {
				t.Errorf("closed %v: DumpInfo %+v %v", closed, d, ok)
			}
			if m, ok := s.Metadata("extra"); closed && (!ok || string(m) != "blob") {
				t.Errorf("metadata extra = %q %v; names %v", m, ok, s.MetadataNames())
			}
			if err := s.ReadInto(&Frame{}); err != io.EOF {
				t.Errorf("read after the end: %v, want io.EOF", err)
			}
			if s.Indexed() != closed {
				t.Errorf("closed %v: Indexed %v", closed, s.Indexed())
			}
			r, err := NewBytesReader("x", b, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := s.Codecs(), r.Codecs(); !reflect.DeepEqual(got, want) {
				t.Errorf("codec %v: Codecs %+v, Reader's %+v", c, got, want)
			}
		}
	}
}

func TestStreamReaderMetaOnly(t *testing.T) {
	frames := sampleFrames(10)
	b := streamFile(t, frames, WriterOptions{Compression: CompressZstd}, true)
	s, err := NewStreamReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := NewBytesReader("x", b, ReaderOptions{})
	offs := r.FrameOffsets()
	var f Frame
	for i := range frames {
		if err := s.ReadMetaInto(&f); err != nil {
			t.Fatal(err)
		}
		if err := r.ReadMetaInto(&f); err != nil || r.FrameOffset() != offs[i] || s.FrameOffset() != offs[i] {
			t.Fatalf("frame %d at %d: FrameOffset %d (reader), %d (stream)", i, offs[i], r.FrameOffset(), s.FrameOffset())
		}
		if f.ID() != frames[i].ID() || f.Len() != frames[i].Len() || f.NumBlocks() != 0 {
			t.Fatalf("frame %d: id %d len %d blocks %d", i, f.ID(), f.Len(), f.NumBlocks())
		}
	}
	if err := s.ReadMetaInto(&f); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// A stream cut anywhere gives every whole frame before the cut, then
// io.EOF (cut at a record boundary) or ErrTruncated, never more.
func TestStreamReaderCutAnywhere(t *testing.T) {
	frames := sampleFrames(6)
	b := streamFile(t, frames, WriterOptions{}, true)
	var ends []int64 // end offset of each frame
	r, err := NewBytesReader("x", b, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range r.FrameOffsets() {
		var h frameHeader
		if _, err := parseFrameHeader(b[off:], &h); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, off+h.recLen)
	}
	for cut := HeaderSize; cut < len(b); cut++ {
		_, got, err := readStream(t, bytes.NewReader(b[:cut]))
		whole := 0
		for _, e := range ends {
			if e <= int64(cut) {
				whole++
			}
		}
		if len(got) != whole {
			t.Fatalf("cut at %d: %d frames, want %d", cut, len(got), whole)
		}
		if err != nil && !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: %v, want ErrTruncated or io.EOF", cut, err)
		}
	}
	if _, err := NewStreamReader(bytes.NewReader(b[:HeaderSize-1])); !errors.Is(err, ErrTruncated) {
		t.Errorf("cut header: %v", err)
	}
	if _, err := NewStreamReader(bytes.NewReader([]byte("MCAP...."))); !errors.Is(err, ErrBadMagic) {
		t.Errorf("not a pack stream: %v", err)
	}
}

// A header that declares a huge frame followed by a few bytes costs a few
// bytes of buffer, not the declared length (with a memory limit above that
// length); with the default limit it is refused at once.
func TestStreamReaderMemoryBoundedByBytesRead(t *testing.T) {
	b := streamFile(t, nil, WriterOptions{}, false)
	var h [FrameHeaderSize]byte
	putFrameHeader(h[:], &frameHeader{metaLen: 16, stored: MaxFrameSize - 1024, rawLen: MaxFrameSize - 1024})
	le.PutUint32(h[4:], crc(h[8:]))
	b = append(append(b, h[:]...), make([]byte, 300<<10)...)
	s, err := NewStreamReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if err := s.ReadInto(&Frame{}); !errors.As(err, &ce) || !errors.Is(err, ErrMemoryLimit) || ce.Offset != HeaderSize {
		t.Fatalf("default limit: got %v, want ErrMemoryLimit at offset %d", err, HeaderSize)
	}
	s, err = NewStreamReaderWith(bytes.NewReader(b), ReaderOptions{MaxMemory: 2 * MaxFrameSize})
	if err != nil {
		t.Fatal(err)
	}
	err = s.ReadInto(&Frame{})
	if !errors.As(err, &ce) || !errors.Is(err, ErrTruncated) || ce.Offset != HeaderSize {
		t.Fatalf("got %v, want ErrTruncated at offset %d", err, HeaderSize)
	}
	if c := cap(s.buf); c > 2*(300<<10+FrameHeaderSize) {
		t.Fatalf("buffer grew to %d bytes for %d bytes read", c, 300<<10+FrameHeaderSize)
	}
	if err2 := s.ReadInto(&Frame{}); err2 != err {
		t.Fatalf("error is not sticky: %v then %v", err, err2)
	}
}

func TestStreamReaderDamage(t *testing.T) {
	frames := sampleFrames(4)
	good := streamFile(t, frames, WriterOptions{}, true)
	r, _ := NewBytesReader("x", good, ReaderOptions{})
	offs := r.FrameOffsets()
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		want   error
		frames int
		off    int64
	}{
		{"data bit flip", func(b []byte) []byte { b[offs[2]-3] ^= 1; return b }, ErrChecksum, 1, offs[1] + 8},
		{"meta bit flip", func(b []byte) []byte { b[offs[1]+FrameHeaderSize+2] ^= 1; return b }, ErrChecksum, 1, offs[1] + 4},
		{"bad magic", func(b []byte) []byte { b[offs[3]] = 'X'; return b }, ErrCorrupt, 3, offs[3]},
		{"bytes after the trailer", func(b []byte) []byte { return append(b, 0) }, ErrCorrupt, 4, int64(len(good))},
		{"trailer CRC", func(b []byte) []byte { b[len(b)-10] ^= 1; return b }, ErrChecksum, 4, int64(len(good)) - TrailerSize + 4},
	} {
		b := tc.damage(bytes.Clone(good))
		_, got, err := readStream(t, bytes.NewReader(b))
		var ce *CorruptError
		if !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Offset != tc.off || len(got) != tc.frames {
			t.Errorf("%s: %d frames, %v (offset %v); want %d frames, %v at %d", tc.name, len(got), err, ce, tc.frames, tc.want, tc.off)
		}
		if ce != nil && ce.Path != "" {
			t.Errorf("%s: path %q, want empty (a stream)", tc.name, ce.Path)
		}
	}
}

// A frame after the index (a file glued to another) is damage, not data
// the mmap reader would not see.
func TestStreamReaderNothingAfterTheIndex(t *testing.T) {
	frames := sampleFrames(3)
	good := streamFile(t, frames, WriterOptions{}, true)
	r, _ := NewBytesReader("x", good, ReaderOptions{})
	frame0 := good[HeaderSize:r.FrameOffsets()[1]]
	b := append(append(bytes.Clone(good[:len(good)-TrailerSize]), frame0...), good[len(good)-TrailerSize:]...)
	_, got, err := readStream(t, bytes.NewReader(b))
	if !errors.Is(err, ErrCorrupt) || len(got) != 3 {
		t.Fatalf("%d frames, %v; want 3 and ErrCorrupt", len(got), err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestStreamReaderIOError(t *testing.T) {
	b := streamFile(t, sampleFrames(2), WriterOptions{}, true)
	boom := errors.New("boom")
	s, err := NewStreamReader(io.MultiReader(bytes.NewReader(b[:HeaderSize+10]), errReader{boom}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReadInto(&Frame{}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the reader's error", err)
	}
	s.Close()
	if err := s.ReadInto(&Frame{}); err != ErrClosed {
		t.Fatalf("after Close: %v", err)
	}
}

func TestDecodeFrame(t *testing.T) {
	frames := sampleFrames(3)
	b := streamFile(t, frames, WriterOptions{Compression: CompressLZ4}, true)
	r, _ := NewBytesReader("x", b, ReaderOptions{})
	offs := r.FrameOffsets()
	var f Frame
	n, err := DecodeFrame(b[offs[1]:], &f)
	if err != nil || int64(n) != offs[2]-offs[1] {
		t.Fatalf("DecodeFrame: %d %v", n, err)
	}
	framesEqual(t, &f, frames[1])
	rec := bytes.Clone(b[offs[1]:offs[2]])
	rec[len(rec)-1] ^= 1
	var ce *CorruptError
	if _, err := DecodeFrame(rec, &f); !errors.As(err, &ce) || !errors.Is(err, ErrChecksum) || ce.Offset != 8 {
		t.Fatalf("damaged record: %v", err)
	}
	if _, err := DecodeFrame(rec[:20], &f); !errors.Is(err, ErrTruncated) {
		t.Fatalf("short record: %v", err)
	}
}
