package ingest

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	layout := []byte("f32le speed")
	f := func(name string, typ Type, want error, msg string) {
		t.Helper()
		err := typ.Validate()
		if !errors.Is(err, want) || want == nil && err != nil {
			t.Errorf("%s: Validate() = %v, want %v", name, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %q does not say %q", name, err, msg)
		}
	}
	f("raw", Raw(""), nil, "")
	f("raw named", Raw("vehicle.Speed"), nil, "")
	f("packed", Type{EncodingPacked, Schema{"vehicle.Speed", SchemaLayout, layout}}, nil, "")
	f("json", Type{EncodingJSON, Schema{}}, nil, "")
	f("json with schema", Type{EncodingJSON, Schema{"a", SchemaJSON, []byte("{}")}}, nil, "")
	f("cdr", Type{EncodingCDR, Schema{"std_msgs/msg/String", SchemaROS2Msg, []byte("string data")}}, nil, "")
	f("flatbuffer", Type{EncodingFlatbuffer, Schema{"a.B", SchemaFlatbuffer, []byte{1}}}, nil, "")
	f("custom", Type{"x-acme", Schema{"a", "x-acme-schema", []byte{1}}}, nil, "")
	f("zero", Type{}, ErrInvalidType, "empty message encoding")
	f("protobuf without name", Type{EncodingProtobuf, Schema{"", SchemaProtobuf, []byte{1}}}, ErrInvalidType, "needs the name")
	f("protobuf without data", Type{EncodingProtobuf, Schema{"a.B", SchemaProtobuf, nil}}, ErrInvalidType, "empty protobuf schema")
	f("protobuf with jsonschema", Type{EncodingProtobuf, Schema{"a.B", SchemaJSON, []byte("{}")}}, ErrInvalidType, `takes schema encoding ["protobuf"], not "jsonschema"`)
	f("empty jsonschema", Type{EncodingJSON, Schema{"a", SchemaJSON, nil}}, ErrInvalidType, "empty jsonschema schema")
	f("packed without layout", Type{EncodingPacked, Schema{"a", SchemaNone, nil}}, ErrInvalidType, "x-edr-layout")
	f("data without encoding", Type{"x-acme", Schema{"a", "", []byte{1}}}, ErrInvalidType, "without a schema encoding")
	f("raw with data", Type{EncodingRaw, Schema{"a", SchemaNone, []byte{1}}}, ErrInvalidType, "without a schema encoding")
	f("control char", Type{"json\n", Schema{}}, ErrInvalidType, "printable ASCII")
	f("bad name", Type{EncodingJSON, Schema{Name: "\xff"}}, ErrInvalidType, "UTF-8")
	f("long name", Type{EncodingJSON, Schema{Name: strings.Repeat("a", 2000)}}, ErrInvalidType, "at most 1024")
	f("just too large", Type{EncodingPacked, Schema{"big", SchemaLayout, make([]byte, MaxSchemaSize+1)}}, ErrSchemaTooLarge,
		`4194305 bytes of "x-edr-layout" schema for "big", limit 4194304 (MaxSchemaSize)`)
	f("largest", Type{EncodingPacked, Schema{"big", SchemaLayout, make([]byte, MaxSchemaSize)}}, nil, "")
}

func TestID(t *testing.T) {
	a := Schema{"vehicle.Speed", SchemaLayout, []byte("f32le speed")}
	ids := map[ContentID]string{}
	add := func(what string, id ContentID) {
		t.Helper()
		if prev, dup := ids[id]; dup {
			t.Errorf("%s has the ID of %s", what, prev)
		}
		ids[id] = what
	}
	add("a", a.ID())
	add("other name", Schema{"vehicle.Speed2", a.Encoding, a.Data}.ID())
	add("other encoding", Schema{a.Name, "x-other", a.Data}.ID())
	add("other data", Schema{a.Name, a.Encoding, []byte("f32le speed2")}.ID())
	// Lengths are prefixed: moving a byte from one part to the next changes the ID.
	add("shifted", Schema{"vehicle.Speedx", "-edr-layout", a.Data}.ID())
	add("type", Type{EncodingPacked, a}.ID())
	add("type json", Type{EncodingJSON, a}.ID())
	if a.ID() != (Schema{a.Name, a.Encoding, append([]byte(nil), a.Data...)}).ID() {
		t.Error("equal schemas, different IDs")
	}
	// Pinned (computed independently: SHA-256 of 8-byte little-endian
	// lengths and the parts, first 16 bytes): files store IDs.
	if got, want := a.ID().String(), "d07411476e2b64e5ddc15c6001da7be0"; got != want {
		t.Errorf("ID = %s, want %s (pinned; files store it)", got, want)
	}
}
