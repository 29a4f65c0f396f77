package pack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// sampleFrames returns n frames of sensor-like data: a few topics, some with
// data blocks, times 10 ms apart.
func sampleFrames(n int) []*Frame {
	out := make([]*Frame, n)
	for i := range out {
		t := int64(1_700_000_000_000_000_000) + int64(i)*10_000_000
		f := NewFrame(uint64(i), t)
		f.SetDoneTime(t + 5_000_000)
		if i%3 == 1 {
			f.SetType(FreeSync)
		}
		f.SetVersion("test-1.0")
		f.AddMeta("vehicle/speed", "can0", []byte(fmt.Sprintf(`{"v":%d.%d}`, 20+i%7, i%10)), t, t+1000)
		data := bytes.Repeat([]byte{byte(i), byte(i >> 8), 0x10, 0x20}, 64+i%50)
		f.AddMetaWithData("camera/front", "", []byte("jpeg"), t+100, t+2000, data)
		if i%2 == 0 {
			f.AddMetaWithData("lidar", "top", nil, t+200, t+3000, make([]byte, i%5))
		}
		out[i] = f
	}
	return out
}

func writeFile(t testing.TB, path string, frames []*Frame, opts WriterOptions) {
	t.Helper()
	w, err := Create(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func framesEqual(t testing.TB, got, want *Frame) {
	t.Helper()
	if got.ID() != want.ID() || got.Time() != want.Time() || got.DoneTime() != want.DoneTime() ||
		got.Type() != want.Type() || got.Version() != want.Version() || got.Len() != want.Len() ||
		got.NumBlocks() != want.NumBlocks() {
		t.Fatalf("frame %d differs: got id %d time %d done %d type %v version %q len %d blocks %d",
			want.ID(), got.ID(), got.Time(), got.DoneTime(), got.Type(), got.Version(), got.Len(), got.NumBlocks())
	}
	for i := 0; i < got.Len(); i++ {
		g, w := got.Message(i), want.Message(i)
		if g.Name != w.Name || g.Channel != w.Channel || !bytes.Equal(g.Meta, w.Meta) ||
			g.GenTs != w.GenTs || g.DoneTs != w.DoneTs || g.DataIndex != w.DataIndex ||
			!bytes.Equal(got.Data(i), want.Data(i)) {
			t.Fatalf("frame %d message %d differs:\n got %+v\nwant %+v", want.ID(), i, g, w)
		}
	}
}

func TestRoundTripEveryCodec(t *testing.T) {
	frames := sampleFrames(50)
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		t.Run(c.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.pack")
			writeFile(t, path, frames, WriterOptions{Writer: "test", CreatedNs: 42, Compression: c})
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if h := r.Header(); h.Writer != "test" || h.CreatedNs != 42 || h.Major != FormatMajor {
				t.Fatalf("header %+v", h)
			}
			if !r.Indexed() {
				t.Fatal("closed file has no index")
			}
			var f Frame
			for i, want := range frames {
				if err := r.ReadInto(&f); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				framesEqual(t, &f, want)
			}
			if err := r.ReadInto(&f); err != io.EOF {
				t.Fatalf("after last frame: %v, want io.EOF", err)
			}
		})
	}
}

