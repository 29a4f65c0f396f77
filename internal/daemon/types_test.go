package daemon

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/shm"
)

// cyclicDescriptorSet is a FileDescriptorSet whose two files import each
// other.
func cyclicDescriptorSet() []byte {
	a := &descriptorpb.FileDescriptorProto{Name: proto.String("a.proto"), Package: proto.String("p"), Dependency: []string{"b.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("A")}}}
	b := &descriptorpb.FileDescriptorProto{Name: proto.String("b.proto"), Package: proto.String("p"), Dependency: []string{"a.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("B")}}}
	out, _ := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{a, b}})
	return out
}

// deepStructs is a layout of n structs each holding the one before.
func deepStructs(n int) string {
	var b strings.Builder
	b.WriteString("struct s0 { u8 a }\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "struct s%d { s%d a }\n", i, i-1)
	}
	fmt.Fprintf(&b, "s%d top\n", n-1)
	return b.String()
}

// selfRecursiveSet is the FileDescriptorSet of
// message A { A a = 1; int32 x = 2; }.
func selfRecursiveSet() []byte {
	msg := &descriptorpb.DescriptorProto{Name: proto.String("A"), Field: []*descriptorpb.FieldDescriptorProto{
		{Name: proto.String("a"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".p.A")},
		{Name: proto.String("x"), Number: proto.Int32(2), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()}}}
	out, _ := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		{Name: proto.String("a.proto"), Package: proto.String("p"), Syntax: proto.String("proto3"), MessageType: []*descriptorpb.DescriptorProto{msg}}}})
	return out
}

// claimHugeSchema rewrites a live producer's segment so that its schema
// area claims 100 MiB (the file grows to that, sparse): consistent enough
// to be read, too large to be.
func claimHugeSchema(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const claim, hs = 100 << 20, 4096 + 100<<20
	hdr := bytes.Clone(b[:4096])
	binary.LittleEndian.PutUint32(hdr[76:], claim)   // schema_len
	binary.LittleEndian.PutUint32(hdr[12:], hs)      // header_size
	binary.LittleEndian.PutUint64(hdr[16:], hs+4096) // total_size: header_size + capacity
	ring := b[len(b)-4096:]
	tmp := path + ".new"
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(hdr, 0)
	f.WriteAt(ring, hs)
	f.Close()
	// Hidden while being written, then renamed into place as producers do.
	os.Rename(tmp, path)
}

// TestHostileSchemasRecordedRaw: producers declaring a layout that does
// not compile, a descriptor set that does not decode, one whose files
// import each other, and a schema area claiming 100 MiB are recorded all
// the same, as raw bytes, each with its cause in the status and the log;
// a well-formed declaration next to them is recorded with its type.
func TestHostileSchemasRecordedRaw(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Rules = nil
	cfg.Hooks.Exec = nil
	var logs syncBuffer
	d, err := New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	segs := cfg.Sources.SHM[0].Dir
	good := ingest.Packed("v.Good", "f32le speed (m/s)")
	cases := []struct {
		topic string
		typ   ingest.Type
		cause string
	}{
		{"good", good, ""},
		{"bad/layout", ingest.Packed("v.Bad", "f32le speed; f33le x"), "layout:1:14: unknown type f33le"},
		{"bad/descriptor", ingest.Type{MessageEncoding: "protobuf", Schema: ingest.Schema{Name: "p.A", Encoding: "protobuf", Data: []byte{0xff, 0xff, 0xff}}}, "protobuf"},
		{"bad/cycle", ingest.Type{MessageEncoding: "protobuf", Schema: ingest.Schema{Name: "p.A", Encoding: "protobuf", Data: cyclicDescriptorSet()}}, "import cycle"},
		{"bad/huge", ingest.Packed("v.Huge", "u8 a"), "104857600 bytes"},
		{"bad/array", ingest.Packed("v.Arr", "u8 a[4611686018427387904]"), "exceeds 16777216 (MaxLayoutSize)"},
		{"bad/nesting", ingest.Packed("v.Deep", deepStructs(100)), "structs nest 65 deep (MaxDepth 64)"},
		// message A { A a = 1; int32 x = 2; }: a valid type, recorded
		// with it; decoding its messages is bounded (schema.MaxDepth)
		{"recursive", ingest.Type{MessageEncoding: "protobuf", Schema: ingest.Schema{Name: "p.A", Encoding: "protobuf", Data: selfRecursiveSet()}}, ""},
	}
	for _, c := range cases {
		p, err := shm.NewProducer(segs+"/.staging", shm.ProducerOptions{Name: c.topic, Type: c.typ, Capacity: 4096})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			p.Publish(int64(i+1), []byte{0, 0, 0x20, 0x41})
		}
		if c.topic == "bad/huge" {
			claimHugeSchema(t, p.Path())
		}
		// Move the finished segment into the watched directory.
		if err := os.Rename(p.Path(), segs+"/"+shm.SegmentFileName(c.topic, "")); err != nil {
			t.Fatal(err)
		}
		defer p.Close()
	}
	waitFor(t, "every topic recorded", func() bool {
		n := 0
		for _, tp := range d.Status().Topics {
			if tp.Written == 3 {
				n++
			}
		}
		return n == len(cases)
	})
	for _, c := range cases {
		var tp *TopicStatus
		st := d.Status()
		for i := range st.Topics {
			if st.Topics[i].Name == c.topic {
				tp = &st.Topics[i]
			}
		}
		if c.cause == "" {
			if tp.Encoding != c.typ.MessageEncoding || tp.Type != c.typ.Schema.Name || tp.TypeError != "" {
				t.Errorf("%s: %+v", c.topic, tp)
			}
			continue
		}
		if tp.Encoding != ingest.EncodingRaw || tp.Type != c.typ.Schema.Name {
			t.Errorf("%s: recorded as %q %q, want raw named %q", c.topic, tp.Encoding, tp.Type, c.typ.Schema.Name)
		}
		if !strings.Contains(tp.TypeError, c.cause) {
			t.Errorf("%s: type error %q, want it to say %q", c.topic, tp.TypeError, c.cause)
		}
		if !strings.Contains(logs.String(), c.topic) || !strings.Contains(logs.String(), c.cause) {
			t.Errorf("%s: the log does not name it and %q:\n%s", c.topic, c.cause, logs.String())
		}
	}
}

// TestTopicTypeFromConfig: a [[topic]] layout gives a producer that
// declares nothing its type, and overrides one that declares another.
func TestTopicTypeFromConfig(t *testing.T) {
	dir := t.TempDir()
	src := config.Default() + `
[[topic]]
match = "vehicle/*"
schema_name = "vehicle.State"
layout = "f32le speed (m/s); u8 gear; pad 3"
`
	cfg, err := config.Parse(dir+"/edr.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	base := testConfig(t, dir)
	base.Topics = cfg.Topics
	base.Rules, base.Hooks.Exec = nil, nil
	d := startDaemon(t, base)
	for _, typ := range []ingest.Type{{}, ingest.Packed("other", "u8 a")} {
		name := "vehicle/" + typ.Schema.Name + "x"
		p, err := shm.NewProducer(base.Sources.SHM[0].Dir, shm.ProducerOptions{Name: name, Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		waitFor(t, name, func() bool {
			for _, tp := range d.Status().Topics {
				if tp.Name == name {
					if tp.Encoding != ingest.EncodingPacked || tp.Type != "vehicle.State" {
						t.Fatalf("%s recorded as %q %q, want the configuration's vehicle.State", name, tp.Encoding, tp.Type)
					}
					return true
				}
			}
			return false
		})
	}
}
