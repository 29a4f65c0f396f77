package foxglove

import (
	"bytes"
	"context"
	"flag"
	"os"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"pgregory.net/rapid"
)

var update = flag.Bool("update", false, "rewrite the checked-in descriptor sets from proto/foxglove/*.proto")

// compileFDS compiles proto/foxglove/NAME.proto with a pure-Go compiler and
// returns its FileDescriptorSet: google/protobuf/timestamp.proto first, then
// the file itself (dependencies first, as MCAP's protobuf profile asks).
func compileFDS(t *testing.T, name string) *descriptorpb.FileDescriptorSet {
	t.Helper()
	path := "foxglove/" + name + ".proto"
	src, err := os.ReadFile("proto/" + path)
	if err != nil {
		t.Fatal(err)
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{path: string(src)}),
	})}
	files, err := c.Compile(context.Background(), path)
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	fd := files[0]
	if fd.Imports().Len() != 1 || fd.Imports().Get(0).Path() != "google/protobuf/timestamp.proto" {
		t.Fatalf("%s: imports %v, want only google/protobuf/timestamp.proto", path, fd.Imports())
	}
	return &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(fd.Imports().Get(0).FileDescriptor),
		protodesc.ToFileDescriptorProto(fd),
	}}
}

// shippedMessage builds the message descriptor from the shipped (embedded)
// FileDescriptorSet, as a consumer of our MCAP schema would.
func shippedMessage(t *testing.T, fds []byte, name protoreflect.FullName) protoreflect.MessageDescriptor {
	t.Helper()
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(fds, &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	d, err := files.FindDescriptorByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return d.(protoreflect.MessageDescriptor)
}

// TestDescriptorsMatchProto: the shipped descriptor sets are those of the
// .proto files, and the field numbers the hand-written codec uses are the
// files'. With -update it rewrites the shipped sets.
func TestDescriptorsMatchProto(t *testing.T) {
	for _, c := range []struct {
		name    string
		shipped []byte
		fields  compressedFields
	}{
		{"CompressedImage", compressedImageFDS, imageFields},
		{"CompressedVideo", compressedVideoFDS, videoFields},
	} {
		set := compileFDS(t, c.name)
		if *update {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile("proto/foxglove/"+c.name+".binpb", b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var got descriptorpb.FileDescriptorSet
		if err := proto.Unmarshal(c.shipped, &got); err != nil {
			t.Fatalf("%s: shipped set: %v", c.name, err)
		}
		if !proto.Equal(&got, set) {
			t.Errorf("%s: shipped FileDescriptorSet differs from the compiled .proto (run with -update)", c.name)
		}
		md := shippedMessage(t, c.shipped, protoreflect.FullName("foxglove."+c.name))
		check := func(name string, num protoreflect.FieldNumber, kind protoreflect.Kind) {
			fd := md.Fields().ByName(protoreflect.Name(name))
			if fd == nil || fd.Number() != num || fd.Kind() != kind || fd.IsList() {
				t.Errorf("%s.%s: %v; codec uses number %d kind %v", c.name, name, fd, num, kind)
			}
		}
		check("timestamp", protoreflect.FieldNumber(c.fields.timestamp), protoreflect.MessageKind)
		check("frame_id", protoreflect.FieldNumber(c.fields.frameID), protoreflect.StringKind)
		check("data", protoreflect.FieldNumber(c.fields.data), protoreflect.BytesKind)
		check("format", protoreflect.FieldNumber(c.fields.format), protoreflect.StringKind)
		if md.Fields().Len() != 4 {
			t.Errorf("%s has %d fields, the codec knows 4", c.name, md.Fields().Len())
		}
		ts := md.Fields().ByName("timestamp").Message()
		if ts.FullName() != "google.protobuf.Timestamp" ||
			ts.Fields().ByName("seconds").Number() != protoreflect.FieldNumber(fieldTimestampSeconds) ||
			ts.Fields().ByName("nanos").Number() != protoreflect.FieldNumber(fieldTimestampNanos) {
			t.Errorf("%s: timestamp is not google.protobuf.Timestamp as the codec writes it", c.name)
		}
	}
	if *update {
		return
	}
	if d := CompressedVideoDescriptor(); !bytes.Equal(d, compressedVideoFDS) || &d[0] == &compressedVideoFDS[0] ||
		!bytes.Equal(CompressedImageDescriptor(), compressedImageFDS) {
		t.Error("descriptor accessors must return copies of the shipped sets")
	}
}

// TestEncodersMatchDynamicpb: for any field values, the hand-written
// encoders produce the bytes proto.Marshal produces for a dynamicpb message
// built from the shipped descriptor; dynamicpb decodes them back to the
// same values, and so do the hand-written decoders.
func TestEncodersMatchDynamicpb(t *testing.T) {
	for _, c := range []struct {
		name   string
		fds    []byte
		append func(dst []byte, ts int64, frameID, format string, data []byte) []byte
		decode func(msg []byte) (int64, string, string, []byte, error)
	}{
		{"CompressedImage", compressedImageFDS, AppendCompressedImage, func(msg []byte) (int64, string, string, []byte, error) {
			var v CompressedImage
			err := DecodeCompressedImage(msg, &v)
			return v.TimestampNs, v.FrameID, v.Format, v.Data, err
		}},
		{"CompressedVideo", compressedVideoFDS, AppendCompressedVideo, func(msg []byte) (int64, string, string, []byte, error) {
			var v CompressedVideo
			err := DecodeCompressedVideo(msg, &v)
			return v.TimestampNs, v.FrameID, v.Format, v.Data, err
		}},
	} {
		md := shippedMessage(t, c.fds, protoreflect.FullName("foxglove."+c.name))
		tsd := md.Fields().ByName("timestamp").Message()
		t.Run(c.name, rapid.MakeCheck(func(rt *rapid.T) {
			ts := rapid.OneOf(rapid.Int64(), rapid.Int64Range(-3e9, 3e9), rapid.Just(int64(0)),
				rapid.Int64Range(1_700_000_000_000_000_000, 1_900_000_000_000_000_000)).Draw(rt, "ts")
			frameID := rapid.OneOf(rapid.Just(""), rapid.String()).Draw(rt, "frame_id")
			format := rapid.SampledFrom([]string{"", "jpeg", "h264", "h265", "x"}).Draw(rt, "format")
			data := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "data")
			got := c.append([]byte("prefix"), ts, frameID, format, data)
			if !bytes.HasPrefix(got, []byte("prefix")) {
				rt.Fatal("Append overwrote dst")
			}
			got = got[len("prefix"):]

			sec, nanos := splitNs(ts)
			tm := dynamicpb.NewMessage(tsd)
			tm.Set(tsd.Fields().ByName("seconds"), protoreflect.ValueOfInt64(sec))
			tm.Set(tsd.Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(nanos)))
			m := dynamicpb.NewMessage(md)
			m.Set(md.Fields().ByName("timestamp"), protoreflect.ValueOfMessage(tm))
			m.Set(md.Fields().ByName("frame_id"), protoreflect.ValueOfString(frameID))
			m.Set(md.Fields().ByName("format"), protoreflect.ValueOfString(format))
			m.Set(md.Fields().ByName("data"), protoreflect.ValueOfBytes(data))
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if err != nil {
				rt.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				rt.Fatalf("encoder bytes\n%x\nproto.Marshal\n%x", got, want)
			}

			back := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(got, back); err != nil {
				rt.Fatal(err)
			}
			if !proto.Equal(back, m) {
				rt.Fatalf("dynamicpb decoded %v, want %v", back, m)
			}

			dts, dframe, dformat, ddata, err := c.decode(got)
			if err != nil || dts != ts || dframe != frameID || dformat != format || !bytes.Equal(ddata, data) {
				rt.Fatalf("decode: %d %q %q %x %v", dts, dframe, dformat, ddata, err)
			}
		}))
	}
}

// TestDecodeSkipsUnknownAndRejectsJunk: unknown fields are skipped, a
// repeated field's last occurrence wins, and truncated messages or a
// timestamp outside int64 nanoseconds are errors that leave v zeroed.
func TestDecodeSkipsUnknownAndRejectsJunk(t *testing.T) {
	msg := AppendCompressedVideo(nil, 1_764_682_342_052_000_001, "cam", "h264", []byte{0, 0, 0, 1, 0x65})
	msg = append(msg, 0x38, 0x05)                           // field 7, varint 5: unknown
	msg = appendStringField(msg, fieldVideoFrameID, "cam2") // later occurrence wins
	var v CompressedVideo
	if err := DecodeCompressedVideo(msg, &v); err != nil || v.FrameID != "cam2" || v.Format != "h264" ||
		v.TimestampNs != 1_764_682_342_052_000_001 || len(v.Data) != 5 {
		t.Fatalf("%+v %v", v, err)
	}
	for _, bad := range [][]byte{
		msg[:len(msg)-1],
		{0x0a, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00}, // 2^63-1 s
		{0x1a, 0x05, 0x00},
	} {
		v = CompressedVideo{FrameID: "x", Format: "y", Data: []byte{1}, TimestampNs: 1}
		if err := DecodeCompressedVideo(bad, &v); err == nil || v.FrameID != "" || v.Format != "" || v.Data != nil || v.TimestampNs != 0 {
			t.Errorf("%x: %+v, %v", bad, v, err)
		}
	}
}
