package schema

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseLayoutErrors(t *testing.T) {
	f := func(src, want string, sentinel error) {
		t.Helper()
		l, err := ParseLayout([]byte(src))
		var le *LayoutError
		if l != nil || !errors.As(err, &le) || !errors.Is(err, sentinel) || err.Error() != want {
			t.Errorf("ParseLayout(%q):\n got %v (%T)\nwant %s (wrapping %v)", src, err, err, want, sentinel)
		}
	}
	f("f32le speed\nu8 gear\nstruct p { f33le x }", "layout:3:12: unknown type f33le", ErrInvalid)
	f("f32 speed", "layout:1:1: f32 needs a byte order: f32le or f32be", ErrInvalid)
	f("u8le gear", "layout:1:1: u8le has no byte order: write u8", ErrInvalid)
	f("str note", "layout:1:1: str needs a length prefix: str8, str16le, str32be...", ErrInvalid)
	f("pose p\nstruct pose { f64le x }", "layout:1:1: unknown type pose (a struct is declared before it is used)", ErrInvalid)
	f("", "layout:1:1: no fields", ErrInvalid)
	f("# only a comment\n", "layout:2:1: no fields", ErrInvalid)
	f("u8 a; u8 a", "layout:1:10: field a declared twice", ErrInvalid)
	f("struct s { u8 a }\nstruct s { u8 b }", "layout:2:8: struct s declared twice", ErrInvalid)
	f("struct u8 { u8 a }", "layout:1:8: u8 is a built-in type; a struct needs another name", ErrInvalid)
	f("struct a { u8 x\n struct b { u8 y } }", "layout:2:2: a struct is declared at the top level, not inside another", ErrInvalid)
	f("struct e { }", "layout:1:12: struct e has no fields", ErrInvalid)
	f("struct e { u8 a", "layout:1:1: struct e is not closed with }", ErrInvalid)
	f("struct { u8 a }", `layout:1:8: want a struct name after struct, got "{"`, ErrInvalid)
	f("u8 a b", `layout:1:6: want ; or a new line after a field, got "b"`, ErrInvalid)
	f("u8 a[0]", "layout:1:6: array length must be at least 1", ErrInvalid)
	f("u8 a[x]", `layout:1:6: want the array length (a decimal number), got "x"`, ErrInvalid)
	f("u8 a[0x10]", `layout:1:6: bad array length "0x10": want decimal digits`, ErrInvalid)
	f("u8 a[4", "layout:1:7: want ] after the array length, got end of layout", ErrInvalid)
	f("char name", "layout:1:6: char needs a length: char name[N]", ErrInvalid)
	f("pad", "layout:1:4: want the pad size (a decimal number), got end of layout", ErrInvalid)
	f("u8 a (m/s", "layout:1:6: unit not closed with ) on this line", ErrInvalid)
	f("u8 a ()", `layout:1:6: bad unit "": 1 to 32 bytes of UTF-8 without tabs, quotes, backslashes, # or ;`, ErrInvalid)
	f("str8 s (m)", "layout:1:8: a unit needs a numeric field; s is str8", ErrInvalid)
	f("bool b (m)", "layout:1:8: a unit needs a numeric field; b is bool", ErrInvalid)
	f("u8 a\n  é", `layout:2:3: want a field or a struct, got "é"`, ErrInvalid)
	f("u8 a\n\xff", "layout:2:1: want a field or a struct, got \"byte 0xff\"", ErrInvalid)
	f("u8 a[4611686018427387904]", "layout:1:6: array length 4611686018427387904 exceeds 16777216 (MaxLayoutSize)", ErrLimit)
	f("u64le a[16777216]", "layout:1:9: array a of 16777216 x 8 bytes exceeds 16777216 bytes (MaxLayoutSize)", ErrLimit)
	f("struct s { u64le x[2097152] }\ns y[2]", "layout:2:5: array y of 2 x 16777216 bytes exceeds 16777216 bytes (MaxLayoutSize)", ErrLimit)
	f("u8 a[16777216]\nu8 b", "layout:2:1: field b: the layout exceeds 16777216 bytes (MaxLayoutSize)", ErrLimit)
	f("pad 16777217", "layout:1:5: pad size 16777217 exceeds 16777216 (MaxLayoutSize)", ErrLimit)
}

