package pack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
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

// TestWriterKeepsReadersLimits (issue #31, item 4): one set of limits. A
// Writer refuses, with ErrFrameTooLarge naming the limit, exactly the
// frames that a Reader and a StreamReader with the default memory limit
// would refuse: random frames (messages, data sizes, codecs) against a
// lowered limit, each written by the Writer under that limit, and when
// refused, written past it (the bytes a writer without the check made)
// and read back with the limit.
func TestWriterKeepsReadersLimits(t *testing.T) {
	const limit = 256 << 10
	defer func(l int64) { writeLimit = l }(writeLimit)
	rng := rand.New(rand.NewPCG(31, 4))
	zeros := make([]byte, 2*limit)
	noise := make([]byte, 2*limit)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	refused, kept := 0, 0
	for i := range 300 {
		f := NewFrame(uint64(i), int64(i))
		msgs := rng.IntN(6000)
		if rng.IntN(4) == 0 {
			msgs = rng.IntN(3)
		}
		for j := range msgs {
			var data []byte
			if rng.IntN(2) == 0 {
				src := zeros
				if rng.IntN(3) == 0 {
					src = noise
				}
				n := rng.IntN(64)
				if rng.IntN(msgs/8+1) == 0 {
					n = rng.IntN(2 * limit)
				}
				data = src[:n]
			}
			f.AddMetaBorrowed("t", "", nil, int64(j), 0, data)
		}
		codec := Compression(rng.IntN(3))
		write := func(lim int64) ([]byte, error) {
			writeLimit = lim
			var buf bytes.Buffer
			w, err := NewStreamWriter(&buf, WriterOptions{Compression: codec})
			if err != nil {
				t.Fatal(err)
			}
			werr := w.WriteFrame(f)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes(), werr
		}
		b, werr := write(limit)
		wasRefused := werr != nil
		if wasRefused {
			if !errors.Is(werr, ErrFrameTooLarge) || !strings.Contains(werr.Error(), "every reader takes by default") {
				t.Fatalf("frame %d: %v", i, werr)
			}
			refused++
			if b, werr = write(MaxFrameSize); werr != nil { // the bytes written without the check
				t.Fatal(werr)
			}
		} else {
			kept++
		}
		var fr Frame
		r, err := NewBytesReader("f.pack", b, ReaderOptions{MaxMemory: limit})
		if err != nil {
			t.Fatal(err)
		}
		rerr := r.ReadInto(&fr)
		s, err := NewStreamReaderWith(bytes.NewReader(b), ReaderOptions{MaxMemory: limit})
		if err != nil {
			t.Fatal(err)
		}
		serr := s.ReadInto(&fr)
		if readable := rerr == nil && serr == nil; readable == wasRefused {
			t.Errorf("frame %d (%d messages, %d bytes of data, codec %v): writer refused %v; Reader: %v; StreamReader: %v",
				i, f.Len(), f.DataSize(), codec, wasRefused, rerr, serr)
		}
	}
	if refused == 0 || kept == 0 {
		t.Fatalf("%d frames refused, %d kept: the cases do not cover both sides", refused, kept)
	}
	t.Logf("%d frames refused, %d kept", refused, kept)

	// Add: a large message starts its own frame rather than take the
	// pending one over the limit; one alone over it is refused, and the
	// writer goes on.
	writeLimit = limit
	var buf bytes.Buffer
	w, _ := NewStreamWriter(&buf, WriterOptions{TargetFrameSize: 4 * limit})
	for _, n := range []int{limit / 4, limit / 3, limit / 2, 0} {
		if err := w.Add("t", "", nil, 1, 0, noise[:n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Add("t", "", nil, 2, 0, noise[:limit+1]); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("Add of a message over the limit: %v", err)
	}
	if err := w.Add("t", "", nil, 3, 0, noise[:10]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, _ := NewBytesReader("add.pack", buf.Bytes(), ReaderOptions{MaxMemory: limit})
	var fr Frame
	var got []int
	for r.ReadInto(&fr) == nil {
		got = append(got, fr.Len())
	}
	if fmt.Sprint(got) != "[1 1 2 1]" {
		t.Errorf("Add's frames hold %v messages, want [1 1 2 1]", got)
	}
}

// TestFrameMemoryLimitBigMeta: a meta of few messages but many bytes (one
// message whose meta field is 3 MB) could hold more messages than a 1 MiB
// limit allows, so it is counted first: it holds one, which reads, and
// the reader's room for messages stays within the limit.
func TestFrameMemoryLimitBigMeta(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, WriterOptions{Writer: "t", CreatedNs: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := NewFrame(1, 100)
	f.AddMeta("big", "c", bytes.Repeat([]byte{7}, 3<<20), 1, 2)
	if err := w.WriteFrame(f); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	r, err := NewBytesReader("big.pack", b, ReaderOptions{MaxMemory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var g Frame
	if err := r.ReadInto(&g); err != nil || g.Len() != 1 || len(g.Message(0).Meta) != 3<<20 {
		t.Fatalf("read: %v, %d messages", err, g.Len())
	}
	if c := cap(g.msgs); c < 1 || c*messageCost > 1<<20 {
		t.Errorf("room for %d messages", c)
	}
}
