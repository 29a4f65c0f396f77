package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

// propLayout has every scalar type in both byte orders, arrays, padding,
// a char field, every string and bytes kind, and a nested struct alone
// and in an array.
const propLayout = `# every type the layout language has
struct vec { f32le x (m); f64be y (m); i16le k[2] }
u8 a_u8; i8 a_i8; bool a_bool
u16le a_u16le; u16be a_u16be; i16le a_i16le; i16be a_i16be
u32le a_u32le; u32be a_u32be; i32le a_i32le; i32be a_i32be
u64le a_u64le; u64be a_u64be; i64le a_i64le; i64be a_i64be
f32le a_f32le; f32be a_f32be; f64le a_f64le; f64be a_f64be
pad 3
u16be arr_u16[3]
f32le arr_f32[2]
i64le arr_i64[2]
char name[8]
str8 s8; str16le s16le; str16be s16be; str32le s32le; str32be s32be
bytes8 b8; bytes32be b32be
vec v
vec vs[2]
bool flags[3]
`

// propField is one leaf of a message as the test encoded it: its path and
// how its JSON must read.
type propField struct {
	path string
	kind byte // 'i' integer, 'u' unsigned, 'f' float32, 'd' float64, 's' string, 'b' bytes, 't' bool
	i    int64
	u    uint64
	f    float64
	s    string
}