// The streaming writer and the mmap writer produce identical bytes, also
// for frames whose large blocks the stream and write(2) paths write in
// place rather than assembled.
func TestStreamAndMmapIdentical(t *testing.T) {
	frames := sampleFrames(200)
	big := sensorData(1<<20, 11)
	for i, sizes := range [][]int{{100 << 10, 3, 70 << 10}, {64 << 10}, {5, 200 << 10, 64<<10 - 1, 300 << 10}} {
		f := NewFrame(uint64(1000+i), int64(1e12)+int64(i))
		p := 0
		for _, n := range sizes {
			f.AddMetaBorrowed("big", "", []byte("m"), int64(i), 0, big[p:p+n])
			p += n
		}
		frames = append(frames[:100+i], append([]*Frame{f}, frames[100+i:]...)...)
	}
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		t.Run(c.String(), func(t *testing.T) {
			opts := WriterOptions{Writer: "same", CreatedNs: 7, Compression: c, Window: 4096, Mmap: true}
			path := filepath.Join(t.TempDir(), "m.pack")
			w, err := Create(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			wopts := opts
			wopts.Mmap, wopts.Prealloc = false, 10000
			wpath := filepath.Join(t.TempDir(), "w.pack")
			ww, err := Create(wpath, wopts)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			sw, err := NewStreamWriter(&buf, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []*Writer{w, ww, sw} {
				for _, f := range frames {
					if err := x.WriteFrame(f); err != nil {
						t.Fatal(err)
					}
				}
				if err := x.SetDumpInfo(dumpinfo.Info{Writer: "t"}); err != nil {
					t.Fatal(err)
				}
				if err := x.Close(); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, buf.Bytes()) {
				t.Fatalf("mmap file (%d bytes) differs from stream (%d bytes)", len(got), buf.Len())
			}
			if got, _ := os.ReadFile(wpath); !bytes.Equal(got, buf.Bytes()) {
				t.Fatalf("write(2) file (%d bytes) differs from stream (%d bytes)", len(got), buf.Len())
			}
			if err := VerifyFile(wpath); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestReadMetaOnly(t *testing.T) {
	frames := sampleFrames(20)
	path := filepath.Join(t.TempDir(), "a.pack")
	writeFile(t, path, frames, WriterOptions{Compression: CompressLZ4})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f Frame
	for _, want := range frames {
		if err := r.ReadMetaInto(&f); err != nil {
			t.Fatal(err)
		}
		if f.ID() != want.ID() || f.Len() != want.Len() || f.NumBlocks() != 0 {
			t.Fatalf("meta-only frame %d: id %d len %d blocks %d", want.ID(), f.ID(), f.Len(), f.NumBlocks())
		}
		if f.Message(1).DataIndex != 0 || f.Data(1) != nil {
			t.Fatalf("meta-only read: data index %d data %v", f.Message(1).DataIndex, f.Data(1))
		}
	}
}

func TestSeekTellAndSeekTime(t *testing.T) {
	frames := sampleFrames(100)
	path := filepath.Join(t.TempDir(), "a.pack")
	writeFile(t, path, frames, WriterOptions{})
	for _, indexed := range []bool{true, false} {
		t.Run(fmt.Sprintf("indexed=%v", indexed), func(t *testing.T) {
			p := path
			if !indexed {
				p = stripTail(t, path)
			}
			r, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Indexed() != indexed {
				t.Fatalf("Indexed() = %v", r.Indexed())
			}
			var f Frame
			var offs []int64
			for {
				offs = append(offs, r.Tell())
				if err := r.ReadMetaInto(&f); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(offs[:100], r.FrameOffsets()) {
				t.Fatal("Tell offsets differ from index offsets")
			}
			if err := r.SeekFrame(offs[37]); err != nil {
				t.Fatal(err)
			}
			if err := r.ReadInto(&f); err != nil || f.ID() != 37 {
				t.Fatalf("after SeekFrame: id %d err %v", f.ID(), err)
			}
			if err := r.SeekFrame(offs[37] + 1); !errors.Is(err, ErrBadOffset) {
				t.Fatalf("SeekFrame to middle of a frame: %v", err)
			}
			seek := func(ns int64, wantID int64) {
				t.Helper()
				if err := r.SeekTime(ns); err != nil {
					t.Fatal(err)
				}
				err := r.ReadInto(&f)
				if wantID < 0 {
					if err != io.EOF {
						t.Fatalf("SeekTime(%d): %v, want EOF", ns, err)
					}
					return
				}
				if err != nil || f.ID() != uint64(wantID) {
					t.Fatalf("SeekTime(%d): frame %d err %v, want %d", ns, f.ID(), err, wantID)
				}
			}
			// Frame i holds messages at its time + 1, 2 (and 3 when i is
			// even) µs: a seek inside a frame lands on it.
			t0 := frames[0].Time()
			seek(0, 0)
			seek(t0, 0)
			seek(t0+1, 0)
			seek(t0+3001, 1)
			seek(frames[63].Time(), 63)
			seek(frames[63].Time()-1, 63)
			seek(frames[62].Time()+2500, 62)
			seek(frames[99].Time(), 99)
			seek(frames[99].Time()+2001, -1)
		})
	}
}

// stripTail copies path without its metadata, index and trailer.
func stripTail(t testing.TB, path string) string {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	end := r.end
	b, _ := os.ReadFile(path)
	r.Close()
	p := path + ".noindex"
	if err := os.WriteFile(p, b[:end], 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSummaryAndDumpInfo(t *testing.T) {
	frames := sampleFrames(30)
	path := filepath.Join(t.TempDir(), "a.pack")
	w, err := Create(path, WriterOptions{Writer: "edr-lite test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	info := dumpinfo.Info{
		Triggers: []dumpinfo.Trigger{{ID: 9, Reason: "hard-brake", Source: "lua", Rule: "hard-brake",
			Severity: 2, TimeNs: frames[10].Time(), PreNs: 15e9, PostNs: 5e9, Params: map[string]string{"decel": "9.1"}}},
		Topics: []dumpinfo.TopicAccount{{Topic: "vehicle/speed#can0", Type: "Speed", Messages: 30, Bytes: 300, Overwritten: 2}},
		Writer: "edr-lite test",
	}
	if err := w.SetDumpInfo(dumpinfo.Info{Writer: "replaced"}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetDumpInfo(info); err != nil {
		t.Fatal(err)
	}
	if err := w.AddMetadata("config.toml", []byte("pre = \"15s\"")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, indexed := range []bool{true, false} {
		p := path
		if !indexed {
			// Drop only index and trailer: metadata sections stay and are found by the scan.
			r, _ := Open(path)
			b, _ := os.ReadFile(path)
			x := r.index()
			_ = x
			end := r.end // index offset
			r.Close()
			p = path + ".noindex"
			os.WriteFile(p, b[:end], 0o644)
		}
		r, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s := r.Summary()
		if s.Frames != 30 || s.Messages != 30+30+15 || s.FirstNs != frames[0].Time() ||
			s.LastNs != frames[29].DoneTime() || s.Indexed != indexed || !s.TimeSorted {
			t.Fatalf("indexed=%v summary %+v", indexed, s)
		}
		wantTopics := []string{"camera/front#", "lidar#top", "vehicle/speed#can0"}
		var got []string
		for _, tp := range s.Topics {
			got = append(got, tp.Topic)
		}
		if !reflect.DeepEqual(got, wantTopics) {
			t.Fatalf("topics %v", got)
		}
		if s.Topics[1].Messages != 15 || s.Topics[1].FirstNs != frames[0].Time()+200 {
			t.Fatalf("lidar topic %+v", s.Topics[1])
		}
		d, ok := r.DumpInfo()
		want := info
		want.Triggers = slices.Clone(info.Triggers)
		want.Normalize() // the reader completes the trigger's window
		if !ok || !reflect.DeepEqual(d, want) {
			t.Fatalf("DumpInfo = %+v, %v", d, ok)
		}
		if b, ok := r.Metadata("config.toml"); !ok || string(b) != `pre = "15s"` {
			t.Fatalf("metadata %q %v", b, ok)
		}
		if _, ok := r.Metadata("nope"); ok {
			t.Fatal("missing metadata found")
		}
		r.Close()
	}
}

func TestAddBatchesFrames(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, WriterOptions{TargetFrameSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := w.Add("imu", "0", []byte("m"), int64(1000+i), int64(2000+i), make([]byte, 90)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewBytesReader("buf", buf.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	n, frames := 0, 0
	for r.ReadInto(&f) == nil {
		if f.Type() != FreeSync || f.ID() != uint64(frames) || f.Time() != int64(1000+n) {
			t.Fatalf("frame %d: type %v id %d time %d", frames, f.Type(), f.ID(), f.Time())
		}
		n += f.Len()
		frames++
	}
	if n != 100 || frames != 10 {
		t.Fatalf("%d messages in %d frames, want 100 in 10", n, frames)
	}
}

// TestAddEmptyDataBlock: an empty (non-nil) payload is a data block of 0
// bytes wherever it falls, first in a new writer's first frame included;
// nil is no block.
func TestAddEmptyDataBlock(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, WriterOptions{TargetFrameSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	datas := [][]byte{{}, {1, 2, 3, 4, 5, 6, 7, 8}, {}, nil, {9}}
	for i, d := range datas {
		if err := w.Add("t", "", nil, 1, int64(i+1), d); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewBytesReader("buf", buf.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	i := 0
	for r.ReadInto(&f) == nil {
		for j := 0; j < f.Len(); j, i = j+1, i+1 {
			if hasBlock := f.Message(j).DataIndex != NoData; hasBlock != (datas[i] != nil) || !bytes.Equal(f.Data(j), datas[i]) {
				t.Errorf("message %d: data index %d, data %v; want %v", i, f.Message(j).DataIndex, f.Data(j), datas[i])
			}
		}
	}
	if i != len(datas) {
		t.Fatalf("%d messages, want %d", i, len(datas))
	}
}

// Flipping any byte of a frame is detected on read with the frame's offset.
func TestCorruptionDetectedOnRead(t *testing.T) {
	frames := sampleFrames(3)
	var buf bytes.Buffer
	w, _ := NewStreamWriter(&buf, WriterOptions{CreatedNs: 1})
	for _, f := range frames {
		w.WriteFrame(f)
	}
	w.Close()
	good := buf.Bytes()
	r, _ := NewBytesReader("x", good, ReaderOptions{})
	offs := r.FrameOffsets()
	start, end := offs[1], offs[2]
	for i := start; i < end; i++ {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		r, err := NewBytesReader("x.pack", b, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var f Frame
		if err := r.ReadInto(&f); err != nil {
			t.Fatalf("frame 0 unaffected by flip at %d: %v", i, err)
		}
		err = r.ReadInto(&f)
		var ce *CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("flip at %d: err %v, want *CorruptError", i, err)
		}
		if ce.Path != "x.pack" || ce.Offset < start || ce.Offset >= end {
			t.Fatalf("flip at %d: error %v names offset outside frame [%d,%d)", i, err, start, end)
		}
		if f.Len() != 0 {
			t.Fatalf("flip at %d: partial frame left after error", i)
		}
	}
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	good := func() []byte {
		var buf bytes.Buffer
		w, _ := NewStreamWriter(&buf, WriterOptions{})
		w.Close()
		return buf.Bytes()
	}
	newer := good()
	le.PutUint16(newer[8:], FormatMajor+1)
	le.PutUint32(newer[60:], crc(newer[:60]))
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrBadMagic},
		{"text", []byte("hello world, this is not a pack file at all, no no no no no no no no"), ErrBadMagic},
		{"short header", good()[:20], ErrTruncated},
		{"header crc", func() []byte { b := good(); b[30] ^= 1; return b }(), ErrChecksum},
		{"newer major", newer, ErrUnsupportedVersion},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		os.WriteFile(p, c.b, 0o644)
		_, err := Open(p)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// A newer minor version is accepted and unknown sections are skipped.
	var buf bytes.Buffer
	w, _ := NewStreamWriter(&buf, WriterOptions{})
	w.WriteFrame(sampleFrames(1)[0])
	w.writeSection(99, []byte("future section"))
	w.WriteFrame(sampleFrames(2)[1])
	w.Close()
	b := buf.Bytes()
	le.PutUint16(b[10:], FormatMinor+5)
	le.PutUint32(b[60:], crc(b[:60]))
	r, err := NewBytesReader("future", b, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	n := 0
	for r.ReadInto(&f) == nil {
		n++
	}
	if n != 2 {
		t.Fatalf("read %d frames around an unknown section, want 2", n)
	}
}

func TestFrameAPI(t *testing.T) {
	f := NewFrame(5, 100)
	f.AddMetaWithData("cam", "l", []byte("a"), 1, 2, []byte("L1"))
	f.AddMetaWithData("cam", "r", []byte("b"), 1, 2, []byte("R1"))
	f.AddMeta("speed", "", []byte("c"), 3, 4)
	f.AddMetaWithData("cam", "l", []byte("d"), 5, 6, []byte("L2"))
	if got := f.Topics(); !reflect.DeepEqual(got, []string{"cam#l", "cam#r", "speed#"}) {
		t.Fatalf("Topics %v", got)
	}
	if got := f.Channels("cam"); !reflect.DeepEqual(got, []string{"l", "r"}) {
		t.Fatalf("Channels %v", got)
	}
	if n := f.BlockCount("cam", "l"); n != 2 {
		t.Fatalf("BlockCount %d", n)
	}
	bl := f.Blocks("cam", "l")
	if len(bl) != 2 || string(bl[1].Data) != "L2" || string(bl[1].Meta) != "d" || bl[1].GenTs != 5 {
		t.Fatalf("Blocks %+v", bl)
	}
	parts := f.Parts()
	if len(parts) != 4 {
		t.Fatalf("Parts has %d entries", len(parts))
	}
	g, err := FrameFromParts(parts)
	if err != nil {
		t.Fatal(err)
	}
	framesEqual(t, g, f)
	if _, err := FrameFromParts(parts[:2]); !errors.Is(err, ErrBadMeta) {
		t.Fatalf("FrameFromParts with missing blocks: %v", err)
	}
	if n := f.RemoveChannel("cam", "r"); n != 1 {
		t.Fatalf("RemoveChannel removed %d", n)
	}
	if f.NumBlocks() != 2 || string(f.Data(2)) != "L2" {
		t.Fatalf("after RemoveChannel: %d blocks, data %q", f.NumBlocks(), f.Data(2))
	}
	if n := f.Remove("cam"); n != 2 || f.Len() != 1 || f.NumBlocks() != 0 {
		t.Fatalf("Remove: %d removed, %d left, %d blocks", n, f.Len(), f.NumBlocks())
	}
	// Copies are independent of the caller's buffer; borrowed data is not.
	buf := []byte("xyz")
	f.AddMetaWithData("a", "", nil, 0, 0, buf)
	f.AddMetaBorrowed("b", "", nil, 0, 0, buf)
	buf[0] = 'Q'
	if string(f.Data(1)) != "xyz" || string(f.Data(2)) != "Qyz" {
		t.Fatalf("copied %q borrowed %q", f.Data(1), f.Data(2))
	}
	if name, ch := SplitTopic("a#b#c"); name != "a#b" || ch != "c" {
		t.Fatalf("SplitTopic %q %q", name, ch)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("pipe closed")
	}
	return len(p), nil
}

func TestStreamWriterErrorIsSticky(t *testing.T) {
	w, err := NewStreamWriter(&failWriter{n: 1 << 20}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 256<<10)
	var werr error
	for i := 0; i < 20 && werr == nil; i++ {
		f := NewFrame(uint64(i), 0)
		f.AddMetaBorrowed("x", "", nil, 0, 0, data)
		werr = w.WriteFrame(f)
	}
	if werr == nil || werr.Error() != "pipe closed" {
		t.Fatalf("WriteFrame on a failing writer: %v", werr)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush after failure succeeded")
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after failure succeeded")
	}
	if err := w.WriteFrame(NewFrame(0, 0)); err == nil {
		t.Fatal("WriteFrame after Close succeeded")
	}
}
