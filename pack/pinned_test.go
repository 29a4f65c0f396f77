package pack

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

// testdata/pinned.pack pins the format: a small dump written the same way on
// every run. The test writes it again in memory and fails when a byte
// differs, and FORMAT.md's byte example is checked against it. After an
// intended format change, bump or document it in FORMAT.md and rewrite the
// file with
//
//	go test ./pack/ -run Pinned -update
var update = flag.Bool("update", false, "rewrite testdata/pinned.pack from the current writer")

const pinnedPath = "testdata/pinned.pack"

// pinnedT0 is the pinned dump's first message time (2025-12-02T10:06:40Z).
const pinnedT0 = int64(1_764_670_000_000_000_000)

// pinnedFrames are the pinned dump's frames: three topics, a meta-only
// message, and a frame of compressible data (stored LZ4) between two of
// incompressible data (stored as is).
func pinnedFrames() []*Frame {
	f32 := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	const ms = int64(1e6)

	f0 := NewFrame(0, pinnedT0)
	f0.SetType(FreeSync)
	f0.SetDoneTime(pinnedT0 + 10*ms)
	f0.SetVersion("pinned-1")
	f0.AddMetaWithData("vehicle/speed", "can0", nil, pinnedT0, pinnedT0+ms, f32(20.5))
	f0.AddMeta("vehicle/brake", "", []byte(`{"pedal":0.8}`), pinnedT0+5*ms, pinnedT0+6*ms)
	f0.AddMetaWithData("vehicle/speed", "can0", nil, pinnedT0+10*ms, pinnedT0+11*ms, f32(18.25))

	f1 := NewFrame(1, pinnedT0+20*ms)
	f1.SetDoneTime(pinnedT0 + 22*ms)
	f1.AddMetaWithData("camera/front", "", []byte("jpeg"), pinnedT0+20*ms, pinnedT0+22*ms, bytes.Repeat([]byte("edr-lite "), 32))

	f2 := NewFrame(2, pinnedT0+40*ms)
	f2.SetType(FreeSync)
	f2.SetDoneTime(pinnedT0 + 41*ms)
	f2.AddMetaWithData("vehicle/speed", "can0", nil, pinnedT0+40*ms, pinnedT0+41*ms, f32(12))
	return []*Frame{f0, f1, f2}
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

// pinnedTypes are the type sections written before frame i (key): speed
// is a packed struct and brake JSON from the start, the camera raw bytes
// named jpeg; before the last frame speed changes to JSON, whose body the
// file already holds (brake's), so that section refers to it by ID.
func pinnedTypes() map[int][]TopicType {
	const ms = int64(1e6)
	speed := ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: "vehicle.Speed", Encoding: ingest.SchemaLayout, Data: []byte("f32le speed (m/s)")}}
	json := ingest.Type{MessageEncoding: ingest.EncodingJSON}
	return map[int][]TopicType{
		0: {{Name: "vehicle/speed", Channel: "can0", Type: speed, FromNs: pinnedT0 + ms}, {Name: "vehicle/brake", Type: json, FromNs: pinnedT0 + 6*ms}},
		1: {{Name: "camera/front", Type: ingest.Raw("jpeg"), FromNs: pinnedT0 + 22*ms}},
		2: {{Name: "vehicle/speed", Channel: "can0", Type: json, FromNs: pinnedT0 + 41*ms}},
	}
}

