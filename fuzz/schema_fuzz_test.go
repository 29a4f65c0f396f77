package fuzz

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/edr-lite/edr-lite/schema"
)

const layoutSeed = `struct pose { f64le x (m); f64le y (m); f32le yaw (rad) }
f32le speed (m/s); u8 gear; i16be wheel[4]; pad 2
str8 note
pose p[2]
u64le t (ns); char vin[8]; bytes16be blob; bool ok`

// FuzzLayout compiles arbitrary text as a packed-struct layout. Properties:
// no panic; an error is a *LayoutError (or ErrTooLarge) and no layout.
// When it compiles, decoding arbitrary bytes never panics: AppendJSON
// yields one valid JSON object or ErrShortMessage with dst unchanged,
// Numeric calls back only on success, every declared field has an
// Accessor whose reads never panic, and the JSON Schema is valid JSON that
// the json decoder reads.
func FuzzLayout(f *testing.F) {
	f.Add(layoutSeed, []byte("\x00\x00\x48\x41\x03\x00\x01\x00\x02\x00\x03\x00\x04\xee\xee\x02hi"))
	f.Add("u8 a; str8 s; u8 b", []byte{1, 2, 'x', 'y', 3})
	f.Add("struct s { str16le a; u8 b[3] }\ns x[3]; f64be y", bytes.Repeat([]byte{1, 0}, 20))
	f.Add("u8 a[4611686018427387904]", []byte{})
	f.Fuzz(func(t *testing.T, src string, msg []byte) {
		l, err := schema.ParseLayout([]byte(src))
		if err != nil {
			var le *schema.LayoutError
			if l != nil || !errors.As(err, &le) && !errors.Is(err, schema.ErrTooLarge) {
				t.Fatalf("error %v (%T) with layout %v", err, err, l != nil)
			}
			if le != nil && (le.Line < 1 || le.Col < 1 || !strings.HasPrefix(err.Error(), "layout:")) {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		checkDecoder(t, l, msg)
		for _, fd := range l.Fields() {
			a, err := l.Accessor(strings.ReplaceAll(fd.Path, "[]", "[0]"))
			if err != nil {
				t.Fatalf("no accessor for declared field %s: %v", fd.Path, err)
			}
			a.Float64(msg)
			a.Int64(msg)
			a.Uint64(msg)
			if b, ok := a.Bytes(msg); ok && len(b) > len(msg) {
				t.Fatalf("%s: %d bytes from a %d-byte message", fd.Path, len(b), len(msg))
			}
		}
		js := l.JSONSchema("fuzz")
		if !json.Valid(js) {
			t.Fatalf("JSONSchema is not JSON: %s", js)
		}
		if _, err := schema.NewDecoder(schema.Type{MessageEncoding: schema.EncodingJSON,
			Schema: schema.Schema{Name: "fuzz", Encoding: schema.SchemaJSON, Data: js}}); err != nil &&
			!errors.Is(err, schema.ErrLimit) {
			t.Fatalf("json decoder refuses the layout's JSON Schema: %v", err)
		}
	})
}

// checkDecoder holds a decoder to its contract on one message.
func checkDecoder(t *testing.T, d schema.Decoder, msg []byte) {
	prefix := []byte("> ")
	out, err := d.AppendJSON(prefix, msg)
	if err != nil {
		if !bytes.Equal(out, prefix) {
			t.Fatalf("AppendJSON error %v with output %q", err, out)
		}
	} else {
		js := out[len(prefix):]
		if !bytes.Equal(out[:len(prefix)], prefix) || !json.Valid(js) || js[0] != '{' || bytes.ContainsAny(js, "\n") {
			t.Fatalf("AppendJSON wrote no single-line JSON object: %q", js)
		}
	}
	calls := 0
	if errN := d.Numeric(msg, func(p []byte, _ float64) {
		if len(p) == 0 {
			t.Fatal("Numeric: empty path")
		}
		calls++
	}); errN != nil && calls > 0 {
		t.Fatalf("Numeric: %d callbacks, then %v", calls, errN)
	}
	for _, fd := range d.Fields() {
		if fd.Path == "" {
			t.Fatalf("a field without a path: %+v", fd)
		}
	}
}

// nodeProto is a small proto3 file with what makes descriptors and walks
// interesting: a self-recursive message, a nested message used as a
// stamp, an enum, zigzag and packed repeated fields.
func nodeProto() *descriptorpb.FileDescriptorProto {
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), JsonName: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: label.Enum()}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	opt, rep := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	return &descriptorpb.FileDescriptorProto{
		Name: proto.String("node.proto"), Package: proto.String("f"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Node"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("v", 1, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, opt, ""),
				field("kids", 2, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, rep, ".f.Node"),
				field("t", 3, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, opt, ".f.Node.Time"),
				field("e", 4, descriptorpb.FieldDescriptorProto_TYPE_ENUM, opt, ".f.E"),
				field("s", 5, descriptorpb.FieldDescriptorProto_TYPE_SINT64, opt, ""),
				field("r", 6, descriptorpb.FieldDescriptorProto_TYPE_FLOAT, rep, ""),
				field("name", 7, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, ""),
			},
			NestedType: []*descriptorpb.DescriptorProto{{
				Name: proto.String("Time"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("sec", 1, descriptorpb.FieldDescriptorProto_TYPE_INT64, opt, ""),
					field("nsec", 2, descriptorpb.FieldDescriptorProto_TYPE_UINT32, opt, ""),
				},
			}},
		}},
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("E"), Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: proto.String("E0"), Number: proto.Int32(0)}, {Name: proto.String("E1"), Number: proto.Int32(1)}}}},
	}
}

