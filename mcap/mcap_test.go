package mcap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

var compressions = []string{CompressionNone, CompressionLZ4, CompressionZstd}

// testTopics are the topics every test file carries: typed, raw, and one
// with a channel suffix.
var testTopics = []Topic{
	{Name: "vehicle/speed", Type: ingest.Raw("edr.Speed")},
	{Name: "camera/front", Channel: "left"},
	{Name: "imu", Type: ingest.Type{MessageEncoding: "protobuf", Schema: ingest.Schema{Name: "edr.Imu", Encoding: "protobuf", Data: []byte{0x0a, 0x03, 'i', 'm', 'u'}}}},
}

type sent struct {
	topic string
	m     Message
}

// testMessages makes n deterministic messages over the test topics, in
// time order, with sizes from 0 to a few KiB (sensor-like: compressible).
func testMessages(n int) []sent {
	out := make([]sent, 0, n)
	for i := range n {
		ch := uint16(i % len(testTopics))
		size := (i * 37) % 3000
		if i%11 == 0 {
			size = 0
		}
		data := make([]byte, size)
		for j := range data {
			data[j] = byte((i + j/16) % 251)
		}
		ts := uint64(1_700_000_000_000_000_000) + uint64(i)*1_000_000
		out = append(out, sent{TopicName(testTopics[ch].Name, testTopics[ch].Channel),
			Message{ChannelID: ch, Sequence: uint32(i), LogTime: ts, PublishTime: ts - 500, Data: data}})
	}
	return out
}