// writePinned writes the pinned dump in memory.
func writePinned(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, WriterOptions{Writer: "edr-lite pinned", CreatedNs: pinnedT0 + 1e9, Compression: CompressLZ4})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range pinnedFrames() {
		for _, tt := range pinnedTypes()[i] {
			if err := w.SetTopicType(tt.Name, tt.Channel, tt.Type, tt.FromNs); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteFrame(f); err != nil {
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

// TestPinnedFile: the writer still writes testdata/pinned.pack byte for
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
		t.Fatalf("%v (run go test ./pack/ -run Pinned -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("the format changed: the writer's bytes differ from %s from offset %#x (%d bytes written, %d pinned); "+
			"if intended, bump or document it in FORMAT.md and run go test ./pack/ -run Pinned -update. "+
			"(A dependency update can also change the LZ4 frame's bytes with no format change: "+
			"TestPinnedFileReads tells whether the pinned file still reads.)", pinnedPath, i, len(got), len(want))
	}
}

// TestPinnedFileReads: the pinned file reads back as what was written: every
// frame, the dump information, the index; one frame is stored LZ4, the
// others as is; it verifies.
func TestPinnedFileReads(t *testing.T) {
	b, err := os.ReadFile(pinnedPath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewBytesReader(pinnedPath, b, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.Header(); h.Major != 1 || h.Minor != 1 || h.Writer != "edr-lite pinned" || h.CreatedNs != pinnedT0+1e9 {
		t.Errorf("header %+v", h)
	}
	if !r.Indexed() {
		t.Error("the pinned file has no valid index")
	}
	want := pinnedFrames()
	var codecs []Compression
	for i, off := range r.FrameOffsets() {
		var f Frame
		if err := r.ReadInto(&f); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if i < len(want) {
			framesEqual(t, &f, want[i])
		}
		codecs = append(codecs, Compression(b[off+28]))
	}
	if len(codecs) != len(want) {
		t.Fatalf("%d frames, want %d", len(codecs), len(want))
	}
	if !reflect.DeepEqual(codecs, []Compression{CompressNone, CompressLZ4, CompressNone}) {
		t.Errorf("frame codecs %v, want none, lz4, none", codecs)
	}
	if d, ok := r.DumpInfo(); !ok || !reflect.DeepEqual(d, normalizedPinnedInfo()) {
		t.Errorf("dump info %+v (%v), want %+v", d, ok, normalizedPinnedInfo())
	}
	if rep := VerifyBytes(pinnedPath, b); !rep.OK() || !rep.Complete || rep.Frames != 3 || rep.Messages != 5 || rep.Types != 4 {
		t.Errorf("verify: %+v", rep)
	}
	// The type sections, in file order, each before the frame it applies
	// from; the third speed section refers to brake's body.
	types, err := r.Types()
	if err != nil {
		t.Fatal(err)
	}
	offs := r.FrameOffsets()
	var wantTypes []TopicType
	for i := range want {
		for _, tt := range pinnedTypes()[i] {
			tt.ID = tt.Type.ID()
			wantTypes = append(wantTypes, tt)
		}
	}
	if len(types) != len(wantTypes) {
		t.Fatalf("%d type sections, want %d", len(types), len(wantTypes))
	}
	x := NewTypeIndex(types)
	for i, tt := range types {
		w := wantTypes[i]
		if tt.Name != w.Name || tt.Channel != w.Channel || !tt.Type.Equal(w.Type) || tt.ID != w.ID || tt.FromNs != w.FromNs {
			t.Errorf("type section %d: %+v, want %+v", i, tt, w)
		}
	}
	if at := x.At("vehicle/speed", "can0", offs[1]); at == nil || at.Type.MessageEncoding != ingest.EncodingPacked {
		t.Errorf("speed's type at frame 1: %+v, want the packed one", at)
	}
	if at := x.At("vehicle/speed", "can0", offs[2]); at == nil || at.Type.MessageEncoding != ingest.EncodingJSON {
		t.Errorf("speed's type at frame 2: %+v, want JSON", at)
	}
	if at := x.At("camera/front", "", offs[0]); at != nil {
		t.Errorf("camera's type at frame 0: %+v, want none yet", at)
	}
	if p := b[types[3].Offset+SectionHeaderSize : types[3].Offset+SectionHeaderSize+int64(le.Uint32(b[types[3].Offset+12:]))]; p[len(p)-1] != typeRef {
		t.Error("the second JSON type section stores the body again instead of referring to it")
	}
}

// TestPinnedOldFormatReads: testdata/pinned-1.0.pack, the pinned file as
// format 1.0 wrote it (before type sections), still reads: same frames,
// dump information and index, no types, and it verifies.
func TestPinnedOldFormatReads(t *testing.T) {
	const old = "testdata/pinned-1.0.pack"
	b, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewBytesReader(old, b, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.Header(); h.Major != 1 || h.Minor != 0 || !r.Indexed() {
		t.Errorf("header %+v, indexed %v", h, r.Indexed())
	}
	for i, w := range pinnedFrames() {
		var f Frame
		if err := r.ReadInto(&f); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		framesEqual(t, &f, w)
	}
	if d, ok := r.DumpInfo(); !ok || !reflect.DeepEqual(d, normalizedPinnedInfo()) {
		t.Errorf("dump info %+v (%v)", d, ok)
	}
	if ts, err := r.Types(); len(ts) != 0 || err != nil {
		t.Errorf("types %v, %v; want none", ts, err)
	}
	if rep := VerifyBytes(old, b); !rep.OK() || !rep.Complete || rep.Frames != 3 || rep.Types != 0 {
		t.Errorf("verify: %+v", rep)
	}
}

// TestFormatDocExample: the byte example in FORMAT.md is what pinned.pack
// holds.
func TestFormatDocExample(t *testing.T) {
	b, err := os.ReadFile(pinnedPath)
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckDocHexdump(t, "FORMAT.md", b)
}

// normalizedPinnedInfo is pinnedInfo as a reader returns it: the pinned
// file's trigger sets its windows by PreNs/PostNs alone (the generation
// before PreSet), which dumpinfo.Decode completes with the flags and the
// effective window.
func normalizedPinnedInfo() dumpinfo.Info {
	d := pinnedInfo()
	d.Normalize()
	return d
}
