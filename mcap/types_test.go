package mcap

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// Types of the typed test dump: a packed struct that changes its layout
// halfway (a producer restarted), a protobuf message with its real
// FileDescriptorSet, JSON with a JSON Schema, raw bytes with a name.
var (
	typSpeedA = ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: "vehicle.Speed", Encoding: ingest.SchemaLayout, Data: []byte("f32le speed (m/s); u8 gear; pad 3")}}
	typSpeedB = ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: "vehicle.Speed", Encoding: ingest.SchemaLayout, Data: []byte("f64le speed (m/s); u8 gear; str8 note")}}
	typStamp = ingest.Type{MessageEncoding: ingest.EncodingProtobuf,
		Schema: ingest.Schema{Name: "google.protobuf.Timestamp", Encoding: ingest.SchemaProtobuf, Data: timestampDescriptorSet()}}
	typCal = ingest.Type{MessageEncoding: ingest.EncodingJSON,
		Schema: ingest.Schema{Name: "vehicle.Calibration", Encoding: ingest.SchemaJSON,
			Data: []byte(`{"type":"object","properties":{"wheelbase":{"type":"number"}}}`)}}
	typBlob = ingest.Raw("vendor.Blob")
)

// timestampDescriptorSet is a serialized FileDescriptorSet holding
// google/protobuf/timestamp.proto, as protoc --include_imports writes it.
func timestampDescriptorSet() []byte {
	fd := protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto)
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fd}})
	if err != nil {
		panic(err)
	}
	return b
}

type typedMsg struct {
	name string
	typ  ingest.Type
	t    int64
	data []byte
}

// typedMessages is n rounds of the typed topics; speed switches from
// layout A to layout B at round n/2.
func typedMessages(n int) []typedMsg {
	base := int64(1_764_670_000_000_000_000)
	var out []typedMsg
	for i := range n {
		t := base + int64(i)*int64(10*time.Millisecond)
		if i < n/2 {
			d := binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(i)/4))
			out = append(out, typedMsg{"vehicle/speed", typSpeedA, t, append(d, byte(i%6), 0, 0, 0)})
		} else {
			d := binary.LittleEndian.AppendUint64(nil, math.Float64bits(float64(i)/8))
			note := strings.Repeat("n", i%5)
			out = append(out, typedMsg{"vehicle/speed", typSpeedB, t, append(append(d, byte(i%6), byte(len(note))), note...)})
		}
		ts, _ := proto.Marshal(timestamppb.New(time.Unix(0, t)))
		out = append(out, typedMsg{"clock", typStamp, t + 1, ts})
		if i%10 == 0 {
			out = append(out, typedMsg{"calibration", typCal, t + 2, []byte(`{"wheelbase":2.7}`)})
			out = append(out, typedMsg{"blob", typBlob, t + 3, []byte{0xde, 0xad, byte(i)}})
		}
	}
	return out
}

