package pack

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"pgregory.net/rapid"
)

// frameDescriptor compiles the shipped frame.v2.proto (the source of truth)
// with a pure-Go protobuf compiler and returns FrameV2Proto.Frame.
func frameDescriptor(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	src, err := os.ReadFile("frame.v2.proto")
	if err != nil {
		t.Fatal(err)
	}
	c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"frame.v2.proto": string(src)}),
	}}
	files, err := c.Compile(context.Background(), "frame.v2.proto")
	if err != nil {
		t.Fatalf("compile frame.v2.proto: %v", err)
	}
	md := files[0].Messages().ByName("Frame")
	if md == nil {
		t.Fatal("frame.v2.proto has no message Frame")
	}
	return md
}

// TestProtoMatchesEncoder checks that the field numbers, kinds and defaults
// the hand-written codec uses are those of frame.v2.proto.
func TestProtoMatchesEncoder(t *testing.T) {
	md := frameDescriptor(t)
	if got := md.FullName(); got != "FrameV2Proto.Frame" {
		t.Fatalf("full name %q", got)
	}
	check := func(md protoreflect.MessageDescriptor, name string, num protowireNum, kind protoreflect.Kind, list bool) {
		t.Helper()
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("%s: no field %s", md.FullName(), name)
		}
		if int(fd.Number()) != int(num) || fd.Kind() != kind || fd.IsList() != list {
			t.Errorf("%s.%s: number %d kind %v list %v; codec uses %d %v %v", md.FullName(), name,
				fd.Number(), fd.Kind(), fd.IsList(), num, kind, list)
		}
	}
	check(md, "version", fieldFrameVersion, protoreflect.StringKind, false)
	check(md, "frame_id", fieldFrameID, protoreflect.Uint64Kind, false)
	check(md, "time", fieldFrameTime, protoreflect.Int64Kind, false)
	check(md, "proto_version", fieldFrameProtoVersion, protoreflect.Int32Kind, false)
	check(md, "data_list", fieldFrameDataList, protoreflect.MessageKind, true)
	check(md, "frame_type", fieldFrameType, protoreflect.EnumKind, false)
	check(md, "done_time", fieldFrameDoneTime, protoreflect.Int64Kind, false)
	mm := md.Fields().ByName("data_list").Message()
	check(mm, "message_name", fieldMsgName, protoreflect.StringKind, false)
	check(mm, "meta", fieldMsgMeta, protoreflect.BytesKind, false)
	check(mm, "gen_ts", fieldMsgGenTs, protoreflect.Int64Kind, false)
	check(mm, "done_ts", fieldMsgDoneTs, protoreflect.Int64Kind, false)
	check(mm, "channel", fieldMsgChannel, protoreflect.StringKind, false)
	check(mm, "data_index", fieldMsgDataIndex, protoreflect.Int32Kind, false)
	check(mm, "seq", fieldMsgSeq, protoreflect.Uint64Kind, false)
	if d := mm.Fields().ByName("data_index").Default().Int(); d != NoData {
		t.Errorf("data_index default %d, codec assumes %d", d, NoData)
	}
	ed := md.Fields().ByName("frame_type").Enum()
	if ed.Values().ByName("Bundle").Number() != protoreflect.EnumNumber(Bundle) ||
		ed.Values().ByName("FreeSync").Number() != protoreflect.EnumNumber(FreeSync) {
		t.Errorf("FrameType values differ from the codec")
	}
}

type protowireNum = int

func genFrame(t *rapid.T) *Frame {
	f := NewFrame(rapid.Uint64().Draw(t, "id"), rapid.Int64().Draw(t, "time"))
	f.SetDoneTime(rapid.Int64().Draw(t, "done"))
	f.SetType(FrameType(rapid.Int32Range(0, 1).Draw(t, "type")))
	f.SetVersion(rapid.StringMatching(`[a-z0-9.\-]{0,12}`).Draw(t, "version"))
	names := []string{"imu", "camera/front", "lidar", "gps#x"}
	n := rapid.IntRange(0, 8).Draw(t, "n")
	for i := 0; i < n; i++ {
		name := rapid.SampledFrom(names).Draw(t, "name")
		ch := rapid.SampledFrom([]string{"", "0", "left", "ü"}).Draw(t, "channel")
		meta := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "meta")
		gen, done := rapid.Int64().Draw(t, "gen"), rapid.Int64().Draw(t, "doneTs")
		if rapid.Bool().Draw(t, "hasData") {
			f.AddMetaWithData(name, ch, meta, gen, done, rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "data"))
		} else {
			f.AddMeta(name, ch, meta, gen, done)
		}
		if rapid.Bool().Draw(t, "hasSeq") {
			f.SetSeq(f.Len()-1, rapid.Uint64().Draw(t, "seq"))
		}
	}
	return f
}

