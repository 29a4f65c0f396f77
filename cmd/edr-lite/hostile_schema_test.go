package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/edr-lite/edr-lite/ingest"
)

// selfRecursive is the FileDescriptorSet of message A { A a = 1; int32 x = 2; }.
func selfRecursive(t *testing.T) []byte {
	t.Helper()
	msg := &descriptorpb.DescriptorProto{Name: proto.String("A"), Field: []*descriptorpb.FieldDescriptorProto{
		{Name: proto.String("a"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".p.A")},
		{Name: proto.String("x"), Number: proto.Int32(2), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()}}}
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		{Name: proto.String("a.proto"), Package: proto.String("p"), Syntax: proto.String("proto3"), MessageType: []*descriptorpb.DescriptorProto{msg}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nestedA is a message of selfRecursive nested depth deep.
func nestedA(depth int) []byte {
	b := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 7)
	for range depth {
		b = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), b)
	}
	return b
}

// TestExportHostileSchemas: a pack dump whose topics declare hostile
// types — a layout that does not compile, one with a 2^62-element array,
// structs nested 100 deep, a descriptor set that does not decode, a
// self-recursive protobuf type with a message nested 3000 deep — exports
// to MCAP and JSON lines whole: each packed one is written as it is with a
// warning naming the topic and the cause, the others pass through, the
// good topic is transcoded; the MCAP file reads back with every message.
func TestExportHostileSchemas(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hostile.pack")
	deep := "struct s0 { u8 a }\n"
	for i := 1; i < 100; i++ {
		deep += "struct s" + strconv.Itoa(i) + " { s" + strconv.Itoa(i-1) + " a }\n"
	}
	deep += "s99 top\n"
	pb := func(name string, data []byte) ingest.Type {
		return ingest.Type{MessageEncoding: ingest.EncodingProtobuf, Schema: ingest.Schema{Name: name, Encoding: ingest.SchemaProtobuf, Data: data}}
	}
	writeTypedDump(t, p, []typedMsg{
		{"good", ingest.Packed("v.G", "u8 a"), t0, []byte{1}},
		{"bad/layout", ingest.Packed("v.B", "u8 a; f33le x"), t0 + 1, []byte{1, 2, 3, 4, 5}},
		{"bad/array", ingest.Packed("v.Arr", "u8 a[4611686018427387904]"), t0 + 2, []byte{1}},
		{"bad/nesting", ingest.Packed("v.Deep", deep), t0 + 3, []byte{1}},
		{"bad/descriptor", pb("p.A", []byte{0xff, 0xff, 0xff}), t0 + 4, []byte{8, 1}},
		{"recursive", pb("p.A", selfRecursive(t)), t0 + 5, nestedA(3000)},
	})
	mc := filepath.Join(dir, "hostile.mcap")
	code, out, errs := runBin(t, "export", "--format", "mcap", "-o", mc, p)
	if code != 0 || !strings.Contains(out, "6 messages") {
		t.Fatalf("export: %d %s %s", code, out, errs)
	}
	for _, want := range []string{
		"warning: topic bad/layout: type v.B not transcoded to json, written as x-edr-packed: layout:1:7: unknown type f33le",
		"warning: topic bad/array: type v.Arr not transcoded to json, written as x-edr-packed:", "MaxLayoutSize",
		"warning: topic bad/nesting: type v.Deep not transcoded to json, written as x-edr-packed:", "MaxDepth 64",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("export's warnings lack %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "topic good") || strings.Contains(errs, "recursive") {
		t.Errorf("warnings about good topics:\n%s", errs)
	}
	code, out, errs = runBin(t, "info", mc)
	if code != 0 || !strings.Contains(out, "messages:   6") || !strings.Contains(out, "recursive") {
		t.Errorf("info of the MCAP export: %d\n%s%s", code, out, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "good" && !strings.Contains(line, " json ") {
			t.Errorf("good not transcoded: %s", line)
		}
	}
	// the MCAP file read back as pack messages: every message, each type kept
	got := readTyped(t, mc)
	if len(got) != 6 {
		t.Fatalf("%d messages read back from the MCAP export, want 6", len(got))
	}
	if code, out, errs := runBin(t, "export", "--format", "jsonl", "-o", filepath.Join(dir, "h.jsonl"), p); code != 0 || !strings.Contains(out, "6 messages") {
		t.Errorf("jsonl export: %d %s %s", code, out, errs)
	}
}