func descriptorSet(files ...*descriptorpb.FileDescriptorProto) []byte {
	b, _ := proto.Marshal(&descriptorpb.FileDescriptorSet{File: files})
	return b
}

// FuzzSchemaDecode builds a decoder from arbitrary schema bytes for each
// message encoding and decodes an arbitrary message with it. Properties:
// NewDecoder, NewGetter and NewEventTime never panic and return a value or
// an error; every decoder keeps its contract (checkDecoder); getter and
// event-time reads never panic.
func FuzzSchemaDecode(f *testing.F) {
	// Seeds stay small: the fuzzer minimizes what it finds interesting,
	// and a 10 KB descriptor set makes that take minutes.
	tsProto := protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto)
	ts, _ := proto.Marshal(timestamppb.New(time.Unix(1_796_169_600, 5)))
	nodeSet := descriptorSet(nodeProto())
	node := []byte("\x09\x00\x00\x00\x00\x00\x00\xf8\x3f" + // v = 1.5
		"\x12\x09\x09\x00\x00\x00\x00\x00\x00\x00\x40" + // kids[0].v = 2
		"\x1a\x07\x08\x80\xc2\xd7\x2f\x10\x05" + // t = {sec: 100000000, nsec: 5}
		"\x20\x01\x28\x03\x32\x04\x00\x00\x80\x3f\x3a\x02hi") // e, s = -2, r = [1], name
	f.Add(uint8(0), "google.protobuf.Timestamp", descriptorSet(tsProto), ts, "seconds")
	f.Add(uint8(0), "f.Node", nodeSet, node, "t")
	f.Add(uint8(0), "f.Node", nodeSet, node, "kids[0].v")
	f.Add(uint8(1), "", []byte{}, []byte(`{"a": {"b": [1, 2.5, true]}, "t": {"sec": 1, "nsec": 2}}`), "t")
	f.Add(uint8(2), "x", []byte(`{"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#"}}}}`),
		[]byte(`{"a": [{"a": []}]}`), "a[0]")
	f.Add(uint8(3), "vehicle.State", []byte(layoutSeed), bytes.Repeat([]byte{2}, 100), "t")
	f.Add(uint8(4), "std_msgs/msg/String", []byte("string data"), []byte{0, 1, 0, 0}, "data")
	f.Fuzz(func(t *testing.T, enc uint8, name string, data, msg []byte, path string) {
		var typ schema.Type
		switch enc % 6 {
		case 0:
			typ = schema.Type{MessageEncoding: schema.EncodingProtobuf, Schema: schema.Schema{Name: name, Encoding: schema.SchemaProtobuf, Data: data}}
		case 1:
			typ = schema.Type{MessageEncoding: schema.EncodingJSON}
		case 2:
			typ = schema.Type{MessageEncoding: schema.EncodingJSON, Schema: schema.Schema{Name: name, Encoding: schema.SchemaJSON, Data: data}}
		case 3:
			typ = schema.Type{MessageEncoding: schema.EncodingPacked, Schema: schema.Schema{Name: name, Encoding: schema.SchemaLayout, Data: data}}
		case 4:
			typ = schema.Type{MessageEncoding: schema.EncodingCDR, Schema: schema.Schema{Name: name, Encoding: schema.SchemaROS2Msg, Data: data}}
		default:
			typ = schema.Raw(name)
		}
		d, err := schema.NewDecoder(typ)
		if (d == nil) == (err == nil) {
			t.Fatalf("decoder %v with error %v", d != nil, err)
		}
		if err != nil {
			if typ.Validate() == nil && (enc%6 == 4 || enc%6 == 5) && !errors.Is(err, schema.ErrNoDecoder) {
				t.Fatalf("%s: %v, want ErrNoDecoder", typ.MessageEncoding, err)
			}
			return
		}
		checkDecoder(t, d, msg)
		// a field by path (what Lua's m.x reads): compiles or says why,
		// and reads without panicking; a packed read stays in the message
		if g, err := schema.NewGetter(d, path); (g == nil) == (err == nil) {
			t.Fatalf("getter %v with error %v", g != nil, err)
		} else if g != nil {
			if v, ok := g.Get(msg); ok && enc%6 == 3 && len(v.Bytes) > len(msg) {
				t.Fatalf("%s: %d bytes read from a %d-byte message", path, len(v.Bytes), len(msg))
			}
		}
		for _, unit := range []string{schema.UnitNs, schema.UnitS, schema.UnitStamp} {
			e, err := schema.NewEventTime(typ, path, unit)
			if (e == nil) == (err == nil) {
				t.Fatalf("event time %v with error %v", e != nil, err)
			}
			if e != nil {
				e.Ns(msg)
			}
		}
	})
}