// TestLayoutHostile: layouts built to cost a lot fail with ErrLimit or
// ErrTooLarge, naming the cause, in bounded time.
func TestLayoutHostile(t *testing.T) {
	doubling := func(levels int) string { // 2^levels leaf fields in a small source
		var b strings.Builder
		b.WriteString("struct s0 { u8 a; u8 b }\n")
		for i := 1; i < levels; i++ {
			fmt.Fprintf(&b, "struct s%d { s%d a; s%d b }\n", i, i-1, i-1)
		}
		fmt.Fprintf(&b, "s%d top\n", levels-1)
		return b.String()
	}
	flat := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "u8 f%d\n", i)
		}
		return b.String()
	}
	deep := func(n int) string {
		var b strings.Builder
		b.WriteString("struct s0 { u8 a }\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "struct s%d { s%d a }\n", i, i-1)
		}
		fmt.Fprintf(&b, "s%d top\n", n-1)
		return b.String()
	}
	cases := []struct {
		name, src string
		want      error
		msg       string
	}{
		{"10^6 fields by nesting", doubling(20), ErrLimit, "more than 65536 leaf fields (MaxFields)"},
		{"10^6 fields flat", flat(1_000_000), ErrTooLarge, "limit 4194304 (MaxSchemaSize)"},
		{"350k fields flat", flat(350_000), ErrLimit, "layout:65537:1: more than 65536 field declarations (MaxFields)"},
		{"deep nesting", deep(100), ErrLimit, "structs nest 65 deep (MaxDepth 64)"},
		{"2^62 array", "u8 a[4611686018427387904]", ErrLimit, "exceeds 16777216 (MaxLayoutSize)"},
		{"array of arrays", "struct s { u8 a[16777216] }\ns b[16777216]", ErrLimit, "exceeds 16777216 bytes (MaxLayoutSize)"},
		{"a 4006-byte name", "str8 " + strings.Repeat("I", 4006), ErrLimit, "a path to its fields is 4006 bytes, more than 1024"},
		{"a long path by nesting", "struct s { u8 " + strings.Repeat("x", 1000) + "[100] }\ns " + strings.Repeat("y", 17) + "[2]",
			ErrLimit, "layout:2:1: field yyyyyyyyyyyyyyyyy: a path to its fields is 1025 bytes, more than 1024"},
	}
	for _, c := range cases {
		start := time.Now()
		l, err := ParseLayout([]byte(c.src))
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("%s: took %v", c.name, el)
		}
		if l != nil || !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %v saying %q", c.name, err, c.want, c.msg)
		}
	}
	// Just inside the limits works: 2^16 leaves, 64 levels (the message
	// and 63 structs).
	if l, err := ParseLayout([]byte(doubling(16))); err != nil || len(l.Fields()) != 1<<16 {
		t.Errorf("2^16 leaves: %v", err)
	}
	if _, err := ParseLayout([]byte(deep(63))); err != nil {
		t.Errorf("64 levels: %v", err)
	}
	// The longest path a layout may declare is one every accessor takes:
	// y[1].xx…x[99], 1024 bytes.
	long := "struct s { u8 " + strings.Repeat("x", 1000) + "[100] }\ns " + strings.Repeat("y", 16) + "[2]"
	l, err := ParseLayout([]byte(long))
	if err != nil {
		t.Fatalf("a 1024-byte path: %v", err)
	}
	p := strings.Repeat("y", 16) + "[1]." + strings.Repeat("x", 1000) + "[99]"
	if a, err := l.Accessor(p); len(p) != 1024 || err != nil {
		t.Errorf("accessor for the %d-byte path: %v", len(p), err)
	} else if v, ok := a.Uint64(bytes.Repeat([]byte{7}, 200)); !ok || v != 7 {
		t.Errorf("the %d-byte path reads %d, %v", len(p), v, ok)
	}
}

// example is the layout of docs/schemas.md.
const example = `# vehicle.State, sent by the body ECU at 100 Hz
struct pose { f64le x (m); f64le y (m); f32le yaw (rad) }

f32le speed (m/s); u8 gear; i16be wheel[4] (rpm); pad 2
str8 note        // length-prefixed: everything after it moves
pose p
u64le t (ns)
char vin[8]; bool ok
`