// propMessage encodes random values for propLayout the way a C producer
// lays them out, and returns the bytes and the leaves.
func propMessage(r *rand.Rand) ([]byte, []propField) {
	var b []byte
	var fs []propField
	le, be := binary.LittleEndian, binary.BigEndian
	pick := func(bits uint) uint64 { return r.Uint64() >> (64 - bits) }
	signed := func(bits uint) int64 { return int64(pick(bits)<<(64-bits)) >> (64 - bits) }
	uint_ := func(path string, bits uint, big bool) {
		v := pick(bits)
		switch bits {
		case 8:
			b = append(b, byte(v))
		case 16:
			b = map[bool]func([]byte, uint16) []byte{false: le.AppendUint16, true: be.AppendUint16}[big](b, uint16(v))
		case 32:
			b = map[bool]func([]byte, uint32) []byte{false: le.AppendUint32, true: be.AppendUint32}[big](b, uint32(v))
		case 64:
			b = map[bool]func([]byte, uint64) []byte{false: le.AppendUint64, true: be.AppendUint64}[big](b, v)
		}
		fs = append(fs, propField{path: path, kind: 'u', u: v})
	}
	int_ := func(path string, bits uint, big bool) {
		v := signed(bits)
		switch bits {
		case 8:
			b = append(b, byte(v))
		case 16:
			b = map[bool]func([]byte, uint16) []byte{false: le.AppendUint16, true: be.AppendUint16}[big](b, uint16(v))
		case 32:
			b = map[bool]func([]byte, uint32) []byte{false: le.AppendUint32, true: be.AppendUint32}[big](b, uint32(v))
		case 64:
			b = map[bool]func([]byte, uint64) []byte{false: le.AppendUint64, true: be.AppendUint64}[big](b, uint64(v))
		}
		fs = append(fs, propField{path: path, kind: 'i', i: v})
	}
	f32 := func(path string, big bool) {
		v := float32((r.Float64()*2 - 1) * math.Pow(10, float64(r.IntN(12)-6)))
		b = map[bool]func([]byte, uint32) []byte{false: le.AppendUint32, true: be.AppendUint32}[big](b, math.Float32bits(v))
		fs = append(fs, propField{path: path, kind: 'f', f: float64(v)})
	}
	f64 := func(path string, big bool) {
		v := (r.Float64()*2 - 1) * math.Pow(10, float64(r.IntN(40)-20))
		b = map[bool]func([]byte, uint64) []byte{false: le.AppendUint64, true: be.AppendUint64}[big](b, math.Float64bits(v))
		fs = append(fs, propField{path: path, kind: 'd', f: v})
	}
	bool_ := func(path string) {
		v := byte(r.IntN(3)) * byte(1+r.IntN(100)) // 0, or any non-zero byte: true
		b = append(b, v)
		fs = append(fs, propField{path: path, kind: 't', u: uint64(min(v, 1))})
	}
	text := func(max int) string {
		const alphabet = "abcXYZ 09_-é€😀\"\\/\t"
		rs := []rune(alphabet)
		var sb strings.Builder
		for sb.Len() < max {
			c := string(rs[r.IntN(len(rs))])
			if sb.Len()+len(c) > max {
				break
			}
			sb.WriteString(c)
		}
		return sb.String()
	}
	str := func(path string, lenBytes int, big bool, isBytes bool) {
		var v string
		if isBytes {
			raw := make([]byte, r.IntN(20))
			for i := range raw {
				raw[i] = byte(r.Uint32())
			}
			v = string(raw)
		} else {
			v = text(r.IntN(30))
		}
		switch lenBytes {
		case 1:
			b = append(b, byte(len(v)))
		case 2:
			b = map[bool]func([]byte, uint16) []byte{false: le.AppendUint16, true: be.AppendUint16}[big](b, uint16(len(v)))
		case 4:
			b = map[bool]func([]byte, uint32) []byte{false: le.AppendUint32, true: be.AppendUint32}[big](b, uint32(len(v)))
		}
		b = append(b, v...)
		if isBytes {
			fs = append(fs, propField{path: path, kind: 'b', s: base64.StdEncoding.EncodeToString([]byte(v))})
		} else {
			fs = append(fs, propField{path: path, kind: 's', s: v})
		}
	}
	vec := func(path string) {
		f32(path+".x", false)
		f64(path+".y", true)
		int_(path+".k[0]", 16, false)
		int_(path+".k[1]", 16, false)
	}

	uint_("a_u8", 8, false)
	int_("a_i8", 8, false)
	bool_("a_bool")
	uint_("a_u16le", 16, false)
	uint_("a_u16be", 16, true)
	int_("a_i16le", 16, false)
	int_("a_i16be", 16, true)
	uint_("a_u32le", 32, false)
	uint_("a_u32be", 32, true)
	int_("a_i32le", 32, false)
	int_("a_i32be", 32, true)
	uint_("a_u64le", 64, false)
	uint_("a_u64be", 64, true)
	int_("a_i64le", 64, false)
	int_("a_i64be", 64, true)
	f32("a_f32le", false)
	f32("a_f32be", true)
	f64("a_f64le", false)
	f64("a_f64be", true)
	b = append(b, byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())) // pad 3: anything
	for i := range 3 {
		uint_(fmt.Sprintf("arr_u16[%d]", i), 16, true)
	}
	for i := range 2 {
		f32(fmt.Sprintf("arr_f32[%d]", i), false)
	}
	for i := range 2 {
		int_(fmt.Sprintf("arr_i64[%d]", i), 64, false)
	}
	name := text(r.IntN(9)) // char[8]: up to 8 bytes, NUL-padded
	b = append(b, name...)
	b = append(b, make([]byte, 8-len(name))...)
	fs = append(fs, propField{path: "name", kind: 's', s: name})
	str("s8", 1, false, false)
	str("s16le", 2, false, false)
	str("s16be", 2, true, false)
	str("s32le", 4, false, false)
	str("s32be", 4, true, false)
	str("b8", 1, false, true)
	str("b32be", 4, true, true)
	vec("v")
	vec("vs[0]")
	vec("vs[1]")
	for i := range 3 {
		bool_(fmt.Sprintf("flags[%d]", i))
	}
	return b, fs
}

