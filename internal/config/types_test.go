package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/edr-lite/edr-lite/ingest"
)

const typeBase = `[recorder]
dump_dir = "/tmp/d"
`

func writeDescriptorSet(t *testing.T, path string, files ...*descriptorpb.FileDescriptorProto) {
	t.Helper()
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: files})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTypeKeys: the type keys of [[topic]], [[source.udp]] and
// [[source.raw]] give the types the recorder will use, schema files read
// relative to the configuration file.
func TestTypeKeys(t *testing.T) {
	dir := t.TempDir()
	writeDescriptorSet(t, filepath.Join(dir, "ts.binpb"), protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto))
	os.WriteFile(filepath.Join(dir, "cal.json"), []byte(`{"type":"object","properties":{"k":{"type":"number"}}}`), 0o600)
	src := typeBase + `
[[topic]]
match = "vehicle/speed"
schema_name = "vehicle.Speed"
layout = """
f32le speed (m/s)
u8 gear"""

[[topic]]
match = "clock"
encoding = "protobuf"
schema_name = "google.protobuf.Timestamp"
schema_file = "ts.binpb"

[[topic]]
match = "cal"
encoding = "json"
schema_file = "cal.json"

[[source.udp]]
listen = ":9000"
schema_name = "radar.Frame"

[[source.raw]]
interface = "eth0"
encoding = "cdr"
schema_name = "std_msgs/msg/String"
schema_encoding = "ros2msg"
`
	path := filepath.Join(dir, "edr.toml")
	f, err := Parse(path, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.Topics[0].Type, ingest.Packed("vehicle.Speed", "f32le speed (m/s)\nu8 gear"); !got.Equal(want) {
		t.Errorf("topic[0]: %v %q", got, got.Schema.Data)
	}
	ts := f.Topics[1].Type
	if ts.MessageEncoding != "protobuf" || ts.Schema.Encoding != "protobuf" || ts.Schema.Name != "google.protobuf.Timestamp" || len(ts.Schema.Data) == 0 {
		t.Errorf("topic[1]: %v", ts)
	}
	if c := f.Topics[2].Type; c.MessageEncoding != "json" || c.Schema.Encoding != "jsonschema" || len(c.Schema.Data) == 0 {
		t.Errorf("topic[2]: %v", c)
	}
	if u := f.Sources.UDP[0].Type; !u.Equal(ingest.Named("radar.Frame")) {
		t.Errorf("source.udp[0]: %v", u)
	}
	if r := f.Sources.Raw[0].Type; r.MessageEncoding != "cdr" || r.Schema.Encoding != "ros2msg" {
		t.Errorf("source.raw[0]: %v", r)
	}
}

// TestTypeKeysErrors: a bad type is an error naming the file, the line of
// the key at fault and the cause (a layout's own line and column).
func TestTypeKeysErrors(t *testing.T) {
	dir := t.TempDir()
	// A descriptor set whose files import each other: a cycle.
	a := &descriptorpb.FileDescriptorProto{Name: proto.String("a.proto"), Package: proto.String("p"), Dependency: []string{"b.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("A")}}}
	b := &descriptorpb.FileDescriptorProto{Name: proto.String("b.proto"), Package: proto.String("p"), Dependency: []string{"a.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("B")}}}
	writeDescriptorSet(t, filepath.Join(dir, "cycle.binpb"), a, b)
	writeDescriptorSet(t, filepath.Join(dir, "ts.binpb"), protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto))
	os.WriteFile(filepath.Join(dir, "junk.binpb"), []byte{0xff, 0xff, 0xff}, 0o600)
	big, _ := os.Create(filepath.Join(dir, "big.binpb"))
	big.Truncate(100 << 20) // sparse
	big.Close()
	path := filepath.Join(dir, "bad.toml")
	for _, c := range []struct{ src, want string }{
		{"[[topic]]\nmatch = \"a\"\nlayout = \"f32le speed; f33le x\"\n", `bad.toml:5: topic[0].layout: layout:1:14: unknown type f33le`},
		{"[[topic]]\nmatch = \"a\"\nschema_name = \"s\"\nlayout = \"\"\"\nf32le speed\nu8 gear[0]\"\"\"\n", `bad.toml:6: topic[0].layout: layout:2:`},
		{"[[topic]]\nmatch = \"a\"\nencoding = \"json\"\nlayout = \"u8 a\"\n", `bad.toml:5: topic[0].encoding: encoding = "json" with a layout`},
		{"[[topic]]\nmatch = \"a\"\n\n[[topic]]\nmatch = \"b\"\nencoding = \"protobuf\"\nschema_name = \"p.A\"\nschema_file = \"missing.binpb\"\n", `bad.toml:10: topic[1].schema_file: stat`},
		{"[[topic]]\nmatch = \"a\"\nencoding = \"protobuf\"\nschema_name = \"p.A\"\nschema_file = \"junk.binpb\"\n", `bad.toml:7: topic[0].schema_file:`},
		{"[[topic]]\nmatch = \"a\"\nencoding = \"protobuf\"\nschema_name = \"p.A\"\nschema_file = \"cycle.binpb\"\n", `bad.toml:7: topic[0].schema_file:`},
		{"[[topic]]\nmatch = \"a\"\nencoding = \"protobuf\"\nschema_name = \"nope.Nope\"\nschema_file = \"ts.binpb\"\n", `nope.Nope`},
		{"[[topic]]\nmatch = \"a\"\nencoding = \"protobuf\"\nschema_name = \"p.A\"\nschema_file = \"big.binpb\"\n", `bad.toml:7: topic[0].schema_file: ` + filepath.Join(dir, "big.binpb") + ` is 104857600 bytes`},
		{"[[topic]]\nmatch = \"a\"\nlayout = \"u8 a[4611686018427387904]\"\n", `bad.toml:5: topic[0].layout: layout:1:6: array length 4611686018427387904 exceeds 16777216 (MaxLayoutSize)`},
		{"[[topic]]\nmatch = \"a\"\nlayout = \"\"\"\n" + deepLayout(100) + "\"\"\"\n", `bad.toml:5: topic[0].layout: layout:`},
		{"[[topic]]\nmatch = \"a\"\nlayout = \"\"\"\n" + deepLayout(100) + "\"\"\"\n", `structs nest 65 deep (MaxDepth 64)`},
		{"[[source.udp]]\nlisten = \":1\"\nschema_file = \"ts.binpb\"\n", `bad.toml:5: source.udp[0].schema_file: a schema needs an encoding`},
		{"[[source.raw]]\ninterface = \"eth0\"\nencoding = \"protobuf\"\n", `bad.toml:5: source.raw[0].encoding: ingest: invalid topic type: a protobuf schema needs the name`},
	} {
		_, err := Parse(path, []byte(typeBase+c.src))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n  error %v\n  want it to say %s", c.src, err, c.want)
		}
	}
}

// deepLayout is a layout of n structs each holding the one before.
func deepLayout(n int) string {
	var b strings.Builder
	b.WriteString("struct s0 { u8 a }\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "struct s%d { s%d a }\n", i, i-1)
	}
	fmt.Fprintf(&b, "s%d top\n", n-1)
	return b.String()
}