func writeTest(t testing.TB, w *Writer, msgs []sent) {
	t.Helper()
	for i, tp := range testTopics {
		id, err := w.AddTopic(tp)
		if err != nil || id != uint16(i) {
			t.Fatalf("AddTopic(%v) = %d, %v", tp, id, err)
		}
	}
	for i := range msgs {
		if err := w.WriteMessage(&msgs[i].m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddMetadata("edr.trigger", map[string]string{"reason": "hard-brake", "time": "1700000000"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func encode(t testing.TB, opt Options, msgs []sent) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, opt)
	if err != nil {
		t.Fatal(err)
	}
	writeTest(t, w, msgs)
	return buf.Bytes()
}

func readAll(t testing.TB, b []byte) []sent {
	t.Helper()
	r, err := NewReader(b, "test.mcap", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []sent
	err = r.Messages(func(c *Channel, m *Message) error {
		cp := *m
		cp.Data = slices.Clone(m.Data)
		got = append(got, sent{c.Topic, cp})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func sameMessages(t *testing.T, got, want []sent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.topic != w.topic || g.m.ChannelID != w.m.ChannelID || g.m.Sequence != w.m.Sequence ||
			g.m.LogTime != w.m.LogTime || g.m.PublishTime != w.m.PublishTime || !bytes.Equal(g.m.Data, w.m.Data) {
			t.Fatalf("message %d: got %s %+v, want %s %+v", i, g.topic, g.m, w.topic, w.m)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	msgs := testMessages(500)
	for _, comp := range compressions {
		for _, chunk := range []int{1, 4 << 10, 64 << 10, 8 << 20} {
			t.Run(fmt.Sprintf("compression=%q/chunk=%d", comp, chunk), func(t *testing.T) {
				b := encode(t, Options{Compression: comp, ChunkSize: chunk}, msgs)
				sameMessages(t, readAll(t, b), msgs)

				r, err := NewReader(b, "t", ReaderOptions{})
				if err != nil {
					t.Fatal(err)
				}
				fromSummary, err := r.Info()
				if err != nil {
					t.Fatal(err)
				}
				scanned, err := r.Scan()
				if err != nil {
					t.Fatal(err)
				}
				if fromSummary.Scanned || !scanned.Scanned {
					t.Fatalf("Info should come from the summary, Scan from the data")
				}
				for _, info := range []*Info{fromSummary, scanned} {
					checkInfo(t, info, msgs, comp)
				}
				if fromSummary.Chunks != scanned.Chunks || fromSummary.Chunks == 0 {
					t.Errorf("chunks: summary %d, scan %d", fromSummary.Chunks, scanned.Chunks)
				}
			})
		}
	}
}

func checkInfo(t *testing.T, info *Info, msgs []sent, comp string) {
	t.Helper()
	if info.Library != DefaultLibrary || info.Messages != uint64(len(msgs)) {
		t.Errorf("library %q messages %d", info.Library, info.Messages)
	}
	if info.StartTime != msgs[0].m.LogTime || info.EndTime != msgs[len(msgs)-1].m.LogTime {
		t.Errorf("time range %d..%d", info.StartTime, info.EndTime)
	}
	if len(info.Channels) != len(testTopics) {
		t.Fatalf("%d channels", len(info.Channels))
	}
	for i, c := range info.Channels {
		var n, bytes uint64
		for _, m := range msgs {
			if m.m.ChannelID == uint16(i) {
				n++
				bytes += uint64(len(m.m.Data))
			}
		}
		if c.Messages != n || (info.Scanned && c.Bytes != bytes) {
			t.Errorf("channel %d: %d msgs %d bytes, want %d, %d", i, c.Messages, c.Bytes, n, bytes)
		}
		tp := testTopics[i]
		if c.Topic != TopicName(tp.Name, tp.Channel) || c.Metadata["edr.name"] != tp.Name {
			t.Errorf("channel %d: %+v", i, c.Channel)
		}
		if (tp.Type.Schema.Name != "") != (c.Schema != nil) || (c.Schema != nil && c.Schema.Name != tp.Type.Schema.Name) {
			t.Errorf("channel %d schema %+v, want type %q", i, c.Schema, tp.Type)
		}
	}
	if info.Compression[comp] != info.Chunks {
		t.Errorf("compression %v, %d chunks", info.Compression, info.Chunks)
	}
	if len(info.Metadata) != 1 || info.Metadata[0].Name != "edr.trigger" || info.Metadata[0].KV["reason"] != "hard-brake" {
		t.Errorf("metadata %+v", info.Metadata)
	}
}

func TestFileWriter(t *testing.T) {
	msgs := testMessages(3000)
	for _, noMmap := range []bool{false, true} {
		t.Run(fmt.Sprintf("nommap=%v", noMmap), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dump.mcap")
			// A 4 KiB window makes the writer cross many windows.
			fw, err := Create(path, FileOptions{Options: Options{Compression: CompressionLZ4, ChunkSize: 32 << 10}, Window: 4096, Mmap: !noMmap})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("final name exists before Close: %v", err)
			}
			writeTest(t, fw.Writer, msgs)
			// writeTest closed the inner Writer; FileWriter.Close finishes the file.
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("tmp file left: %v", err)
			}
			r, err := Open(path, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			st, _ := os.Stat(path)
			if st.Size() != int64(len(r.b)) || st.Size() != fw.Written() {
				t.Fatalf("size %d, mapped %d, written %d", st.Size(), len(r.b), fw.Written())
			}
			sameMessages(t, readAll(t, r.b), msgs)
		})
	}
}

func TestFileWriterAbort(t *testing.T) {
	dir := t.TempDir()
	fw, err := Create(filepath.Join(dir, "x.mcap"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Abort(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

func TestFileWriterInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.mcap.tmp")
	fw, err := Create(path, FileOptions{InPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	writeTest(t, fw.Writer, testMessages(10))
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "d.mcap.tmp" {
		t.Fatalf("files %v, want only d.mcap.tmp", ents)
	}
	b, _ := os.ReadFile(path)
	sameMessages(t, readAll(t, b), testMessages(10))
	fw, _ = Create(path, FileOptions{InPlace: true})
	if err := fw.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Abort removed the caller's file: %v", err)
	}
}
