package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// The property test builds a random layout as a model (gStruct / gNode),
// writes its source, encodes random values with encoding/binary as a C
// producer would, and checks that the package reads back what was encoded:
// Accessors by path, Numeric, AppendJSON parsed back with encoding/json,
// Fields, and the JSON Schema's Fields through the json decoder.

type gNode struct {
	kind string // scalar char str bytes pad struct array
	typ  string // the layout type name (scalars, strings)
	n    int    // char length, pad size, array length
	elem *gNode
	st   *gStruct
}

type gMember struct {
	name string
	node *gNode
	unit string
}

type gStruct struct {
	name    string
	members []gMember
}

var (
	gScalars = []string{"u8", "i8", "bool", "u16le", "u16be", "i16le", "i16be", "u32le", "u32be", "i32le", "i32be",
		"u64le", "u64be", "i64le", "i64be", "f32le", "f32be", "f64le", "f64be"}
	gStrings = []string{"str8", "str16le", "str16be", "str32le", "str32be", "bytes8", "bytes16le", "bytes16be", "bytes32le", "bytes32be"}
	gUnits   = []string{"m/s", "rpm", "°C", "m/s^2", "ns"}
)

func genLeaf(t *rapid.T, structs []*gStruct, label string) *gNode {
	switch rapid.IntRange(0, 9).Draw(t, label+"-kind") {
	case 0, 1, 2, 3, 4:
		return &gNode{kind: "scalar", typ: rapid.SampledFrom(gScalars).Draw(t, label+"-scalar")}
	case 5:
		return &gNode{kind: "char", n: rapid.IntRange(1, 8).Draw(t, label+"-charlen")}
	case 6:
		s := rapid.SampledFrom(gStrings).Draw(t, label+"-str")
		k := "str"
		if strings.HasPrefix(s, "bytes") {
			k = "bytes"
		}
		return &gNode{kind: k, typ: s}
	case 7:
		if len(structs) > 0 {
			return &gNode{kind: "struct", st: rapid.SampledFrom(structs).Draw(t, label+"-struct")}
		}
		return &gNode{kind: "scalar", typ: "u8"}
	case 8:
		return &gNode{kind: "pad", n: rapid.IntRange(1, 3).Draw(t, label+"-pad")}
	}
	elem := genLeaf(t, structs, label+"-elem")
	for elem.kind == "pad" || elem.kind == "char" || elem.kind == "array" {
		elem = genLeaf(t, structs, label+"-elem")
	}
	return &gNode{kind: "array", n: rapid.IntRange(1, 4).Draw(t, label+"-n"), elem: elem}
}

func genStruct(t *rapid.T, name string, structs []*gStruct, maxMembers int) *gStruct {
	st := &gStruct{name: name}
	n := rapid.IntRange(1, maxMembers).Draw(t, name+"-members")
	for i := range n {
		m := gMember{name: fmt.Sprintf("f%d", i), node: genLeaf(t, structs, fmt.Sprintf("%s.%d", name, i))}
		leaf := m.node
		if leaf.kind == "array" {
			leaf = leaf.elem
		}
		if leaf.kind == "scalar" && leaf.typ != "bool" && rapid.IntRange(0, 3).Draw(t, name+"-hasunit") == 0 {
			m.unit = rapid.SampledFrom(gUnits).Draw(t, name+"-unit")
		}
		st.members = append(st.members, m)
	}
	return st
}

func (st *gStruct) source(b *strings.Builder, t *rapid.T) {
	sep := func() string {
		return rapid.SampledFrom([]string{"; ", "\n", " # comment\n", " // note\n  "}).Draw(t, "sep")
	}
	if st.name != "" {
		fmt.Fprintf(b, "struct %s {%s", st.name, rapid.SampledFrom([]string{"", "\n", " "}).Draw(t, "open"))
	}
	for i, m := range st.members {
		if i > 0 {
			b.WriteString(sep())
		}
		nd := m.node
		switch nd.kind {
		case "pad":
			fmt.Fprintf(b, "pad %d", nd.n)
			continue
		case "char":
			fmt.Fprintf(b, "char %s[%d]", m.name, nd.n)
			continue
		case "array":
			fmt.Fprintf(b, "%s %s[%d]", nd.elem.typeName(), m.name, nd.n)
		default:
			fmt.Fprintf(b, "%s %s", nd.typeName(), m.name)
		}
		if m.unit != "" {
			fmt.Fprintf(b, " (%s)", m.unit)
		}
	}
	if st.name != "" {
		b.WriteString(rapid.SampledFrom([]string{"}", "\n}", "; }"}).Draw(t, "close"))
	}
	b.WriteString("\n")
}

