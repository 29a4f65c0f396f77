package step_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/step"
)

// stateLayout uses every kind of member of the layout language.
const stateLayout = `# vehicle.State
struct pose { f64le x (m); f64le y (m); f32le yaw (rad) }
f32le speed (m/s); u8 gear; i16be wheel[4] (rpm); pad 2
str8 note
pose p
u64le t (ns)
char vin[8]; bool ok
bytes16le blob
pose ps[2]
i8 trim
`

type Pose struct {
	X, Y float64
	Yaw  float32
}

type State struct {
	Speed float32
	Gear  int // u8 into a wider signed integer
	Wheel [4]int16
	Note  string
	P     Pose
	T     uint64
	VIN   string
	OK    bool
	Blob  []byte
	Ps    []Pose
	Fine  int64  `edr:"trim"`
	Local string `edr:"-"` // not in the layout
}

func stateCodec(t *testing.T) step.Codec[State] {
	t.Helper()
	c, err := step.Packed[State]("vehicle.State", stateLayout)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPackedRoundTrip: a value encodes to the bytes the layout describes
// (read back by field name with the schema room's decoder, as cat
// --decode reads them) and decodes to the same value.
func TestPackedRoundTrip(t *testing.T) {
	c := stateCodec(t)
	if got := c.Type(); !got.Equal(ingest.Packed("vehicle.State", stateLayout)) {
		t.Fatalf("type %v", got)
	}
	v := State{Speed: 12.5, Gear: 3, Wheel: [4]int16{1200, -1, 3, -32768}, Note: "hello", P: Pose{1.5, -2.25, 0.5},
		T: 1796169600123456789, VIN: "WVW1", OK: true, Blob: []byte{1, 2, 3}, Ps: []Pose{{1, 2, 3}, {4, 5, 6}}, Fine: -7, Local: "kept out"}
	msg, err := c.Append([]byte("prefix"), v)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg[:6]) != "prefix" {
		t.Fatal("Append does not append")
	}
	msg = msg[6:]
	l := schema.MustParseLayout(stateLayout)
	js, err := l.AppendJSON(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"speed":12.5,"gear":3,"wheel":[1200,-1,3,-32768],"note":"hello","p":{"x":1.5,"y":-2.25,"yaw":0.5},"t":1796169600123456789,"vin":"WVW1","ok":true,"blob":"AQID","ps":[{"x":1,"y":2,"yaw":3},{"x":4,"y":5,"yaw":6}],"trim":-7}`
	if string(js) != want {
		t.Fatalf("decoded by the layout:\n%s\nwant\n%s", js, want)
	}
	var back State
	back.Local = "mine"
	if err := c.Decode(msg, &back); err != nil {
		t.Fatal(err)
	}
	v.Local = "mine" // a field left out stays as it was
	if !reflect.DeepEqual(back, v) {
		t.Fatalf("decoded %+v\nwant    %+v", back, v)
	}
	// every shorter message is refused, never a panic
	for n := range len(msg) {
		var s State
		if err := c.Decode(msg[:n], &s); !errors.Is(err, step.ErrCodec) {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
}

// TestPackedBindErrors: a layout that does not fit the Go type is an
// error naming the member and the field, never a silent zero.
func TestPackedBindErrors(t *testing.T) {
	f := func(name, layout string, build func(string) error, want string) {
		t.Helper()
		err := build(layout)
		if !errors.Is(err, step.ErrCodec) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	type AB struct{ A, B float32 }
	ab := func(l string) error { _, err := step.Packed[AB]("t", l); return err }
	f("typo", "f32le a; f32le c", ab, `c: step_test.AB has no field for layout member "c"`)
	f("unbound", "f32le a", ab, "field B of step_test.AB is not in the layout")
	f("float size", "f32le a; f64le b", ab, "b: layout type f64le binds to float64, not float32")
	f("bad layout", "f33le a", ab, "unknown type f33le")
	type Small struct{ A uint8 }
	f("narrow", "u16le a", func(l string) error { _, err := step.Packed[Small]("t", l); return err }, "a: layout type u16le binds to an unsigned integer of 16 bits or more")
	type Signed struct{ A int16 }
	f("sign", "u16le a", func(l string) error { _, err := step.Packed[Signed]("t", l); return err }, "or a wider signed one")
	type Two struct {
		Speed float32
		SPEED float32
	}
	f("ambiguous", "f32le speed", func(l string) error { _, err := step.Packed[Two]("t", l); return err }, "fields Speed and SPEED both match")
	type Hidden struct {
		a float32
	}
	_ = Hidden{}.a
	f("unexported", "f32le a", func(l string) error { _, err := step.Packed[Hidden]("t", l); return err }, "has no field for layout member")
	f("not a struct", "f32le a", func(l string) error { _, err := step.Packed[float32]("t", l); return err }, "binds to a struct, not float32")
	type Arr struct{ W [3]int16 }
	f("array length", "i16le w[4]", func(l string) error { _, err := step.Packed[Arr]("t", l); return err }, "binds to [4]E or []E")
	type Chr struct{ V [4]byte }
	f("char length", "char v[8]", func(l string) error { _, err := step.Packed[Chr]("t", l); return err }, "binds to string or [8]byte")
}

// TestPackedEncodeErrors: a value the layout cannot hold is refused with
// the field named, and dst is left as it was.
func TestPackedEncodeErrors(t *testing.T) {
	c := stateCodec(t)
	ok := State{Ps: make([]Pose, 2)}
	for _, tc := range []struct {
		name string
		mod  func(*State)
		want string
	}{
		{"u8 range", func(s *State) { s.Gear = 256 }, "gear: 256 does not fit a 8-bit unsigned integer"},
		{"negative", func(s *State) { s.Gear = -1 }, "gear: -1 does not fit a 8-bit unsigned integer"},
		{"i8 range", func(s *State) { s.Fine = 128 }, "trim: 128 does not fit a 8-bit signed integer"},
		{"char", func(s *State) { s.VIN = "WVWZZZ1JZXW000001" }, "vin: 17 bytes do not fit char[8]"},
		{"str8", func(s *State) { s.Note = strings.Repeat("x", 256) }, "note: 256 bytes exceed the 255"},
		{"slice", func(s *State) { s.Ps = s.Ps[:1] }, "ps: 1 elements, the layout has 2"},
	} {
		v := ok
		v.Ps = append([]Pose(nil), ok.Ps...)
		tc.mod(&v)
		dst, err := c.Append([]byte("x"), v)
		if !errors.Is(err, step.ErrCodec) || !strings.Contains(err.Error(), tc.want) || string(dst) != "x" {
			t.Errorf("%s: %q, %v; want %q", tc.name, dst, err, tc.want)
		}
	}
	if _, err := c.Append(nil, ok); err != nil {
		t.Fatal(err)
	}
}

// TestJSONAndBytesCodecs: the JSON codec's type is json named as given;
// the Bytes codec's raw bytes.
func TestJSONAndBytesCodecs(t *testing.T) {
	c := step.JSON[Count]("test.Count")
	if typ := c.Type(); typ.MessageEncoding != "json" || typ.Schema.Name != "test.Count" || typ.Validate() != nil {
		t.Fatalf("type %+v", typ)
	}
	b, err := c.Append(nil, Count{N: 3, In: 0.5})
	if err != nil || string(b) != `{"n":3,"in":0.5}` {
		t.Fatalf("%s %v", b, err)
	}
	var back Count
	if err := c.Decode(b, &back); err != nil || back != (Count{3, 0.5}) {
		t.Fatal(back, err)
	}
	if err := c.Decode([]byte("{"), &back); err == nil {
		t.Fatal("bad JSON decoded")
	}
	r := step.Bytes("blob")
	if typ := r.Type(); !typ.Equal(ingest.Raw("blob")) {
		t.Fatalf("type %+v", typ)
	}
	src := []byte{1, 2}
	var got []byte
	r.Decode(src, &got)
	src[0] = 9
	if got[0] != 1 {
		t.Fatal("Bytes.Decode keeps the message")
	}
}

// TestProtobufLoop: a loop of protobuf messages records typed (its
// FileDescriptorSet decodes), replays, and a change is named by field.
func TestProtobufLoop(t *testing.T) {
	in, err := step.Protobuf(&wrapperspb.DoubleValue{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := step.Protobuf(&durationpb.Duration{})
	if err != nil {
		t.Fatal(err)
	}
	typ := out.Type()
	if typ.MessageEncoding != "protobuf" || typ.Schema.Name != "google.protobuf.Duration" {
		t.Fatalf("type %v", typ)
	}
	d, err := schema.NewDecoder(typ)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := out.Append(nil, durationpb.New(1500*time.Millisecond))
	if js, err := d.AppendJSON(nil, msg); err != nil || !strings.Contains(string(js), "1.500s") {
		t.Fatalf("decoded %s %v", js, err)
	}
	var back *durationpb.Duration
	if err := out.Decode(msg, &back); err != nil || !proto.Equal(back, durationpb.New(1500*time.Millisecond)) {
		t.Fatal(back, err)
	}

	loop := step.Loop[*wrapperspb.DoubleValue, *durationpb.Duration]{Name: "delay", In: in, Out: out}
	delay := func(scale float64) step.Func[*wrapperspb.DoubleValue, *durationpb.Duration] {
		return func(_ context.Context, v *wrapperspb.DoubleValue) (*durationpb.Duration, error) {
			return durationpb.New(time.Duration(v.GetValue() * scale * float64(time.Second))), nil
		}
	}
	path := filepath.Join(t.TempDir(), "pb.pack")
	rec, _ := step.Create(path, step.RecorderOptions{})
	f, err := step.Record(rec, loop, delay(1))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		f(context.Background(), wrapperspb.Double(float64(i)/8))
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := step.Replay(context.Background(), []string{path}, step.Options{}, step.Drive(loop, delay(1), step.DriveOptions{}))
	if err != nil || !res.OK() || res.Loops[0].Matched != 10 || res.Loops[0].Input != "delay/in" || res.Loops[0].Output != "delay/out" {
		t.Fatalf("%v\n%s", err, res)
	}
	res, err = step.Replay(context.Background(), []string{path}, step.Options{}, step.Drive(loop, delay(1.1), step.DriveOptions{}))
	if err != nil || res.OK() || !strings.Contains(res.String(), "delay/out step 2 (delay/out seq 1 at ") ||
		!strings.Contains(res.String(), "value nanos: expected 1.25e+08, got 1.375e+08") {
		t.Fatalf("%v\n%s", err, res)
	}
}