func exampleMessage() []byte {
	le, be := binary.LittleEndian, binary.BigEndian
	m := le.AppendUint32(nil, math.Float32bits(12.5))
	m = append(m, 3)
	for _, w := range []int16{1200, -1, 3, -32768} {
		m = be.AppendUint16(m, uint16(w))
	}
	m = append(m, 0xEE, 0xEE) // pad
	m = append(m, 5, 'h', 'e', 'l', 'l', 'o')
	m = le.AppendUint64(m, math.Float64bits(1.5))
	m = le.AppendUint64(m, math.Float64bits(-2.25))
	m = le.AppendUint32(m, math.Float32bits(float32(math.Inf(1))))
	m = le.AppendUint64(m, 1_796_169_600_123_456_789)
	m = append(m, "WVW1\x00\x00\x00\x00"...)
	return append(m, 2)
}

func TestLayoutExample(t *testing.T) {
	l := MustParseLayout(example)
	msg := exampleMessage()
	js, err := l.AppendJSON(nil, msg)
	want := `{"speed":12.5,"gear":3,"wheel":[1200,-1,3,-32768],"note":"hello","p":{"x":1.5,"y":-2.25,"yaw":"Infinity"},"t":1796169600123456789,"vin":"WVW1","ok":true}`
	if err != nil || string(js) != want {
		t.Errorf("AppendJSON:\n got %s %v\nwant %s", js, err, want)
	}
	var got []string
	if err := l.Numeric(msg, func(p []byte, v float64) { got = append(got, fmt.Sprintf("%s=%g", p, v)) }); err != nil {
		t.Fatal(err)
	}
	wantN := "speed=12.5 gear=3 wheel[0]=1200 wheel[1]=-1 wheel[2]=3 wheel[3]=-32768 p.x=1.5 p.y=-2.25 p.yaw=+Inf t=1.7961696001234568e+18 ok=1"
	if strings.Join(got, " ") != wantN {
		t.Errorf("Numeric:\n got %s\nwant %s", strings.Join(got, " "), wantN)
	}
	var fields []string
	for _, f := range l.Fields() {
		fields = append(fields, fmt.Sprintf("%s:%s:%s:%s:%v", f.Path, f.Kind, f.Type, f.Unit, f.Dims))
	}
	wantF := "speed:float:f32le:m/s:[] gear:uint:u8::[] wheel[]:int:i16be:rpm:[4] note:string:str8::[] " +
		"p.x:float:f64le:m:[] p.y:float:f64le:m:[] p.yaw:float:f32le:rad:[] t:uint:u64le:ns:[] vin:string:char[8]::[] ok:bool:bool::[]"
	if strings.Join(fields, " ") != wantF {
		t.Errorf("Fields:\n got %s\nwant %s", strings.Join(fields, " "), wantF)
	}
	if l.Fixed() || l.MinSize() != 4+1+8+2+1+20+8+8+1 {
		t.Errorf("Fixed %v MinSize %d", l.Fixed(), l.MinSize())
	}
	var schemaDoc map[string]any
	if err := json.Unmarshal(l.JSONSchema("vehicle.State"), &schemaDoc); err != nil || schemaDoc["title"] != "vehicle.State" ||
		schemaDoc["$schema"] != JSONDialect {
		t.Errorf("JSONSchema: %v %v", err, schemaDoc)
	}
}