// toDynamic builds the protobuf-runtime message with the frame's values.
func toDynamic(md protoreflect.MessageDescriptor, f *Frame) *dynamicpb.Message {
	d := dynamicpb.NewMessage(md)
	fields := md.Fields()
	set := func(m *dynamicpb.Message, name string, v protoreflect.Value) {
		m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), v)
	}
	if f.Version() != "" {
		set(d, "version", protoreflect.ValueOfString(f.Version()))
	}
	if f.ID() != 0 {
		set(d, "frame_id", protoreflect.ValueOfUint64(f.ID()))
	}
	if f.Time() != 0 {
		set(d, "time", protoreflect.ValueOfInt64(f.Time()))
	}
	set(d, "proto_version", protoreflect.ValueOfInt32(f.ProtoVersion()))
	list := d.Mutable(fields.ByName("data_list")).List()
	for i := 0; i < f.Len(); i++ {
		m := f.Message(i)
		e := list.NewElement().Message().Interface().(*dynamicpb.Message)
		if m.Name != "" {
			set(e, "message_name", protoreflect.ValueOfString(m.Name))
		}
		if len(m.Meta) > 0 {
			set(e, "meta", protoreflect.ValueOfBytes(m.Meta))
		}
		if m.GenTs != 0 {
			set(e, "gen_ts", protoreflect.ValueOfInt64(m.GenTs))
		}
		if m.DoneTs != 0 {
			set(e, "done_ts", protoreflect.ValueOfInt64(m.DoneTs))
		}
		if m.Channel != "" {
			set(e, "channel", protoreflect.ValueOfString(m.Channel))
		}
		if m.DataIndex != NoData {
			set(e, "data_index", protoreflect.ValueOfInt32(m.DataIndex))
		}
		if m.HasSeq {
			set(e, "seq", protoreflect.ValueOfUint64(m.Seq))
		}
		list.Append(protoreflect.ValueOfMessage(e))
	}
	if f.Type() != Bundle {
		set(d, "frame_type", protoreflect.ValueOfEnum(protoreflect.EnumNumber(f.Type())))
	}
	if f.DoneTime() != 0 {
		set(d, "done_time", protoreflect.ValueOfInt64(f.DoneTime()))
	}
	return d
}