func (nd *gNode) typeName() string {
	if nd.kind == "struct" {
		return nd.st.name
	}
	return nd.typ
}

// leaf is what the encoder wrote for one leaf field.
type leaf struct {
	path    string
	kind    Kind
	typ     string
	bits    uint64 // scalars: the raw bits
	text    []byte // char (trimmed), str, bytes
	numeric float64
}

type encoder struct {
	t      *rapid.T
	msg    []byte
	leaves []leaf
}

func (e *encoder) structValue(st *gStruct, path string) map[string]any {
	obj := map[string]any{}
	for _, m := range st.members {
		if m.node.kind == "pad" {
			e.msg = append(e.msg, bytes.Repeat([]byte{0xAA}, m.node.n)...)
			continue
		}
		obj[m.name] = e.value(m.node, string(appendPathKey([]byte(path), m.name)))
	}
	return obj
}

func (e *encoder) value(nd *gNode, path string) any {
	switch nd.kind {
	case "struct":
		return e.structValue(nd.st, path)
	case "array":
		arr := make([]any, nd.n)
		for i := range nd.n {
			arr[i] = e.value(nd.elem, path+"["+strconv.Itoa(i)+"]")
		}
		return arr
	case "char":
		raw := rapid.SliceOfN(rapid.Byte(), nd.n, nd.n).Draw(e.t, "char")
		e.msg = append(e.msg, raw...)
		if i := bytes.IndexByte(raw, 0); i >= 0 {
			raw = raw[:i]
		}
		e.leaves = append(e.leaves, leaf{path: path, kind: KindString, text: raw})
		return string([]rune(string(raw)))
	case "str", "bytes":
		raw := rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(e.t, "text")
		b := builtins[nd.typ]
		var order binary.AppendByteOrder = binary.LittleEndian
		if b.big {
			order = binary.BigEndian
		}
		switch b.size {
		case 1:
			e.msg = append(e.msg, byte(len(raw)))
		case 2:
			e.msg = order.AppendUint16(e.msg, uint16(len(raw)))
		case 4:
			e.msg = order.AppendUint32(e.msg, uint32(len(raw)))
		}
		e.msg = append(e.msg, raw...)
		if nd.kind == "bytes" {
			e.leaves = append(e.leaves, leaf{path: path, kind: KindBytes, text: raw})
			return raw
		}
		e.leaves = append(e.leaves, leaf{path: path, kind: KindString, text: raw})
		return string([]rune(string(raw)))
	}
	b := builtins[nd.typ]
	size := primSize[b.prim]
	bits := rapid.Uint64().Draw(e.t, "bits")
	switch rapid.IntRange(0, 4).Draw(e.t, "special") { // small values and edges are more telling
	case 0:
		bits = uint64(rapid.IntRange(-3, 3).Draw(e.t, "small"))
	case 1:
		bits = 1 << (8*size - 1) // the sign bit: most negative, -0.0
	}
	if size < 8 {
		bits &= 1<<(8*size) - 1
	}
	if b.prim == primF64 && rapid.IntRange(0, 3).Draw(e.t, "nicefloat") == 0 {
		bits = math.Float64bits(rapid.Float64().Draw(e.t, "f64"))
	}
	var order binary.AppendByteOrder = binary.LittleEndian
	if b.big {
		order = binary.BigEndian
	}
	switch size {
	case 1:
		e.msg = append(e.msg, byte(bits))
	case 2:
		e.msg = order.AppendUint16(e.msg, uint16(bits))
	case 4:
		e.msg = order.AppendUint32(e.msg, uint32(bits))
	case 8:
		e.msg = order.AppendUint64(e.msg, bits)
	}
	l := leaf{path: path, kind: b.prim.kind(), typ: nd.typ, bits: bits}
	var js any
	switch b.prim {
	case primBool:
		l.numeric = 0
		if bits != 0 {
			l.numeric = 1
		}
		js = bits != 0
	case primF32:
		l.numeric = float64(math.Float32frombits(uint32(bits)))
		js = l.numeric
	case primF64:
		l.numeric = math.Float64frombits(bits)
		js = l.numeric
	case primI8, primI16, primI32, primI64:
		v := int64(bits<<(64-8*size)) >> (64 - 8*size)
		l.numeric = float64(v)
		js = v
	default:
		l.numeric = float64(bits)
		js = bits
	}
	e.leaves = append(e.leaves, l)
	return js
}