func TestAccessor(t *testing.T) {
	l := MustParseLayout(example)
	msg := exampleMessage()
	f := func(path string, want float64, wantOK bool) {
		t.Helper()
		a, err := l.Accessor(path)
		if err != nil {
			t.Fatalf("Accessor(%q): %v", path, err)
		}
		if v, ok := a.Float64(msg); ok != wantOK || ok && v != want {
			t.Errorf("%s: Float64 = %v %v, want %v %v", path, v, ok, want, wantOK)
		}
	}
	f("speed", 12.5, true)
	f("wheel[3]", -32768, true)
	f("p.x", 1.5, true)   // after the string: a plan
	f("p.y", -2.25, true) // after the string
	f("t", 1796169600123456789, true)
	f("ok", 1, true)
	f("note", 0, false) // text is not a number
	f("vin", 0, false)

	a, _ := l.Accessor("t")
	if v, ok := a.Int64(msg); !ok || v != 1_796_169_600_123_456_789 {
		t.Errorf("t: Int64 = %d %v", v, ok) // exact, unlike Float64
	}
	for path, want := range map[string]string{"note": "hello", "vin": "WVW1"} {
		a, _ := l.Accessor(path)
		if b, ok := a.Bytes(msg); !ok || string(b) != want {
			t.Errorf("%s: Bytes = %q %v", path, b, ok)
		}
	}
	// A longer string moves the fields after it.
	long := append(append([]byte(nil), msg[:15]...), 7, 'h', 'e', 'l', 'l', 'o', '!', '!')
	long = append(long, msg[21:]...)
	a, _ = l.Accessor("p.y")
	if v, ok := a.Float64(long); !ok || v != -2.25 {
		t.Errorf("p.y after a longer string: %v %v", v, ok)
	}
	// Short messages are false, never a panic, at every length.
	for _, path := range []string{"speed", "wheel[3]", "note", "p.x", "p.yaw", "t", "vin", "ok"} {
		a, _ := l.Accessor(path)
		for n := range len(msg) {
			a.Float64(msg[:n])
			a.Int64(msg[:n])
			a.Uint64(msg[:n])
			a.Bytes(msg[:n])
		}
	}
	a, _ = l.Accessor("ok")
	if _, ok := a.Float64(msg[:len(msg)-1]); ok {
		t.Error("ok read from a message one byte short")
	}
	// A length prefix pointing past the end is short.
	bad := append([]byte(nil), msg...)
	bad[15] = 200
	a, _ = l.Accessor("p.x")
	if _, ok := a.Float64(bad); ok {
		t.Error("p.x read behind a string longer than the message")
	}
	if _, err := l.AppendJSON(nil, bad); err != ErrShortMessage {
		t.Errorf("AppendJSON behind a long string: %v", err)
	}
}

func TestAccessorErrors(t *testing.T) {
	l := MustParseLayout(example)
	for path, want := range map[string]string{
		"nope":        `schema: no such field: "nope": no field nope in the message`,
		"p.z":         `schema: no such field: "p.z": no field z in p (struct pose)`,
		"p":           `schema: no such field: "p" is a struct pose; name one of its fields`,
		"wheel":       `schema: no such field: "wheel" is an array of 4; index it: wheel[i]`,
		"wheel[4]":    `schema: no such field: "wheel[4]": index 4 out of range: wheel has 4 elements`,
		"wheel.x":     `schema: no such field: "wheel.x": wheel is an array; index it: wheel[i]`,
		"speed.x":     `schema: no such field: "speed.x": speed is a f32le, it has no fields`,
		"p[0]":        `schema: no such field: "p[0]": p is a struct, not an array`,
		"":            `schema: no such field: empty path`,
		"a..b":        `schema: no such field: path "a..b": want a field name at byte 2`,
		"a[":          `schema: no such field: path "a[": bad index at byte 1`,
		"a b":         `schema: no such field: path "a b": want . or [ at byte 1`,
		"[\"x\"":      `schema: no such field: path "[\"x\"": bad ["name"] at byte 0`,
		"wheel[-1]":   `schema: no such field: path "wheel[-1]": bad index at byte 5`,
		"1abc":        `schema: no such field: path "1abc": want a field name at byte 0`,
		"[\"speed\"]": "",
	} {
		_, err := l.Accessor(path)
		if want == "" && err == nil {
			continue
		}
		if !errors.Is(err, ErrNoField) || err.Error() != want {
			t.Errorf("Accessor(%q):\n got %v\nwant %s", path, err, want)
		}
	}
}

func TestPaths(t *testing.T) {
	for _, p := range []string{"a", "a.b", "a[0]", "a[12].b_2.c", `["a b"]`, `x["a.b"][3]`, `m["\"q\""]`, `["ü"].z`} {
		elems, err := parsePath(p)
		if err != nil {
			t.Errorf("parsePath(%q): %v", p, err)
			continue
		}
		if got := pathString(elems); got != p {
			t.Errorf("parsePath(%q) formats back as %q", p, got)
		}
	}
	if elems, _ := parsePath(`["b"]`); pathString(elems) != "b" {
		t.Errorf(`["b"] is b`)
	}
}
