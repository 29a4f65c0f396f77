package scripts

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/edr-lite/edr-lite/ingest"
)

// speedLayout is a packed struct with a scalar, an array, a nested struct,
// a bool and a string after which nothing has a fixed offset.
const speedLayout = "struct xy { f64le x; f64le y }\nf32le speed (m/s); u8 gear; i16be wheel[4]; xy pos; bool brake; str8 note; u16le after"

func packedType() *ingest.Type {
	return &ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: "demo.Speed", Encoding: ingest.SchemaLayout, Data: []byte(speedLayout)}}
}

// packSpeed encodes one message of speedLayout.
func packSpeed(speed float32, gear uint8, wheel [4]int16, x, y float64, brake bool, note string, after uint16) []byte {
	b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(speed))
	b = append(b, gear)
	for _, w := range wheel {
		b = binary.BigEndian.AppendUint16(b, uint16(w))
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
	if brake {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = append(b, byte(len(note)))
	b = append(b, note...)
	return binary.LittleEndian.AppendUint16(b, after)
}

// logRule runs src (its on_message logs through trigger tags) on m and
// returns the tags of the triggers it fired.
func feedTags(t *testing.T, src string, ms ...*Message) []string {
	t.Helper()
	r, f := load(t, src, nil)
	for _, m := range ms {
		r.Feed(m)
	}
	mustNotBeDisabled(t, r)
	var out []string
	for _, tr := range f.list {
		out = append(out, tr.Tag)
	}
	return out
}

func TestFieldsByNamePacked(t *testing.T) {
	typ := packedType()
	m := &Message{Topic: "vehicle/speed", TS: base, Type: typ,
		Data: packSpeed(20.5, 3, [4]int16{-1, 2, -300, 4}, 1.25, -2.5, true, "hi", 513)}
	src := `rule{name='t', topics='**'}
function on_message(m)
  trigger{tag = string.format("%g %d %d %d %g %g %s %s %d %g",
    m.speed, m.gear, m:f("wheel[2]"), m:f("wheel[0]"), m:f("pos.x"), m:f("pos.y"),
    tostring(m.brake), m.note, m.after, m.speed * 2)}
end`
	got := feedTags(t, src, m)
	want := "20.5 3 -300 -1 1.25 -2.5 true hi 513 41"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("tags %q, want %q", got, want)
	}
	// the same paths on a message of another length: the string moves
	// "after"; view fields keep their meaning
	m2 := &Message{Topic: "vehicle/speed", TS: base + 1, Type: typ,
		Data: packSpeed(1, 0, [4]int16{}, 0, 0, false, "longer note", 7)}
	src2 := `rule{name='t', topics='**'}
function on_message(m) trigger{tag = m.note .. " " .. m.after .. " " .. m.size .. " " .. tostring(m.brake)} end`
	got = feedTags(t, src2, m, m2)
	if strings.Join(got, "|") != "hi 513 "+itoa(int64(len(m.Data)))+" true|longer note 7 "+itoa(int64(len(m2.Data)))+" false" {
		t.Fatalf("tags %q", got)
	}
}

// TestFieldsByNameErrors: a name the type does not have, a raw topic, a
// message too short for its layout each disable the rule with an error
// naming the topic and the cause.
func TestFieldsByNameErrors(t *testing.T) {
	short := packSpeed(1, 0, [4]int16{}, 0, 0, false, "", 0)[:6]
	for _, c := range []struct {
		name, expr string
		typ        *ingest.Type
		data       []byte
		want       string
	}{
		{"unknown field", "m.sped", packedType(), packSpeed(1, 0, [4]int16{}, 0, 0, false, "", 0), "m.sped: topic vehicle/speed (demo.Speed): schema: no such field: \"sped\": no field sped"},
		{"index out of range", `m:f("wheel[4]")`, packedType(), packSpeed(1, 0, [4]int16{}, 0, 0, false, "", 0), "index 4 out of range: wheel has 4 elements"},
		{"a struct", `m:f("pos")`, packedType(), packSpeed(1, 0, [4]int16{}, 0, 0, false, "", 0), "is a struct"},
		{"short message", "m.gear + m:f('wheel[1]')", packedType(), short, "m:f(\"wheel[1]\"): topic vehicle/speed: message of 6 bytes is too short for field wheel[1] (i16be)"},
		{"raw topic", "m.speed", &ingest.Type{MessageEncoding: ingest.EncodingRaw}, f32(1), "m.speed: topic vehicle/speed: the topic is raw bytes"},
		{"untyped message", "m.speed", nil, f32(1), "message view has no field speed"},
		{"bad argument", "m:f(3)", packedType(), f32(1), "m:f: argument 1 must be a field path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := load(t, "rule{name='t', topics='**'}\nfunction on_message(m) local v = "+c.expr+" end", nil)
			r.Feed(&Message{Topic: "vehicle/speed", TS: base, Type: c.typ, Data: c.data})
			st := r.Status()
			if !st.Disabled || !strings.Contains(st.Why, c.want) || !strings.Contains(st.Why, "t.lua:2") {
				t.Fatalf("status %+v, want disabled at t.lua:2 with %q", st, c.want)
			}
		})
	}
}