// gFields lists the Fields the model declares.
func gFields(st *gStruct, prefix string, dims []int, out []Field) []Field {
	for _, m := range st.members {
		if m.node.kind == "pad" {
			continue
		}
		out = gNodeFields(m.node, string(appendPathKey([]byte(prefix), m.name)), dims, m.unit, out)
	}
	return out
}

func gNodeFields(nd *gNode, path string, dims []int, unit string, out []Field) []Field {
	switch nd.kind {
	case "struct":
		return gFields(nd.st, path, dims, out)
	case "array":
		return gNodeFields(nd.elem, path+"[]", append(slices.Clone(dims), nd.n), unit, out)
	}
	f := Field{Path: path, Unit: unit, Dims: dims, Type: nd.typ}
	switch nd.kind {
	case "char":
		f.Kind, f.Type = KindString, fmt.Sprintf("char[%d]", nd.n)
	case "str":
		f.Kind = KindString
	case "bytes":
		f.Kind = KindBytes
	default:
		f.Kind = builtins[nd.typ].prim.kind()
	}
	return append(out, f)
}

// sameJSON compares a value decoded with UseNumber to what was encoded.
func sameJSON(t *rapid.T, path string, got, want any) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			t.Fatalf("%s: got %v, want object %v", path, got, w)
		}
		for k, v := range w {
			sameJSON(t, path+"."+k, g[k], v)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Fatalf("%s: got %v, want array %v", path, got, w)
		}
		for i := range w {
			sameJSON(t, fmt.Sprintf("%s[%d]", path, i), g[i], w[i])
		}
	case []byte:
		s, _ := got.(string)
		if b, err := base64.StdEncoding.DecodeString(s); err != nil || !bytes.Equal(b, w) {
			t.Fatalf("%s: got %v, want base64 of %x", path, got, w)
		}
	case string, bool:
		if got != w {
			t.Fatalf("%s: got %#v, want %#v", path, got, w)
		}
	case int64:
		if n, _ := got.(json.Number); string(n) != strconv.FormatInt(w, 10) {
			t.Fatalf("%s: got %v, want %d", path, got, w)
		}
	case uint64:
		if n, _ := got.(json.Number); string(n) != strconv.FormatUint(w, 10) {
			t.Fatalf("%s: got %v, want %d", path, got, w)
		}
	case float64:
		switch {
		case math.IsNaN(w):
			if got != "NaN" {
				t.Fatalf("%s: got %v, want NaN", path, got)
			}
		case math.IsInf(w, 0):
			if want := map[bool]string{true: "Infinity", false: "-Infinity"}[w > 0]; got != want {
				t.Fatalf("%s: got %v, want %s", path, got, want)
			}
		default:
			n, _ := got.(json.Number)
			f, err := strconv.ParseFloat(string(n), 64)
			f32, err32 := strconv.ParseFloat(string(n), 32)
			if (err != nil || f != w) && (err32 != nil || f32 != w) {
				t.Fatalf("%s: got %v, want %v", path, got, w)
			}
		}
	default:
		t.Fatalf("%s: unexpected want %T", path, want)
	}
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func TestLayoutProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var structs []*gStruct
		for i := range rapid.IntRange(0, 3).Draw(t, "structs") {
			structs = append(structs, genStruct(t, fmt.Sprintf("s%d", i), structs, 4))
		}
		root := genStruct(t, "", structs, 8)
		var src strings.Builder
		for _, s := range structs {
			s.source(&src, t)
		}
		root.source(&src, t)
		l, err := ParseLayout([]byte(src.String()))
		if err != nil {
			t.Fatalf("%v\n%s", err, src.String())
		}
		e := &encoder{t: t}
		want := e.structValue(root, "")
		msg := e.msg
		if l.MinSize() > len(msg) {
			t.Fatalf("MinSize %d > encoded %d", l.MinSize(), len(msg))
		}
		if l.Fixed() && l.MinSize() != len(msg) {
			t.Fatalf("fixed layout of %d bytes, encoded %d", l.MinSize(), len(msg))
		}

		// Fields: the declared leaves.
		if got, wantF := l.Fields(), gFields(root, "", nil, nil); !fieldsEqual(got, wantF, true) {
			t.Fatalf("Fields:\n got %+v\nwant %+v", got, wantF)
		}

		// Accessors read what was encoded.
		var numeric []leaf
		for _, lf := range e.leaves {
			a, err := l.Accessor(lf.path)
			if err != nil {
				t.Fatalf("Accessor(%q): %v", lf.path, err)
			}
			if a.Field().Path != lf.path || a.Field().Kind != lf.kind {
				t.Fatalf("Accessor(%q).Field() = %+v", lf.path, a.Field())
			}
			if lf.kind == KindString || lf.kind == KindBytes {
				if b, ok := a.Bytes(msg); !ok || !bytes.Equal(b, lf.text) {
					t.Fatalf("%s: Bytes = %q %v, want %q", lf.path, b, ok, lf.text)
				}
				if _, ok := a.Float64(msg); ok {
					t.Fatalf("%s: Float64 of text is ok", lf.path)
				}
				continue
			}
			numeric = append(numeric, lf)
			if v, ok := a.Float64(msg); !ok || !sameFloat(v, lf.numeric) {
				t.Fatalf("%s: Float64 = %v %v, want %v", lf.path, v, ok, lf.numeric)
			}
			checkInts(t, a, msg, lf)
		}

		// Numeric walks the same values in the same order.
		var i int
		if err := l.Numeric(msg, func(p []byte, v float64) {
			if i >= len(numeric) || string(p) != numeric[i].path || !sameFloat(v, numeric[i].numeric) {
				t.Fatalf("Numeric #%d: %s = %v, want %+v", i, p, v, numeric[min(i, len(numeric)-1)])
			}
			i++
		}); err != nil || i != len(numeric) {
			t.Fatalf("Numeric: %v after %d of %d", err, i, len(numeric))
		}

		// AppendJSON is one object that encoding/json reads back.
		prefix := []byte("x")
		js, err := l.AppendJSON(prefix, msg)
		if err != nil || !bytes.HasPrefix(js, prefix) {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(js[1:]))
		dec.UseNumber()
		var got any
		if err := dec.Decode(&got); err != nil || dec.More() {
			t.Fatalf("AppendJSON wrote bad JSON (%v): %s", err, js[1:])
		}
		sameJSON(t, "", got, want)

		// The JSON Schema describes the same leaves to the json decoder.
		jd, err := NewDecoder(Type{MessageEncoding: EncodingJSON, Schema: Schema{Name: "t", Encoding: SchemaJSON, Data: l.JSONSchema("t")}})
		if err != nil {
			t.Fatal(err)
		}
		if !fieldsEqual(jd.Fields(), l.Fields(), false) {
			t.Fatalf("JSON Schema fields:\n got %+v\nwant %+v", jd.Fields(), l.Fields())
		}
		// And the json decoder's walk of the JSON finds the same numbers
		// (NaN and infinities are strings there).
		var finite []leaf
		for _, lf := range numeric {
			if !math.IsNaN(lf.numeric) && !math.IsInf(lf.numeric, 0) {
				finite = append(finite, lf)
			}
		}
		i = 0
		if err := jd.Numeric(js[1:], func(p []byte, v float64) {
			w := finite[min(i, len(finite)-1)]
			close := math.Abs(v-w.numeric) <= 1e-6*math.Abs(w.numeric) ||
				strings.HasPrefix(w.typ, "f32") && float32(v) == float32(w.numeric)
			if i >= len(finite) || string(p) != w.path || !close {
				t.Fatalf("json Numeric #%d: %s = %v, want %+v", i, p, v, w)
			}
			i++
		}); err != nil || i != len(finite) {
			t.Fatalf("json Numeric: %v after %d of %d", err, i, len(finite))
		}

		// AppendPacked reads the JSON back into a packed message that
		// AppendJSON writes as the same JSON (when the text was valid
		// UTF-8: repaired text need not fit a char field again), and
		// into the same bytes once pads are zero and bools 0 or 1.
		valid := true
		for _, lf := range e.leaves {
			valid = valid && (lf.kind != KindString || utf8.Valid(lf.text))
		}
		if valid {
			packed, err := l.AppendPacked(prefix, js[1:])
			if err != nil || !bytes.HasPrefix(packed, prefix) {
				t.Fatalf("AppendPacked(%s): %v", js[1:], err)
			}
			js2, err := l.AppendJSON(nil, packed[1:])
			if err != nil || !bytes.Equal(js2, js[1:]) {
				t.Fatalf("AppendJSON(AppendPacked(j)) = %s (%v), want j = %s", js2, err, js[1:])
			}
			if canon := canonical(l, msg); !bytes.Equal(packed[1:], canon) {
				t.Fatalf("AppendPacked = %x, want the canonical message %x", packed[1:], canon)
			}
		}

		// A cut message is short: an error and dst unchanged, or false.
		cut := rapid.IntRange(0, len(msg)-1).Draw(t, "cut")
		short := msg[:cut]
		if out, err := l.AppendJSON(prefix, short); !errors.Is(err, ErrShortMessage) || !bytes.Equal(out, prefix) {
			t.Fatalf("AppendJSON of %d/%d bytes: %q, %v", cut, len(msg), out, err)
		}
		if err := l.Numeric(short, func([]byte, float64) { t.Fatal("callback on a short message") }); err != ErrShortMessage {
			t.Fatalf("Numeric of %d/%d bytes: %v", cut, len(msg), err)
		}
		for _, lf := range numeric {
			a, _ := l.Accessor(lf.path)
			if v, ok := a.Float64(short); ok && !sameFloat(v, lf.numeric) {
				t.Fatalf("%s in %d/%d bytes: %v, want %v or false", lf.path, cut, len(msg), v, lf.numeric)
			}
		}
	})
}

