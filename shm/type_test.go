package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

// bigJSONSchema is a JSON Schema of about n bytes: tens of KiB, what a
// real message definition with descriptions takes.
func bigJSONSchema(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"field_%d":{"type":"number","description":"unit: m/s; measured by sensor %d of the front module"}`, i, i)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// segmentHeader reads a segment file's version and header_size.
func segmentHeader(t *testing.T, path string) (version, headerSize uint32, size int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint32(b[offVersion:]), binary.LittleEndian.Uint32(b[offHeaderSize:]), int64(len(b))
}

// TestProducerDeclaresType: a Go producer declares its topic's type once
// (a packed layout; a 48 KiB JSON Schema) and the consumer hands the
// recorder exactly that type with every message; the schema sits in its
// own area before the ring. A producer that declares no encoding (nothing,
// or only a type name) writes a version 1 segment as before types.
func TestProducerDeclaresType(t *testing.T) {
	dir := t.TempDir()
	big := ingest.Type{MessageEncoding: ingest.EncodingJSON,
		Schema: ingest.Schema{Name: "front.Module", Encoding: ingest.SchemaJSON, Data: bigJSONSchema(48 << 10)}}
	for _, tc := range []struct {
		name    string
		typ     ingest.Type
		version uint32
	}{
		{"packed", ingest.Packed("vehicle.Speed", "f32le speed (m/s); u8 gear; pad 3"), Version},
		{"big", big, Version},
		{"raw", ingest.Raw("vendor.Blob"), Version},
		{"named", ingest.Named("legacy.Name"), VersionUntyped},
		{"none", ingest.Type{}, VersionUntyped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProducer(t, dir, ProducerOptions{Name: "t/" + tc.name, Type: tc.typ, Capacity: 64 << 10})
			for i := range 5 {
				p.Publish(int64(i), []byte{byte(i), 1, 2, 3, 4, 5, 6, 7})
			}
			v, hs, size := segmentHeader(t, p.Path())
			wantHS := uint32(HeaderSize)
			if tc.version == Version {
				wantHS += uint32(schemaArea(uint64(len(tc.typ.Schema.Data))))
			}
			if v != tc.version || hs != wantHS || size != int64(wantHS)+64<<10 {
				t.Errorf("version %d, header_size %d, file %d bytes; want %d, %d, %d", v, hs, size, tc.version, wantHS, int64(wantHS)+64<<10)
			}
			sink := newRecSink()
			st, err := DrainFile(p.Path(), sink, ConsumerOptions{})
			if err != nil || st.Messages != 5 || st.TypeErr != nil {
				t.Fatalf("drain: %+v, %v", st, err)
			}
			if got := sink.discovered[0].Type; !got.Equal(tc.typ) {
				t.Errorf("type %v (%d schema bytes), want %v", got, len(got.Schema.Data), tc.typ)
			}
			if m := sink.messages(0); !bytes.Equal(m[4].payload, []byte{4, 1, 2, 3, 4, 5, 6, 7}) {
				t.Errorf("last payload %v", m[4].payload)
			}
		})
	}
}

// TestProducerTypeChecked: what the consumer would not read is refused at
// the producer.
func TestProducerTypeChecked(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []ingest.Type{
		{Schema: ingest.Schema{Name: "a", Encoding: ingest.SchemaLayout, Data: []byte("u8 a")}}, // schema without encoding
		{MessageEncoding: ingest.EncodingProtobuf},                                              // no schema
		{MessageEncoding: strings.Repeat("x", 65)},                                              // encoding too long
		ingest.Packed("big", strings.Repeat("u8 a;", MaxSchemaSize/5+1)),                        // schema too large
		ingest.Packed(strings.Repeat("n", MaxTypeLen+1), "u8 a"),                                // name too long
	} {
		if p, err := NewProducer(dir, ProducerOptions{Name: "x", Type: typ}); err == nil {
			p.Close()
			t.Errorf("NewProducer with type %.60v: no error", typ)
		}
	}
}

// TestCProducerDeclaresLayoutInOneField: a C producer declares its packed
// struct with one option (o.layout); the consumer sees the packed type,
// and its messages decode by that layout: speed i/2, gear i%6.
func TestCProducerDeclaresLayoutInOneField(t *testing.T) {
	bin := buildCProducer(t)
	dir := t.TempDir()
	const layout = "f32le speed (m/s); u8 gear; pad 3"
	if out, err := exec.Command(bin, "packed", dir, "c/speed", "vehicle.Speed", layout, "10").CombinedOutput(); err != nil {
		t.Fatalf("C producer: %v\n%s", err, out)
	}
	sink := newRecSink()
	st, err := DrainFile(filepath.Join(dir, SegmentFileName("c/speed", "")), sink, ConsumerOptions{})
	if err != nil || st.Messages != 10 {
		t.Fatalf("drain: %+v, %v", st, err)
	}
	if got, want := sink.discovered[0].Type, ingest.Packed("vehicle.Speed", layout); !got.Equal(want) {
		t.Errorf("type %v, want %v", got, want)
	}
	for i, m := range sink.messages(0) {
		speed := math.Float32frombits(binary.LittleEndian.Uint32(m.payload))
		if len(m.payload) != 8 || speed != float32(i)/2 || m.payload[4] != byte(i%6) {
			t.Errorf("message %d: %x", i, m.payload)
		}
	}
}

// TestCProducerDeclaresSchemaFromFile: any encoding and schema from C, a
// schema of tens of KiB included, arrive byte for byte.
func TestCProducerDeclaresSchemaFromFile(t *testing.T) {
	bin := buildCProducer(t)
	dir := t.TempDir()
	schema := bigJSONSchema(40 << 10)
	file := filepath.Join(t.TempDir(), "schema.json")
	os.WriteFile(file, schema, 0o600)
	if out, err := exec.Command(bin, "typed", dir, "c/module", "front.Module", "json", "jsonschema", file).CombinedOutput(); err != nil {
		t.Fatalf("C producer: %v\n%s", err, out)
	}
	sink := newRecSink()
	path := filepath.Join(dir, SegmentFileName("c/module", ""))
	if _, hs, _ := segmentHeader(t, path); hs != HeaderSize+uint32(schemaArea(uint64(len(schema)))) {
		t.Errorf("header_size %d", hs)
	}
	if _, err := DrainFile(path, sink, ConsumerOptions{}); err != nil {
		t.Fatal(err)
	}
	want := ingest.Type{MessageEncoding: "json", Schema: ingest.Schema{Name: "front.Module", Encoding: "jsonschema", Data: schema}}
	if got := sink.discovered[0].Type; !got.Equal(want) {
		t.Errorf("type %v with %d schema bytes, want %d", got, len(got.Schema.Data), len(schema))
	}
}

// TestHostileSchemaArea: a segment whose schema area claims 100 MiB (the
// file really is that long, sparse) is recorded as raw bytes without the
// schema being read, with a *TypeError naming the segment, the topic and
// the cause; its messages still arrive. A header_size that does not match
// its schema_len is a corrupt header: quarantined, naming the field.
func TestHostileSchemaArea(t *testing.T) {
	dir := t.TempDir()
	p := newProducer(t, dir, ProducerOptions{Name: "hostile", Type: ingest.Packed("h.T", "u8 a"), Capacity: MinCapacity})
	p.Publish(7, []byte{42})
	path := p.Path()
	b, _ := os.ReadFile(path)
	const claim = 100 << 20
	hs := HeaderSize + schemaArea(claim)
	hdr := bytes.Clone(b[:HeaderSize])
	binary.LittleEndian.PutUint32(hdr[offSchemaLen:], claim)
	binary.LittleEndian.PutUint32(hdr[offHeaderSize:], uint32(hs))
	binary.LittleEndian.PutUint64(hdr[offTotalSize:], hs+MinCapacity)
	ring := b[len(b)-MinCapacity:]
	f, err := os.OpenFile(path, os.O_RDWR|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(hdr, 0)
	f.WriteAt(ring, int64(hs)) // the file is 100 MiB long, sparse
	f.Close()

	sink := newRecSink()
	var mu sync.Mutex
	var reported []error
	st, err := DrainFile(path, sink, ConsumerOptions{OnError: func(e error) { mu.Lock(); reported = append(reported, e); mu.Unlock() }})
	var te *TypeError
	if err != nil || st.Messages != 1 || !errors.As(st.TypeErr, &te) || te.Topic != "hostile" || te.Segment != path ||
		!errors.Is(te, ingest.ErrSchemaTooLarge) || !strings.Contains(te.Error(), "104857600 bytes") {
		t.Fatalf("drain: %+v (type error %v), %v", st, st.TypeErr, err)
	}
	if got := sink.discovered[0].Type; !got.Equal(ingest.Raw("h.T")) {
		t.Errorf("recorded as %v, want raw h.T", got)
	}
	if m := sink.messages(0); len(m) != 1 || m[0].payload[0] != 42 {
		t.Errorf("messages %v", m)
	}

	// The same file read by a running consumer: reported through OnError.
	sink2 := newRecSink()
	startConsumer(t, dir, sink2, ConsumerOptions{OnError: func(e error) { mu.Lock(); reported = append(reported, e); mu.Unlock() }})
	waitTopic(t, sink2, "hostile", "")
	sink2.waitFor(t, "the message", func() bool { return len(sink2.messages(0)) == 1 })
	mu.Lock()
	found := false
	for _, e := range reported {
		found = found || errors.As(e, &te)
	}
	mu.Unlock()
	if !found {
		t.Errorf("no TypeError reported: %v", reported)
	}

	// header_size not what schema_len makes it: the header is corrupt.
	writeAt(t, path, offHeaderSize, u32(uint32(hs+HeaderSize)))
	_, err = DrainFile(path, newRecSink(), ConsumerOptions{})
	var se *SegmentError
	if !errors.As(err, &se) || se.Field != "header_size" || se.Offset != offHeaderSize {
		t.Errorf("bad header_size: %v", err)
	}
}

// TestProducerRestartsWithAnotherType: the segment of a producer that
// restarts with another schema declares the new type, and the consumer
// hands it to the recorder with the first message of the new segment.
func TestProducerRestartsWithAnotherType(t *testing.T) {
	dir := t.TempDir()
	sink := newRecSink()
	startConsumer(t, dir, sink, ConsumerOptions{})
	a, b := ingest.Packed("v.S", "u8 a"), ingest.Packed("v.S", "u16le b")
	p := newProducer(t, dir, ProducerOptions{Name: "s", Type: a})
	p.Publish(1, []byte{1})
	id := waitTopic(t, sink, "s", "")
	sink.waitFor(t, "first message", func() bool { return len(sink.messages(id)) == 1 })
	p.Close()
	sink.waitFor(t, "offline", func() bool { return !sink.isOnline(id) })
	p2 := newProducer(t, dir, ProducerOptions{Name: "s", Type: b})
	p2.Publish(2, []byte{2, 0})
	sink.waitFor(t, "second message", func() bool { return len(sink.messages(id)) == 2 })
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.discovered) != 2 || !sink.discovered[0].Type.Equal(a) || !sink.discovered[1].Type.Equal(b) {
		t.Errorf("discovered %+v, want type A then B", sink.discovered)
	}
}

// TestVersion1SegmentStillReads: testdata/v1-three.seg is a segment as the
// version 1 producer wrote it (before types: the fuzz seed of that time),
// three messages on topic "fuzz". It still reads, untyped.
func TestVersion1SegmentStillReads(t *testing.T) {
	b, err := os.ReadFile("testdata/v1-three.seg")
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(b[offVersion:]); v != VersionUntyped {
		t.Fatalf("the pinned segment is version %d", v)
	}
	path := filepath.Join(t.TempDir(), SegmentFileName("fuzz", ""))
	os.WriteFile(path, b, 0o600)
	sink := newRecSink()
	st, err := DrainFile(path, sink, ConsumerOptions{})
	if err != nil || st.Messages != 3 || st.TypeErr != nil {
		t.Fatalf("drain: %+v, %v", st, err)
	}
	if typ := sink.discovered[0].Type; typ.MessageEncoding != "" || len(typ.Schema.Data) != 0 {
		t.Errorf("type %v, want none declared", typ)
	}
}