// FuzzPathLookup holds schema.ParsePath and Path.LookupJSON (cat --fields
// over any decoded message) to: no panic; a path that parses formats back
// as written; a value found is valid JSON and a slice of the document; an
// invalid document finds nothing.
func FuzzPathLookup(f *testing.F) {
	f.Add("imu.accel[2]", []byte(`{"imu": {"accel": [0.1, -9, 3]}, "x": null}`))
	f.Add(`labels["front left"]`, []byte(`{"labels": {"front left": "x\"y"}}`))
	f.Add("a[0][1]", []byte(`{"a": [[1, {"b": 2}], []]}`))
	f.Add("a", []byte(`{"a": `))
	f.Add("value", []byte(`{"value":"2025-12-02T10:06:40.200Z"}`))
	f.Fuzz(func(t *testing.T, path string, doc []byte) {
		p, err := schema.ParsePath(path)
		if err != nil {
			if !errors.Is(err, schema.ErrNoField) {
				t.Fatalf("ParsePath(%q): %v, not ErrNoField", path, err)
			}
			return
		}
		if p.String() != path {
			t.Fatalf("String() = %q, want %q", p.String(), path)
		}
		v, ok := p.LookupJSON(doc)
		if !ok {
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("found %q in invalid JSON", v)
		}
		if !json.Valid(v) || !bytes.Contains(doc, v) {
			t.Fatalf("found %q: not a JSON value of the document", v)
		}
	})
}