const fieldsProto = `syntax = "proto3";
package demo;
message Time { int64 sec = 1; uint32 nanosec = 2; }
message Header { Time stamp = 1; string frame_id = 2; }
message Imu { Header header = 1; double ax = 2; repeated float w = 3; bool ok = 4; sint32 temp = 5; string label = 6; }
`

func protoType(t testing.TB) (*ingest.Type, []byte) {
	t.Helper()
	c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{"imu.proto": fieldsProto})}}
	files, err := c.Compile(context.Background(), "imu.proto")
	if err != nil {
		t.Fatal(err)
	}
	set, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(files[0])}})
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName("Imu")
	msg := dynamicpb.NewMessage(md)
	hdr := dynamicpb.NewMessage(md.Fields().ByName("header").Message())
	stamp := dynamicpb.NewMessage(hdr.Descriptor().Fields().ByName("stamp").Message())
	stamp.Set(stamp.Descriptor().Fields().ByName("sec"), protoreflect.ValueOf(int64(1796169600)))
	stamp.Set(stamp.Descriptor().Fields().ByName("nanosec"), protoreflect.ValueOf(uint32(5)))
	hdr.Set(hdr.Descriptor().Fields().ByName("stamp"), protoreflect.ValueOfMessage(stamp))
	msg.Set(md.Fields().ByName("header"), protoreflect.ValueOfMessage(hdr))
	msg.Set(md.Fields().ByName("ax"), protoreflect.ValueOf(-9.5))
	w := msg.Mutable(md.Fields().ByName("w")).List()
	for _, v := range []float32{0.5, 1.5, 2.5} {
		w.Append(protoreflect.ValueOf(v))
	}
	msg.Set(md.Fields().ByName("temp"), protoreflect.ValueOf(int32(-40)))
	data, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return &ingest.Type{MessageEncoding: ingest.EncodingProtobuf,
		Schema: ingest.Schema{Name: "demo.Imu", Encoding: ingest.SchemaProtobuf, Data: set}}, data
}

func TestFieldsByNameProtobufJSON(t *testing.T) {
	ptyp, pdata := protoType(t)
	src := `rule{name='t', topics='**'}
function on_message(m)
  if m.topic == "imu" then
    trigger{tag = string.format("%g %g %g %s %d %d", m.ax, m:f("w[1]"), m:f("header.stamp.sec"), tostring(m.ok), m.temp, m.ax == m.ax and 1 or 0)}
  else
    trigger{tag = string.format("%g %s %s %g %s", m.speed, m.name, tostring(m.on), m:f("p[1].x"), tostring(m.missing))}
  end
end`
	jtyp := &ingest.Type{MessageEncoding: ingest.EncodingJSON}
	got := feedTags(t, src,
		&Message{Topic: "imu", TS: base, Type: ptyp, Data: pdata},
		&Message{Topic: "calib", TS: base + 1, Type: jtyp, Data: []byte(`{"speed": 12.5, "name": "a\"b", "on": false, "p": [{"x": 1}, {"x": 2e3}]}`)})
	want := []string{"-9.5 1.5 1.7961696e+09 false -40 1", `12.5 a"b false 2000 nil`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("tags %q, want %q", got, want)
	}
	// a protobuf string field is not read by path; the error says so
	r, _ := load(t, "rule{name='t', topics='**'}\nfunction on_message(m) local v = m.label end", nil)
	r.Feed(&Message{Topic: "imu", TS: base, Type: ptyp, Data: pdata})
	if st := r.Status(); !st.Disabled || !strings.Contains(st.Why, "m.label: topic imu (demo.Imu)") || !strings.Contains(st.Why, "string field") {
		t.Fatalf("%+v", st)
	}
}

// TestFieldsTypeChange: a topic whose type changes (a new Type pointer)
// is read under the new layout from its first message.
func TestFieldsTypeChange(t *testing.T) {
	a := packedType()
	b := &ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: "demo.Speed2", Encoding: ingest.SchemaLayout, Data: []byte("u8 gear; f32le speed")}}
	d2 := append([]byte{4}, f32(7)...)
	got := feedTags(t, "rule{name='t', topics='**'}\nfunction on_message(m) trigger{tag = m.speed .. ' ' .. m.gear} end",
		&Message{Topic: "s", TS: base, Type: a, Data: packSpeed(3, 1, [4]int16{}, 0, 0, false, "", 0)},
		&Message{Topic: "s", TS: base + int64(time.Millisecond), Type: b, Data: d2},
		&Message{Topic: "s", TS: base + 2*int64(time.Millisecond), Type: a, Data: packSpeed(5, 2, [4]int16{}, 0, 0, false, "", 0)})
	if strings.Join(got, "|") != "3 1|7 4|5 2" {
		t.Fatalf("tags %q", got)
	}
}