// checkProp compares one decoded message (JSON) with the leaves encoded:
// exactly for Go and cat (integers digit for digit, 64-bit ones too; f32
// and f64 to the bit), or as JSON.parse reads it (exact: false; every
// number a double, so a 64-bit integer is compared with its nearest
// double).
func checkProp(t *testing.T, what string, doc []byte, fs []propField, exact bool) {
	t.Helper()
	for _, f := range fs {
		p, err := schema.ParsePath(f.path)
		if err != nil {
			t.Fatal(err)
		}
		tok, ok := p.LookupJSON(doc)
		if !ok {
			t.Fatalf("%s: %s missing in %s", what, f.path, doc)
		}
		bad := false
		num := func() float64 {
			v, err := strconv.ParseFloat(string(tok), 64)
			bad = bad || err != nil
			return v
		}
		switch f.kind {
		case 'i':
			if exact {
				bad = string(tok) != strconv.FormatInt(f.i, 10)
			} else {
				bad = num() != float64(f.i)
			}
		case 'u':
			if exact {
				bad = string(tok) != strconv.FormatUint(f.u, 10)
			} else {
				bad = num() != float64(f.u)
			}
		case 'f':
			bad = float32(num()) != float32(f.f)
		case 'd':
			bad = num() != f.f
		case 't':
			bad = string(tok) != map[uint64]string{0: "false", 1: "true"}[f.u]
		case 's', 'b':
			var s string
			bad = json.Unmarshal(tok, &s) != nil || s != f.s
		}
		if bad {
			t.Fatalf("%s: %s is %s, encoded %+v", what, f.path, tok, f)
		}
	}
}

// TestLayoutPropertyEverywhere: messages of a layout with every scalar
// type, arrays, padding, a char field, strings and bytes and nested structs,
// holding random values encoded here as a C producer would, decode to
// those values in Go (schema), in cat --decode of the pack dump and of its
// MCAP export, and (transcoded to JSON in the MCAP export) in JSON.parse
// as Foxglove reads them (decode.mjs).
func TestLayoutPropertyEverywhere(t *testing.T) {
	const n = 60
	typ := ingest.Packed("edr.test.Every", propLayout)
	l, err := schema.ParseLayout([]byte(propLayout))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(16, 7))
	dir := t.TempDir()
	in := filepath.Join(dir, "every.pack")
	w, err := pack.Create(in, pack.WriterOptions{Writer: "property test"})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]propField
	for i := range n {
		msg, fs := propMessage(r)
		// Go: the layout's own decoder
		js, err := l.AppendJSON(nil, msg)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		checkProp(t, fmt.Sprintf("Go, message %d", i), js, fs, true)
		ts := t0 + int64(i)*1e6
		if err := w.SetTopicType("every", "", typ, ts); err != nil {
			t.Fatal(err)
		}
		if err := w.Add("every", "", nil, ts, ts, msg); err != nil {
			t.Fatal(err)
		}
		want = append(want, fs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mc := filepath.Join(dir, "every.mcap")
	if code, out, errs := runBin(t, "export", "--format", "mcap", in, "-o", mc); code != 0 {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}
	for _, file := range []string{in, mc} {
		code, out, errs := runBin(t, "cat", file, "--decode")
		if code != 0 || errs != "" {
			t.Fatalf("cat --decode %s: %d %s", file, code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != n {
			t.Fatalf("cat --decode %s: %d lines", file, len(lines))
		}
		for i, line := range lines {
			var d struct{ Data json.RawMessage }
			json.Unmarshal([]byte(line), &d)
			checkProp(t, fmt.Sprintf("cat --decode %s, message %d", filepath.Base(file), i), d.Data, want[i], true)
		}
	}
	node := nodeDecoder(t)
	tp := nodeDecode(t, node, mc)[mc]["every"]
	if tp == nil || tp.MessageEncoding != "json" || len(tp.Decoded) != n {
		t.Fatalf("node: %+v", tp)
	}
	for i, d := range tp.Decoded {
		checkProp(t, fmt.Sprintf("JSON.parse, message %d", i), d, want[i], false)
	}
}
