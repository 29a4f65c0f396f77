package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

const vehicleProto = `syntax = "proto3";
package edr.test;
import "google/protobuf/timestamp.proto";

enum Gear { GEAR_UNSPECIFIED = 0; PARK = 1; DRIVE = 2; }
message Header { google.protobuf.Timestamp stamp = 1; string frame_id = 2; uint32 seq = 3; }
message Wheel { double rpm = 1; sint32 torque = 2; }
message Vehicle {
  Header header = 1;
  double speed = 2;
  float accel = 3;
  int64 odometer = 4;
  Gear gear = 5;
  repeated Wheel wheels = 6;
  repeated float ranges = 7;
  map<string, double> temps = 8;
  bool braking = 9;
  bytes raw = 10;
  optional int32 fault = 11;
  fixed64 t_ns = 12;
  oneof src { string name = 13; uint64 id = 14; }
  sfixed32 offset = 15;
}
message Node { Node child = 1; double v = 2; repeated Node kids = 3; }
message A { B b = 1; }
message B { A a = 1; int32 x = 2; }
`

// compileProto compiles .proto sources and returns the file named first
// and a FileDescriptorSet of it and its imports, dependencies first (what
// protoc --include_imports writes).
func compileProto(t testing.TB, srcs map[string]string, name string) (protoreflect.FileDescriptor, []byte) {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(
		&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)})}
	files, err := c.Compile(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := range fd.Imports().Len() {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	add(files[0])
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return files[0], b
}

func vehicleType(t testing.TB, msg string) (Type, protoreflect.MessageDescriptor) {
	fd, set := compileProto(t, map[string]string{"vehicle.proto": vehicleProto}, "vehicle.proto")
	return Type{MessageEncoding: EncodingProtobuf, Schema: Schema{Name: "edr.test." + msg, Encoding: SchemaProtobuf, Data: set}}, fd.Messages().ByName(protoreflect.Name(msg))
}

// vehicleMessage encodes a Vehicle with dynamicpb, field by field.
func vehicleMessage(t testing.TB, md protoreflect.MessageDescriptor) []byte {
	m := dynamicpb.NewMessage(md)
	f := md.Fields().ByName
	hdr := m.Mutable(f("header")).Message()
	stamp := hdr.Mutable(hdr.Descriptor().Fields().ByName("stamp")).Message()
	stamp.Set(stamp.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1_796_169_600))
	stamp.Set(stamp.Descriptor().Fields().ByName("nanos"), protoreflect.ValueOfInt32(250_000_000))
	hdr.Set(hdr.Descriptor().Fields().ByName("frame_id"), protoreflect.ValueOfString("base_link"))
	hdr.Set(hdr.Descriptor().Fields().ByName("seq"), protoreflect.ValueOfUint32(7))
	m.Set(f("speed"), protoreflect.ValueOfFloat64(12.5))
	m.Set(f("odometer"), protoreflect.ValueOfInt64(1<<60+1))
	m.Set(f("gear"), protoreflect.ValueOfEnum(2))
	wheels := m.Mutable(f("wheels")).List()
	for i, rpm := range []float64{100, 101.5} {
		w := wheels.NewElement()
		w.Message().Set(w.Message().Descriptor().Fields().ByName("rpm"), protoreflect.ValueOfFloat64(rpm))
		w.Message().Set(w.Message().Descriptor().Fields().ByName("torque"), protoreflect.ValueOfInt32(int32(-i)))
		wheels.Append(w)
	}
	ranges := m.Mutable(f("ranges")).List()
	ranges.Append(protoreflect.ValueOfFloat32(1.25))
	ranges.Append(protoreflect.ValueOfFloat32(float32(math.NaN())))
	temps := m.Mutable(f("temps")).Map()
	temps.Set(protoreflect.ValueOfString("rear-left").MapKey(), protoreflect.ValueOfFloat64(30))
	temps.Set(protoreflect.ValueOfString("front").MapKey(), protoreflect.ValueOfFloat64(20.5))
	m.Set(f("braking"), protoreflect.ValueOfBool(true))
	m.Set(f("raw"), protoreflect.ValueOfBytes([]byte{0xff, 0}))
	m.Set(f("t_ns"), protoreflect.ValueOfUint64(1_796_169_600_250_000_001))
	m.Set(f("id"), protoreflect.ValueOfUint64(42))
	m.Set(f("offset"), protoreflect.ValueOfInt32(-5))
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProtobufDecoder(t *testing.T) {
	typ, md := vehicleType(t, "Vehicle")
	d, err := NewDecoder(typ)
	if err != nil {
		t.Fatal(err)
	}
	msg := vehicleMessage(t, md)

	var fields []string
	for _, f := range d.Fields() {
		fields = append(fields, fmt.Sprintf("%s:%s:%s:%v", f.Path, f.Kind, f.Type, f.Dims))
	}
	wantF := "header.stamp.seconds:int:int64:[] header.stamp.nanos:int:int32:[] header.frame_id:string:string:[] " +
		"header.seq:uint:uint32:[] speed:float:double:[] accel:float:float:[] odometer:int:int64:[] gear:enum:edr.test.Gear:[] " +
		"wheels[].rpm:float:double:[-1] wheels[].torque:int:sint32:[-1] ranges[]:float:float:[-1] temps.*:float:double:[] " +
		"braking:bool:bool:[] raw:bytes:bytes:[] fault:int:int32:[] t_ns:uint:fixed64:[] name:string:string:[] id:uint:uint64:[] " +
		"offset:int:sfixed32:[]"
	if got := strings.Join(fields, " "); got != wantF {
		t.Errorf("Fields:\n got %s\nwant %s", got, wantF)
	}

	var got []string
	if err := d.Numeric(msg, func(p []byte, v float64) { got = append(got, fmt.Sprintf("%s=%v", p, v)) }); err != nil {
		t.Fatal(err)
	}
	// accel is unset but has no presence: its default is reported; fault
	// tracks presence and is unset: left out; the oneof reports id only.
	wantN := "header.stamp.seconds=1.7961696e+09 header.stamp.nanos=2.5e+08 header.seq=7 speed=12.5 accel=0 " +
		"odometer=1.152921504606847e+18 gear=2 wheels[0].rpm=100 wheels[0].torque=0 wheels[1].rpm=101.5 wheels[1].torque=-1 " +
		`ranges[0]=1.25 ranges[1]=NaN temps.front=20.5 temps["rear-left"]=30 braking=1 t_ns=1.7961696002500001e+18 id=42 offset=-5`
	if strings.Join(got, " ") != wantN {
		t.Errorf("Numeric:\n got %s\nwant %s", strings.Join(got, " "), wantN)
	}

	js, err := d.AppendJSON([]byte("> "), msg)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(js[2:], &obj); err != nil || strings.Contains(string(js), "\n") {
		t.Fatalf("AppendJSON: %v: %s", err, js)
	}
	for k, want := range map[string]any{"speed": 12.5, "gear": "DRIVE", "odometer": "1152921504606846977", "raw": "/wA=",
		"braking": true, "accel": 0.0, "t_ns": "1796169600250000001", "id": "42"} {
		if fmt.Sprint(obj[k]) != fmt.Sprint(want) {
			t.Errorf("JSON %s = %#v, want %#v", k, obj[k], want)
		}
	}
	if h, _ := obj["header"].(map[string]any); h["frame_id"] != "base_link" || h["stamp"] != "2026-12-02T00:00:00.250Z" {
		t.Errorf("JSON header = %v", obj["header"])
	}

	// A message that does not decode: an error wrapping ErrBadMessage, dst
	// unchanged, no callback.
	for _, bad := range [][]byte{{0x0a, 0x05, 0x01}, {0xff}, {0x6a, 0x02, 0xff, 0xfe}} {
		if out, err := d.AppendJSON([]byte("x"), bad); !errors.Is(err, ErrBadMessage) || string(out) != "x" {
			t.Errorf("AppendJSON(%x) = %q, %v", bad, out, err)
		}
		if err := d.Numeric(bad, func([]byte, float64) { t.Error("callback for a bad message") }); !errors.Is(err, ErrBadMessage) {
			t.Errorf("Numeric(%x): %v", bad, err)
		}
	}
}

// TestProtobufRecursive: self- and mutually recursive types are listed up
// to the cycle (as KindMessage), and decode.
func TestProtobufRecursive(t *testing.T) {
	typ, md := vehicleType(t, "Node")
	d, err := NewDecoder(typ)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, f := range d.Fields() {
		fields = append(fields, fmt.Sprintf("%s:%s:%s", f.Path, f.Kind, f.Type))
	}
	if got, want := strings.Join(fields, " "), "child:message:edr.test.Node v:float:double kids[]:message:edr.test.Node"; got != want {
		t.Errorf("Node fields: %s, want %s", got, want)
	}
	typ.Schema.Name = "edr.test.A"
	if d, err := NewDecoder(typ); err != nil || len(d.Fields()) != 2 || d.Fields()[0].Path != "b.a" || d.Fields()[0].Kind != KindMessage {
		t.Errorf("A: %v %+v", err, d)
	}

	// A chain 60 deep decodes; one deeper than MaxDepth is refused, with no
	// callback, in bounded time.
	nest := func(depth int) []byte {
		m := dynamicpb.NewMessage(md)
		cur := m
		for range depth {
			cur.Set(md.Fields().ByName("v"), protoreflect.ValueOfFloat64(1))
			cur = cur.Mutable(md.Fields().ByName("child")).Message().(*dynamicpb.Message)
		}
		b, err := proto.MarshalOptions{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	n := 0 // 60 values set, and the innermost child's default
	if err := d.Numeric(nest(60), func([]byte, float64) { n++ }); err != nil || n != 61 {
		t.Errorf("60 deep: %v, %d values", err, n)
	}
	if err := d.Numeric(nest(MaxDepth+1), func([]byte, float64) { t.Fatal("callback") }); !errors.Is(err, ErrBadMessage) {
		t.Errorf("%d deep: %v", MaxDepth+1, err)
	}
	// Hand-made: 2000 nested children.
	var deep []byte
	for range 2000 {
		deep = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), deep)
	}
	start := time.Now()
	if _, err := d.AppendJSON(nil, deep); !errors.Is(err, ErrBadMessage) {
		t.Errorf("2000 deep: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Error("deep message took more than a second")
	}
}

func TestProtobufBadSchemas(t *testing.T) {
	typ, _ := vehicleType(t, "Vehicle")
	good := typ.Schema.Data
	set := &descriptorpb.FileDescriptorSet{}
	if err := proto.Unmarshal(good, set); err != nil {
		t.Fatal(err)
	}
	withoutImports, _ := proto.Marshal(&descriptorpb.FileDescriptorSet{File: set.File[len(set.File)-1:]})
	dup := proto.Clone(set).(*descriptorpb.FileDescriptorSet)
	dup.File[1].MessageType = append(dup.File[1].MessageType, dup.File[1].MessageType[0])
	dupBytes, _ := proto.Marshal(dup)
	cases := []struct {
		name string
		data []byte
		msg  string
		want string
	}{
		{"not protobuf", []byte("\xff\xff\xff"), "edr.test.Vehicle", "not a FileDescriptorSet"},
		{"garbage that parses", []byte{0x0a, 0x02, 0x0a, 0x00}, "edr.test.Vehicle", "bad descriptor"},
		{"missing import", withoutImports, "edr.test.Vehicle", "bad descriptor"},
		{"duplicate message", dupBytes, "edr.test.Vehicle", "bad descriptor"},
		{"missing message", good, "edr.test.Truck", `message "edr.test.Truck" is not in the descriptor set (2 files)`},
		{"an enum", good, "edr.test.Gear", `"edr.test.Gear" is not a message`},
	}
	for _, c := range cases {
		d, err := NewDecoder(Type{MessageEncoding: EncodingProtobuf, Schema: Schema{Name: c.msg, Encoding: SchemaProtobuf, Data: c.data}})
		if d != nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", c.name, err, c.want)
		}
	}
}

// TestProtobufWideType: a type whose expansion doubles at every level is
// refused with ErrLimit in bounded time, empty messages included.
func TestProtobufWideType(t *testing.T) {
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\npackage w;\nmessage M0 { }\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "message M%d { M%d a = 1; M%d b = 2; }\n", i, i-1, i-1)
	}
	_, set := compileProto(t, map[string]string{"w.proto": b.String()}, "w.proto")
	start := time.Now()
	_, err := NewDecoder(Type{MessageEncoding: EncodingProtobuf, Schema: Schema{Name: "w.M40", Encoding: SchemaProtobuf, Data: set}})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 65536 fields") {
		t.Errorf("2^40 fields: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v", el)
	}
}
