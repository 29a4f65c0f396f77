package mcap

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// testdata/pinned.mcap pins what the writer puts in an MCAP file: a small
// dump written the same way on every run. The test writes it again in memory
// and fails when a byte differs, and docs/mcap.md's byte example is checked
// against it. After an intended change, document it in docs/mcap.md and
// rewrite the file with
//
//	go test ./mcap/ -run Pinned -update
var update = flag.Bool("update", false, "rewrite testdata/pinned.mcap from the current writer")

const pinnedPath = "testdata/pinned.mcap"

// pinnedT0 is the pinned dump's first message time (2025-12-02T10:06:40Z).
const pinnedT0 = int64(1_764_670_000_000_000_000)

// pinnedMessages are the pinned dump's messages in the order written:
// three topics, a meta-only message and a message with both meta and data.
func pinnedMessages() []PackMessage {
	f32 := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	const ms = int64(1e6)
	return []PackMessage{
		{Name: "vehicle/speed", Channel: "can0", GenTs: pinnedT0, DoneTs: pinnedT0 + ms, Data: f32(20.5)},
		{Name: "vehicle/brake", Meta: []byte(`{"pedal":0.8}`), GenTs: pinnedT0 + 5*ms, DoneTs: pinnedT0 + 6*ms},
		{Name: "vehicle/speed", Channel: "can0", GenTs: pinnedT0 + 10*ms, DoneTs: pinnedT0 + 11*ms, Data: f32(18.25)},
		{Name: "camera/front", Meta: []byte("jpeg"), GenTs: pinnedT0 + 20*ms, DoneTs: pinnedT0 + 22*ms, Data: bytes.Repeat([]byte("edr-lite "), 32)},
		{Name: "vehicle/speed", Channel: "can0", GenTs: pinnedT0 + 40*ms, DoneTs: pinnedT0 + 41*ms, Data: f32(12)},
	}
}

// pinnedInfo is the pinned dump's information: one trigger, the topics'
// accounting.
func pinnedInfo() dumpinfo.Info {
	const ms = int64(1e6)
	return dumpinfo.Info{
		Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "hard-brake", Source: dumpinfo.SourceLua, Rule: "hard_brake",
			TimeNs: pinnedT0 + 20*ms, PreNs: 20 * ms, PostNs: 20 * ms, Params: map[string]string{"decel": "6.0"}}},
		Topics: []dumpinfo.TopicAccount{
			{Topic: "camera/front", Type: "jpeg", Messages: 1, Bytes: 292, FirstNs: pinnedT0 + 20*ms, LastNs: pinnedT0 + 20*ms},
			{Topic: "vehicle/brake", Messages: 1, Bytes: 13, FirstNs: pinnedT0 + 5*ms, LastNs: pinnedT0 + 5*ms},
			{Topic: "vehicle/speed#can0", Type: "f32", Messages: 3, Bytes: 12, Overwritten: 1, FirstNs: pinnedT0, LastNs: pinnedT0 + 40*ms},
		},
		Writer: "edr-lite pinned", Host: "pinned-host",
		StartNs: pinnedT0, EndNs: pinnedT0 + 40*ms, CreatedNs: pinnedT0 + 1e9,
		Labels: map[string]string{"vehicle": "test-1"},
	}
}

// writePinned writes the pinned dump in memory: LZ4 chunks of at most 512
// uncompressed bytes, a fixed library name.
func writePinned(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewPackWriter(&buf, Options{Library: "edr-lite pinned", Compression: CompressionLZ4, ChunkSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	w.DeclareTopic(Topic{Name: "vehicle/speed", Channel: "can0", Type: ingest.Raw("f32")})
	w.DeclareTopic(Topic{Name: "camera/front", Type: ingest.Raw("jpeg")})
	for _, m := range pinnedMessages() {
		if err := w.Add(m.Name, m.Channel, m.Meta, m.GenTs, m.DoneTs, m.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SetDumpInfo(pinnedInfo()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPinnedFile: the writer still writes testdata/pinned.mcap byte for
// byte.
func TestPinnedFile(t *testing.T) {
	got := writePinned(t)
	if *update {
		if err := os.WriteFile(pinnedPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(pinnedPath)
	if err != nil {
		t.Fatalf("%v (run go test ./mcap/ -run Pinned -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("the format changed: the writer's bytes differ from %s from offset %#x (%d bytes written, %d pinned); "+
			"if intended, document it in docs/mcap.md and run go test ./mcap/ -run Pinned -update. "+
			"(A dependency update can also change the LZ4 chunks' bytes with no format change: "+
			"TestPinnedFileReads tells whether the pinned file still reads.)", pinnedPath, i, len(got), len(want))
	}
}

// TestPinnedFileReads: the pinned file reads back as what was written (its
// CRCs check, every message, the dump information) and its chunks are LZ4.
func TestPinnedFileReads(t *testing.T) {
	b, err := os.ReadFile(pinnedPath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(b, pinnedPath, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	info, err := r.Scan()
	if err != nil {
		t.Fatal(err)
	}
	if info.Library != "edr-lite pinned" || info.Chunks < 2 || info.Compression[CompressionLZ4] != info.Chunks {
		t.Errorf("library %q, %d chunks, compression %v: want edr-lite pinned, at least 2 chunks, all lz4", info.Library, info.Chunks, info.Compression)
	}
	p, err := NewPackReader(r)
	if err != nil {
		t.Fatal(err)
	}
	p.FileOrder()
	var got []PackMessage
	for {
		ok, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		m := *p.Message()
		m.Meta = bytes.Clone(m.Meta)
		m.Data = bytes.Clone(m.Data)
		if want := map[string]string{"vehicle/speed": "f32", "camera/front": "jpeg"}[m.Name]; m.Type == nil || !m.Type.Equal(ingest.Raw(want)) {
			t.Errorf("%s: type %v, want raw named %q", m.Name, m.Type, want)
		}
		m.Type, m.chanInfo = nil, nil
		if len(m.Data) == 0 {
			m.Data = nil
		}
		got = append(got, m)
	}
	// A meta-only message is written as a message carrying the meta bytes
	// (docs/mcap.md) and reads back so.
	want := pinnedMessages()
	for i := range want {
		if want[i].Data == nil {
			want[i].Data, want[i].Meta = want[i].Meta, nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages:\n got %+v\nwant %+v", got, want)
	}
	wantInfo := pinnedInfo()
	wantInfo.Normalize() // what an older writer left out, completed
	if d, ok := p.DumpInfo(); !ok || !reflect.DeepEqual(d, wantInfo) {
		t.Errorf("dump info %+v (%v), want %+v", d, ok, wantInfo)
	}
}

// TestDocExample: the byte example in docs/mcap.md is what pinned.mcap
// holds.
func TestDocExample(t *testing.T) {
	b, err := os.ReadFile(pinnedPath)
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckDocHexdump(t, "../docs/mcap.md", b)
}