// writeTypedPack writes msgs as a pack dump, declaring each topic's type
// before its first message and again when it changes.
func writeTypedPack(t testing.TB, path string, msgs []typedMsg) {
	t.Helper()
	w, err := pack.Create(path, pack.WriterOptions{Writer: "typed", TargetFrameSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := w.SetTopicType(m.name, "", m.typ, m.t); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(m.name, "", nil, m.t, m.t, m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTypedExport: a typed pack dump exported to MCAP has a channel per
// (topic, type) with the type's message encoding and Schema record: the
// protobuf descriptor set as is, the JSON Schema, the raw type's name, and
// packed structs transcoded to json with a generated JSON Schema and their
// layout in the channel metadata (or kept packed with KeepPacked). Read
// back, every message has its type and its packed bytes again.
func TestTypedExport(t *testing.T) {
	msgs := typedMessages(40)
	tmp := t.TempDir()
	in := filepath.Join(tmp, "typed.pack")
	writeTypedPack(t, in, msgs)
	for _, keep := range []bool{false, true} {
		out := filepath.Join(tmp, "typed.mcap")
		exportFile(t, in, out, Options{KeepPacked: keep, ChunkSize: 2 << 10})
		r, err := Open(out, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info, err := r.Info()
		if err != nil {
			t.Fatal(err)
		}
		type chanWant struct{ msgEnc, schemaName, schemaEnc string }
		var got []chanWant
		for _, c := range info.Channels {
			cw := chanWant{msgEnc: c.MessageEncoding}
			if c.Schema != nil {
				cw.schemaName, cw.schemaEnc = c.Schema.Name, c.Schema.Encoding
			}
			got = append(got, cw)
			switch {
			case c.MessageEncoding == ingest.EncodingProtobuf && !bytes.Equal(c.Schema.Data, typStamp.Schema.Data):
				t.Errorf("protobuf schema bytes differ from the descriptor set")
			case c.MessageEncoding == ingest.EncodingJSON && c.Topic == "vehicle/speed":
				if c.Metadata[MetadataLayout] == "" || !bytes.Contains(c.Schema.Data, []byte(`"description":"unit: m/s"`)) {
					t.Errorf("transcoded channel: metadata %v, schema %s", c.Metadata, c.Schema.Data)
				}
			}
		}
		speed := chanWant{"json", "vehicle.Speed", "jsonschema"}
		if keep {
			speed = chanWant{"x-edr-packed", "vehicle.Speed", "x-edr-layout"}
		}
		want := []chanWant{speed, {"protobuf", "google.protobuf.Timestamp", "protobuf"},
			{"json", "vehicle.Calibration", "jsonschema"}, {"x-edr-raw", "vendor.Blob", ""}, speed}
		if len(got) != len(want) {
			t.Fatalf("keep=%v: channels %+v, want %+v", keep, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("keep=%v: channel %d %+v, want %+v", keep, i, got[i], want[i])
			}
		}
		if n := len(info.Schemas); n != 5 {
			t.Errorf("keep=%v: %d Schema records, want 5 (speed A, B, timestamp, calibration, blob)", keep, n)
		}

		p, err := NewPackReader(r)
		if err != nil {
			t.Fatal(err)
		}
		p.FileOrder()
		i := 0
		for {
			ok, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			m, w := p.Message(), msgs[i]
			if m.Name != w.name || !m.Type.Equal(w.typ) || !bytes.Equal(m.Data, w.data) {
				t.Fatalf("keep=%v: message %d: %s %v %x, want %s %v %x", keep, i, m.Name, m.Type, m.Data, w.name, w.typ, w.data)
			}
			i++
		}
		if i != len(msgs) {
			t.Errorf("keep=%v: %d messages back, want %d", keep, i, len(msgs))
		}
		for _, tp := range p.Topics() {
			if tp.Name == "vehicle/speed" && (tp.Types != 2 || !tp.Type.Equal(typSpeedA)) {
				t.Errorf("speed topic: %d types, first %v", tp.Types, tp.Type)
			}
		}
		r.Close()
	}
}

// TestTranscodeShortMessage: a message too short for its layout is not
// dropped or mangled: it goes, as it is, on a second channel of the same
// topic with the packed type, and reads back in place.
func TestTranscodeShortMessage(t *testing.T) {
	var buf bytes.Buffer
	pw, err := NewPackWriter(&buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pw.DeclareTopic(Topic{Name: "s", Type: typSpeedA})
	full := []byte{0, 0, 0x80, 0x3f, 2, 0, 0, 0}
	for _, d := range [][]byte{full, {1, 2}, full} {
		if err := pw.Add("s", "", nil, 1, 1, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(buf.Bytes(), "short.mcap", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPackReader(r)
	if err != nil {
		t.Fatal(err)
	}
	p.FileOrder()
	var got [][]byte
	for {
		ok, err := p.Next()
		if err != nil || !ok {
			break
		}
		if !p.Message().Type.Equal(typSpeedA) {
			t.Errorf("type %v", p.Message().Type)
		}
		got = append(got, bytes.Clone(p.Message().Data))
	}
	if len(got) != 3 || !bytes.Equal(got[0], full) || !bytes.Equal(got[1], []byte{1, 2}) || !bytes.Equal(got[2], full) {
		t.Errorf("messages back %x", got)
	}
	if cs := p.Info().Channels; len(cs) != 2 || cs[1].MessageEncoding != ingest.EncodingPacked {
		t.Errorf("channels %+v", cs)
	}
}

// TestHostileTranscodedChannel: a channel claiming a layout that does not
// parse, or messages that do not match it, are errors naming the file and
// the channel, not panics or wrong bytes.
func TestHostileTranscodedChannel(t *testing.T) {
	mk := func(layout, msg string) []byte {
		var buf bytes.Buffer
		w, _ := NewWriter(&buf, Options{})
		id, _ := w.AddTopic(Topic{Name: "s", Type: ingest.Type{MessageEncoding: "json"}, Metadata: map[string]string{MetadataLayout: layout}})
		w.WriteMessage(&Message{ChannelID: id, LogTime: 5, Data: []byte(msg)})
		w.Close()
		return buf.Bytes()
	}
	r, _ := NewReader(mk("f33le x", `{"x":1}`), "bad.mcap", ReaderOptions{})
	if _, err := NewPackReader(r); err == nil || !strings.Contains(err.Error(), "bad.mcap: channel 0 (s): metadata edr.layout: layout:1:1") {
		t.Errorf("bad layout: %v", err)
	}
	r, _ = NewReader(mk("f32le x", `{"y":1}`), "bad.mcap", ReaderOptions{})
	p, err := NewPackReader(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Next(); err == nil || !strings.Contains(err.Error(), "bad.mcap: channel 0 (s), message at log_time 5") ||
		!strings.Contains(err.Error(), "x: missing") {
		t.Errorf("bad message: %v", err)
	}
}