func checkInts(t *rapid.T, a *Accessor, msg []byte, lf leaf) {
	i, iok := a.Int64(msg)
	u, uok := a.Uint64(msg)
	switch lf.kind {
	case KindFloat:
		if iok || uok {
			t.Fatalf("%s: Int64/Uint64 of a float are ok", lf.path)
		}
	case KindInt:
		v := signed(builtins[lf.typ].prim, lf.bits)
		if !iok || i != v || uok != (v >= 0) || (uok && u != uint64(v)) {
			t.Fatalf("%s: Int64 %d %v Uint64 %d %v, want %d", lf.path, i, iok, u, uok, v)
		}
	case KindUint:
		if !uok || u != lf.bits || iok != (lf.bits <= math.MaxInt64) || (iok && i != int64(lf.bits)) {
			t.Fatalf("%s: Int64 %d %v Uint64 %d %v, want %d", lf.path, i, iok, u, uok, lf.bits)
		}
	case KindBool:
		if !iok || !uok || i != int64(lf.numeric) || u != uint64(lf.numeric) {
			t.Fatalf("%s: Int64 %d %v Uint64 %d %v, want %v", lf.path, i, iok, u, uok, lf.numeric)
		}
	}
}

// fieldsEqual compares Fields; withType compares Type too (the JSON Schema
// names types "integer", "number"...).
func fieldsEqual(a, b []Field, withType bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path || a[i].Kind != b[i].Kind || a[i].Unit != b[i].Unit ||
			!slices.Equal(a[i].Dims, b[i].Dims) || withType && a[i].Type != b[i].Type {
			return false
		}
	}
	return true
}

