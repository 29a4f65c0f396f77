package dumpfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
)

// TestWriterTypes: a dump written by Writer, pack or MCAP, to a file or
// a stream, reads back with each message's type as declared (a change of
// type from the message it was given at), the messages as written, and
// dump information counting each topic; what ReadInfo says of it.
func TestWriterTypes(t *testing.T) {
	speed2 := ingest.Packed("vehicle.Speed", "f32le speed (m/s); f32le pedal; u8 gear")
	for _, format := range []string{FormatPack, FormatMCAP} {
		for _, stream := range []bool{false, true} {
			dir := t.TempDir()
			path := filepath.Join(dir, "w."+format)
			var buf bytes.Buffer
			var w *Writer
			var err error
			if stream {
				w, err = NewWriter(&buf, WriterOptions{Format: format, Compression: "lz4", Writer: "test"})
			} else {
				w, err = Create(path, WriterOptions{Format: format, Writer: "test"})
			}
			if err != nil {
				t.Fatal(err)
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", format, err)
				}
			}
			must(w.SetType("vehicle/speed", speedType))
			must(w.SetType("brake#left", brakeType))
			must(w.Write("vehicle/speed", 100, 99, speedMsg(10, 0.5)))
			must(w.Write("brake#left", 100, 0, []byte(`{"bar":1}`)))
			must(w.Write("log", 150, 0, []byte("raw")))
			must(w.SetType("vehicle/speed", speed2))
			must(w.Write("vehicle/speed", 200, 0, append(speedMsg(9, 0.25), 3)))
			must(w.SetInfo(dumpinfo.Info{Triggers: []dumpinfo.Trigger{{ID: 7, Reason: "test", TimeNs: 150}}}))
			must(w.Close())
			if err := w.Close(); !errors.Is(err, os.ErrClosed) {
				t.Errorf("second Close: %v", err)
			}
			if err := w.Write("x", 300, 0, nil); !errors.Is(err, os.ErrClosed) {
				t.Errorf("Write after Close: %v", err)
			}
			var src *Source
			if stream {
				src, err = OpenBytes("stream", buf.Bytes(), mcapOptions())
				must(err)
				defer src.Close()
			} else {
				if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
					t.Errorf("%s.tmp left: %v", path, err)
				}
				src = openSource(t, path)
				in, err := ReadInfo(path)
				must(err)
				var rows []string
				for _, tp := range in.Topics {
					rows = append(rows, tp.Name+" "+tp.Encoding+" "+tp.Type)
				}
				speedAs := "x-edr-packed" // MCAP stores a packed struct transcoded to JSON (the Timeline gives it back packed)
				if format == FormatMCAP {
					speedAs = "json"
				}
				if got := strings.Join(rows, "|"); got != "brake#left json brake.Pressure|log x-edr-raw |vehicle/speed "+speedAs+" vehicle.Speed" ||
					in.Writer != "test" || len(in.Triggers) != 1 || in.StartNs != 100 || in.EndNs != 200 || len(in.Topics[2].TypeChanges) != 1 {
					t.Errorf("%s: info %q %+v", format, got, in)
				}
			}
			it, err := NewTimeline(src).Messages()
			must(err)
			var got []string
			dec := NewDecoder()
			for {
				m, err := it.Next()
				if err == io.EOF {
					break
				}
				must(err)
				js, err := dec.JSON(m.Type, m.Data)
				if err != nil {
					js = append([]byte("raw:"), m.Data...)
				}
				got = append(got, m.Topic()+" "+m.Type.MessageEncoding+" "+string(js))
			}
			want := []string{`vehicle/speed x-edr-packed {"speed":10,"pedal":0.5}`, `brake#left json {"bar":1}`,
				`log x-edr-raw raw:raw`, `vehicle/speed x-edr-packed {"speed":9,"pedal":0.25,"gear":3}`}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s (stream %v):\n%s\nwant\n%s", format, stream, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			d, ok := src.DumpInfo()
			if !ok || len(d.Topics) != 3 || d.Topics[2].Topic != "vehicle/speed#" || d.Topics[2].Messages != 2 || d.Topics[2].Bytes != 17 ||
				d.Topics[2].Type != "vehicle.Speed" || d.Writer != "test" || d.Triggers[0].ID != 7 {
				t.Errorf("%s: dump information %+v", format, d)
			}
		}
	}
}

// TestWriterRefuses: a type that does not check out, a message out of
// time order, an unknown format or compression are errors naming what;
// Abort leaves no file.
func TestWriterRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.pack")
	w, err := Create(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetType("imu", ingest.Packed("Imu", "f33le ax")); err == nil || !strings.Contains(err.Error(), "topic imu") ||
		!strings.Contains(err.Error(), "unknown type f33le") {
		t.Errorf("bad layout: %v", err)
	}
	if err := w.Write("a", 10, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Write("b", 9, 0, nil); !errors.Is(err, ErrTimeOrder) || !strings.Contains(err.Error(), "topic b at 9, after a message at 10") {
		t.Errorf("out of order: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("files left after Abort: %v", m)
	}
	if _, err := Create(path, WriterOptions{Format: "jsonl"}); err == nil || !strings.Contains(err.Error(), `cannot write format "jsonl"`) {
		t.Errorf("format: %v", err)
	}
	if _, err := Create(path, WriterOptions{Compression: "gzip"}); err == nil || !strings.Contains(err.Error(), `compression "gzip"`) {
		t.Errorf("compression: %v", err)
	}
	mw, err := Create(filepath.Join(dir, "b.mcap"), WriterOptions{Format: FormatMCAP})
	if err != nil {
		t.Fatal(err)
	}
	mw.Write("a", 1, 0, []byte{1})
	mw.Abort()
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("files left after an MCAP Abort: %v", m)
	}
}

// TestWriterCopiesTimeline: WriteMessage copies a Timeline (a pack and an
// MCAP dump merged) into a dump that reads back as the same messages,
// meta and types.
func TestWriterCopiesTimeline(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pack"), filepath.Join(dir, "b.pack")
	writeRichPack(t, a, 1000, "a")
	writeRichPack(t, b, 1005, "b")
	tl, err := OpenTimeline(a, exportToMCAP(t, b, "zstd"), filepath.Join("testdata", "drive.pack"))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	it, err := tl.Messages()
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatPack, FormatMCAP} {
		out := filepath.Join(dir, "copy."+format)
		w, err := Create(out, WriterOptions{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		if err := it.SeekTime(0); err != nil {
			t.Fatal(err)
		}
		var types []string
		for {
			m, err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			types = append(types, m.Topic()+" "+m.Type.String())
			if err := w.WriteMessage(m); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		back := openSource(t, out)
		want := streamAll(t, tl.Sources()...)
		for i := range want {
			want[i].src = 0
			want[i].done = want[i].time // written as its message time
		}
		sameStream(t, format+" copy", streamAll(t, back), want)
		bit, _ := NewTimeline(back).Messages()
		for i := 0; ; i++ {
			m, err := bit.Next()
			if err == io.EOF {
				break
			}
			if got := m.Topic() + " " + m.Type.String(); err != nil || got != types[i] {
				t.Fatalf("%s: message %d: %s, %v; want %s", format, i, got, err, types[i])
			}
		}
	}
}