// sameMeta reports whether two frames have equal meta values.
func sameMeta(t *rapid.T, got, want *Frame) {
	if got.ID() != want.ID() || got.Time() != want.Time() || got.DoneTime() != want.DoneTime() ||
		got.Type() != want.Type() || got.Version() != want.Version() || got.ProtoVersion() != want.ProtoVersion() ||
		got.Len() != want.Len() {
		t.Fatalf("frame header differs:\n got %+v\nwant %+v", got, want)
	}
	for i := 0; i < got.Len(); i++ {
		g, w := got.Message(i), want.Message(i)
		if g.Name != w.Name || g.Channel != w.Channel || !bytes.Equal(g.Meta, w.Meta) ||
			g.GenTs != w.GenTs || g.DoneTs != w.DoneTs || g.DataIndex != w.DataIndex || g.HasSeq != w.HasSeq || g.Seq != w.Seq {
			t.Fatalf("message %d differs:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// TestMetaProtobufInterop: bytes from AppendMeta decode with the protobuf
// runtime (over frame.v2.proto) to the same values and are exactly what the
// runtime encodes; bytes the runtime encodes decode with UnmarshalMeta to
// the same values.
func TestMetaProtobufInterop(t *testing.T) {
	md := frameDescriptor(t)
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame(t)
		ours := f.AppendMeta(nil)
		if len(ours) != f.MetaSize() {
			t.Fatalf("MetaSize %d, encoded %d", f.MetaSize(), len(ours))
		}
		want := toDynamic(md, f)

		// ours -> protobuf runtime
		got := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(ours, got); err != nil {
			t.Fatalf("protobuf runtime rejects our meta: %v", err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("runtime decodes our bytes to\n%v\nwant\n%v", got, want)
		}
		// protobuf runtime -> ours
		theirs, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Fatalf("encodings differ:\nours   %x\ntheirs %x", ours, theirs)
		}
		var back Frame
		if err := back.UnmarshalMeta(theirs); err != nil {
			t.Fatalf("UnmarshalMeta of runtime bytes: %v", err)
		}
		sameMeta(t, &back, f)
	})
}

// TestMetaRuntimeDefaults: a message without data_index decodes with the
// proto default -1 in both implementations; unknown fields are skipped.
func TestMetaRuntimeDefaults(t *testing.T) {
	md := frameDescriptor(t)
	d := dynamicpb.NewMessage(md)
	list := d.Mutable(md.Fields().ByName("data_list")).List()
	e := list.NewElement()
	list.Append(e)
	e.Message().SetUnknown(protoreflect.RawFields{0xa0, 0x06, 0x01}) // field 100 varint 1
	b, err := proto.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	if err := f.UnmarshalMeta(b); err != nil {
		t.Fatal(err)
	}
	if f.Len() != 1 || f.Message(0).DataIndex != NoData {
		t.Fatalf("got %d messages, data_index %d", f.Len(), f.Message(0).DataIndex)
	}
	di := list.Get(0).Message().Get(md.Fields().ByName("data_list").Message().Fields().ByName("data_index")).Int()
	if di != NoData {
		t.Fatalf("runtime default data_index %d", di)
	}
}

func TestUnmarshalMetaRejectsMalformed(t *testing.T) {
	f := NewFrame(1, 2)
	f.AddMetaWithData("a", "b", []byte("meta"), 3, 4, []byte("data"))
	good := f.AppendMeta(nil)
	for cut := 1; cut < len(good); cut++ {
		var g Frame
		err := g.UnmarshalMeta(good[:cut])
		if err == nil {
			// Some prefixes are valid messages (cut at a field boundary).
			continue
		}
		if g.Len() != 0 || g.ID() != 0 {
			t.Fatalf("cut %d: error %v left a partial frame", cut, err)
		}
	}
	var g Frame
	if err := g.UnmarshalMeta([]byte{0x2a, 0x05, 0x0a}); err == nil { // data_list len 5, 1 byte
		t.Fatal("truncated data_list accepted")
	}
}

// uvarint decodes exactly what protowire.ConsumeVarint decodes: every
// length, random bytes, and truncated input.
func TestUvarintMatchesProtowire(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	check := func(b []byte) {
		v, n := uvarint(b)
		wv, wn := protowire.ConsumeVarint(b)
		if n != wn || (n > 0 && v != wv) {
			t.Fatalf("% x: uvarint %d,%d; protowire %d,%d", b, v, n, wv, wn)
		}
	}
	for i := 0; i < 200000; i++ {
		v := rng.Uint64() >> rng.IntN(64)
		b := protowire.AppendVarint(nil, v)
		check(b)
		check(b[:len(b)-1])
		check(append(b, byte(rng.Uint32())))
		r := make([]byte, rng.IntN(12))
		for j := range r {
			r[j] = byte(rng.Uint32()) | byte(rng.IntN(2))<<7
		}
		check(r)
	}
}

// Decoding a meta into a frame that held more messages leaves no stale
// message past the new count (Reset's promise: no references kept), on
// success and on error.
func TestUnmarshalMetaClearsStaleMessages(t *testing.T) {
	long, short := NewFrame(1, 2), NewFrame(1, 2)
	for i := 0; i < 10; i++ {
		long.AddMetaWithData("topic/long", "c", []byte("meta"), 3, 4, []byte("data"))
	}
	for i := 0; i < 3; i++ {
		short.AddMetaWithData("s", "", nil, 5, 6, []byte("x"))
	}
	bad := append(short.AppendMeta(nil), 0x2a, 0x05, 0x0a) // a truncated fourth message
	for _, c := range []struct {
		meta []byte
		n    int
	}{{short.AppendMeta(nil), 3}, {bad, 0}} {
		var f Frame
		if err := f.UnmarshalMeta(long.AppendMeta(nil)); err != nil {
			t.Fatal(err)
		}
		err := f.UnmarshalMeta(c.meta)
		if (err != nil) != (c.n == 0) || f.Len() != c.n {
			t.Fatalf("decoded %d messages, error %v", f.Len(), err)
		}
		for i, m := range f.msgs[c.n:10] {
			if m.Name != "" || m.Channel != "" || m.Meta != nil || m.GenTs != 0 {
				t.Fatalf("message %d past the count kept %+v", c.n+i, m)
			}
		}
	}
}