// canonical is msg as AppendPacked gives it back: pads zero, bools 0/1,
// NaN the quiet NaN, char text after its first NUL zero (found by walking
// the compiled layout: the model and the layout agree, as checked above).
func canonical(l *Layout, msg []byte) []byte {
	out := slices.Clone(msg)
	var walk func(nd *node, off int) int
	walkSt := func(st *structType, off int) int {
		for _, m := range st.members {
			if m.node.kind == nPad {
				clear(out[off : off+m.node.size])
				off += m.node.size
				continue
			}
			off = walk(m.node, off)
		}
		return off
	}
	walk = func(nd *node, off int) int {
		switch nd.kind {
		case nScalar:
			b := out[off : off+nd.size]
			bits := scalarBits(nd.prim, nd.big, b)
			switch {
			case nd.prim == primBool && bits > 1:
				b[0] = 1
			case nd.prim == primF32 && math.IsNaN(float64(math.Float32frombits(uint32(bits)))):
				copy(b, appendBits(nil, nd.prim, nd.big, uint64(math.Float32bits(float32(math.NaN())))))
			case nd.prim == primF64 && math.IsNaN(math.Float64frombits(bits)):
				copy(b, appendBits(nil, nd.prim, nd.big, math.Float64bits(math.NaN())))
			}
			return off + nd.size
		case nChar:
			if i := bytes.IndexByte(out[off:off+nd.n], 0); i >= 0 {
				clear(out[off+i : off+nd.n])
			}
			return off + nd.n
		case nStr, nBytes:
			n, _ := readLen(nd, out, off)
			return off + nd.size + n
		case nArray:
			for range nd.n {
				off = walk(nd.elem, off)
			}
			return off
		case nStruct:
			return walkSt(nd.st, off)
		}
		panic("unknown node")
	}
	end := walkSt(l.root, 0)
	return out[:end]
}