// TestEventTimeDomain: a rule with time = "event" runs on the time its
// messages' event_time field holds: m.ts, now() and differences are that
// time, triggers still carry capture time; a message without the field
// (raw, too short) takes the producer's time. Declaring time = "event"
// without the field, or a unit that is none, is a declaration error.
func TestEventTimeDomain(t *testing.T) {
	typ := &ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: "demo.Imu", Encoding: ingest.SchemaLayout, Data: []byte("u64le t (ns); f32le ax")}}
	src := `rule{name='ev', topics='imu', time='event', event_time='t'}
function on_message(m) trigger{tag = string.format('%d %d', (m.ts - 1796169600000000000) / 1e6, now() - m.ts)} end`
	r, f := load(t, src, nil)
	msg := func(ev int64) []byte { return append(binary.LittleEndian.AppendUint64(nil, uint64(ev)), f32(1)...) }
	const ms = int64(time.Millisecond)
	r.Feed(&Message{Topic: "imu", TS: base + 500*ms, GenTS: base + 400*ms, Type: typ, Data: msg(base + 7*ms)})
	r.Feed(&Message{Topic: "imu", TS: base + 900*ms, GenTS: base + 800*ms, Type: typ, Data: msg(base + 3*ms)[:5]}) // too short: producer time
	r.Feed(&Message{Topic: "imu", TS: base + 1000*ms, GenTS: base + 950*ms, Data: f32(1)})                         // untyped: producer time
	mustNotBeDisabled(t, r)
	var tags []string
	var times []int64
	for _, tr := range f.list {
		tags, times = append(tags, tr.Tag), append(times, (tr.TimeNs-base)/int64(time.Millisecond))
	}
	if strings.Join(tags, "|") != "7 0|800 0|950 0" || !slices.Equal(times, []int64{500, 900, 1000}) {
		t.Fatalf("tags %q, trigger times %v", tags, times)
	}
	for _, c := range []struct{ src, want string }{
		{"rule{name='x', topics='imu', time='event'}\nfunction on_message(m) end", `time "event" needs the field`},
		{"rule{name='x', topics='imu', time='event', event_time='t', event_time_unit='fortnight'}\nfunction on_message(m) end", `event_time_unit: schema: no such field: event time unit "fortnight"`},
		{"rule{name='x', topics='imu', time='later'}\nfunction on_message(m) end", `want "producer", "capture" or "event"`},
	} {
		_, err := LoadSource("t.lua", c.src, Options{Logger: quiet})
		if !errors.Is(err, ErrDeclaration) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a declaration error saying %q", c.src, err, c.want)
		}
	}
}

// TestShippedPathNotANumber: threshold and hard_brake read by path skip a
// JSON message without the member and are disabled, with a reason naming
// the path and the topic, when the path holds a string or a bool.
func TestShippedPathNotANumber(t *testing.T) {
	for _, c := range []struct {
		rule  string
		extra map[string]string
		fires time.Duration // the one trigger on the JSON speeds below
	}{
		{"threshold", map[string]string{"high": "10"}, 0},           // 30 > 10
		{"hard_brake", map[string]string{}, 200 * time.Millisecond}, // 30 -> 20 in 0.2 s, over the gap
	} {
		params := func(path string) map[string]string {
			p := map[string]string{"topic": "vehicle/speed", "path": path}
			for k, v := range c.extra {
				p[k] = v
			}
			return p
		}
		for _, f := range []struct{ path, want string }{
			{"note", `m:num("note"): topic vehicle/speed: the field holds a string, not a number`},
			{"brake", `m:num("brake"): topic vehicle/speed: the field holds a boolean, not a number`},
		} {
			r, err := LoadShipped(c.rule, Options{Logger: quiet, Params: params(f.path)})
			if err != nil {
				t.Fatal(err)
			}
			r.Feed(&Message{Topic: "vehicle/speed", TS: base, Type: packedType(), Data: packSpeed(20, 3, [4]int16{}, 0, 0, true, "12", 0)})
			if st := r.Status(); !st.Disabled || !strings.Contains(st.Why, f.want) || !strings.Contains(st.Why, "rules/"+c.rule+".lua") {
				t.Errorf("%s path=%s: status %+v, want disabled with %q", c.rule, f.path, st, f.want)
			}
			r.Close()
		}
		var fired []int64
		r, err := LoadShipped(c.rule, Options{Logger: quiet, Params: params("speed"),
			OnTrigger: func(tr Trigger) { fired = append(fired, tr.TimeNs) }})
		if err != nil {
			t.Fatal(err)
		}
		jtyp := &ingest.Type{MessageEncoding: ingest.EncodingJSON}
		for i, d := range []string{`{"speed": 30}`, `{"gear": 2}`, `{"speed": 20}`, `{"speed": 29}`, `{"speed": 5}`} {
			r.Feed(&Message{Topic: "vehicle/speed", TS: base + int64(i)*int64(100*time.Millisecond), Type: jtyp, Data: []byte(d)})
		}
		mustNotBeDisabled(t, r)
		if len(fired) != 1 || fired[0] != base+int64(c.fires) {
			t.Errorf("%s: triggers at %v, want one at base+%v", c.rule, fired, c.fires)
		}
		r.Close()
	}
}
