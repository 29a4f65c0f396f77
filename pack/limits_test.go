package pack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// manyMessages is a file of one frame whose meta is n empty messages (2
// bytes each), as a hostile writer makes it.
func manyMessages(n int) []byte {
	b := make([]byte, HeaderSize)
	putFileHeader(b, FileHeader{Major: FormatMajor, Writer: "t"})
	meta := bytes.Repeat([]byte{0x2a, 0x00}, n)
	rec := make([]byte, FrameHeaderSize, FrameHeaderSize+len(meta))
	putFrameHeader(rec, &frameHeader{metaLen: uint32(len(meta)), dataCRC: crc(nil)})
	rec = append(rec, meta...)
	le.PutUint32(rec[4:], crc(rec[8:]))
	return append(b, rec...)
}

// TestFrameMemoryLimit: a 2-byte-per-message meta of 4 M messages would
// cost 320 MiB of Message values. Every reader (file, stream, verify,
// recover) refuses it at the frame's offset before allocating, naming the
// limit; with the limit raised a frame reads, every message there.
func TestFrameMemoryLimit(t *testing.T) {
	const n = 4 << 20
	b := manyMessages(n)
	var ce *CorruptError
	r, err := NewBytesReader("many.pack", b, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	if err := r.ReadInto(&f); !errors.As(err, &ce) || !errors.Is(err, ErrMemoryLimit) || ce.Offset != HeaderSize {
		t.Fatalf("file reader: %v, want ErrMemoryLimit at offset %d", err, HeaderSize)
	}
	s, err := NewStreamReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReadInto(&f); !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("stream reader: %v, want ErrMemoryLimit", err)
	}
	v := VerifyBytes("many.pack", b)
	if v.OK() || !errors.Is(v.Problems[0], ErrMemoryLimit) || v.Problems[0].Offset != HeaderSize {
		t.Fatalf("verify: %+v", v.Problems)
	}
	// The same with a frame of 20 k messages (1.6 MB decoded) and limits
	// of 1 and 4 MiB: refused, then read, allocated once within the limit.
	const m = 20000
	small := manyMessages(m)
	r, _ = NewBytesReader("m.pack", small, ReaderOptions{MaxMemory: 1 << 20})
	if err := r.ReadInto(&f); !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("1 MiB limit: %v, want ErrMemoryLimit", err)
	}
	r, _ = NewBytesReader("m.pack", small, ReaderOptions{MaxMemory: 4 << 20})
	if err := r.ReadInto(&f); err != nil || f.Len() != m {
		t.Fatalf("4 MiB limit: %v, %d messages", err, f.Len())
	}
	if c := cap(f.msgs); c < m || c*messageCost > 4<<20 {
		t.Errorf("room for %d messages: want %d at least, %d bytes at most", c, m, 4<<20)
	}
}

// TestAddClosesFramesAtMaxFrameMessages: messages that add no bytes (no
// meta, no data) still close the pending frame at MaxFrameMessages, so a
// Writer never makes a frame a default reader refuses.
func TestAddClosesFramesAtMaxFrameMessages(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, WriterOptions{Writer: "t", CreatedNs: 1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*MaxFrameMessages + 10
	for i := range n {
		if err := w.Add("t", "", nil, int64(i+1), 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewBytesReader("t", buf.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	frames, msgs := 0, 0
	for {
		err := r.ReadInto(&f)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.Len() > MaxFrameMessages {
			t.Fatalf("frame of %d messages", f.Len())
		}
		frames++
		msgs += f.Len()
	}
	if frames != 3 || msgs != n {
		t.Fatalf("%d frames, %d messages; want 3, %d", frames, msgs, n)
	}
}

// TestMetadataLinear: recover (writing every metadata section again) and
// reading every section by name take time linear in the number of
// sections. They took quadratic time (200 k sections, more than 30 s:
// about 0.75 ms of quadratic work at 1 000 sections and 1.2 s at 40 000),
// which makes 40 times the sections cost about 700 times as much; linear
// work costs 40-120 times as much here (cache and GC effects grow with the
// file). Measured as CPU time of the test's own thread, the least of three
// interleaved tries each, so a busy machine does not fail it.
func TestMetadataLinear(t *testing.T) {
	file := func(n int) []byte {
		var buf bytes.Buffer
		w, err := NewStreamWriter(&buf, WriterOptions{Writer: "t", CreatedNs: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := w.AddMetadata(fmt.Sprintf("m%d", i), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	work := func(b []byte) time.Duration {
		start := testutil.ThreadCPU()
		var out bytes.Buffer
		if _, err := RecoverTo("t", b, func(o WriterOptions) (*Writer, error) { return NewStreamWriter(&out, o) }); err != nil {
			t.Fatal(err)
		}
		r, err := NewBytesReader("t", out.Bytes(), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range r.MetadataNames() {
			if _, ok := r.Metadata(name); !ok {
				t.Fatalf("metadata %q lost", name)
			}
		}
		return testutil.ThreadCPU() - start
	}
	small, big := file(1000), file(40000)
	ts, tb := time.Duration(1<<62), time.Duration(1<<62)
	for range 3 {
		ts, tb = min(ts, work(small)), min(tb, work(big))
	}
	ratio := float64(tb) / float64(max(ts, 1))
	t.Logf("40x the sections: %.0fx the CPU time (%v vs %v)", ratio, tb, ts)
	if ratio > 300 {
		t.Errorf("40x the sections took %.0fx the CPU time (%v vs %v): not linear", ratio, tb, ts)
	}
}
