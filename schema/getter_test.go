package schema

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestGetter: one leaf by path from packed, protobuf and JSON messages;
// what a message does not hold reads as false.
func TestGetter(t *testing.T) {
	l, err := ParseLayout([]byte("struct xy { f64le x; f64le y }\nf32le speed (m/s); i16be w[2]; xy p; bool on; str8 note; u8 after"))
	if err != nil {
		t.Fatal(err)
	}
	var msg []byte
	msg, err = l.AppendPacked(msg, []byte(`{"speed":2.5,"w":[-3,4],"p":{"x":1,"y":-2},"on":true,"note":"hi","after":9}`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]Value{
		"speed": {Kind: KindFloat, Num: 2.5}, "w[0]": {Kind: KindInt, Num: -3}, "p.y": {Kind: KindFloat, Num: -2},
		"on": {Kind: KindBool, Num: 1}, "note": {Kind: KindString, Bytes: []byte("hi")}, "after": {Kind: KindUint, Num: 9},
	} {
		g, err := NewGetter(l, path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		v, ok := g.Get(msg)
		if !ok || v.Kind != want.Kind || v.Num != want.Num || !bytes.Equal(v.Bytes, want.Bytes) {
			t.Errorf("%s: %+v %v, want %+v", path, v, ok, want)
		}
		if _, ok := g.Get(msg[:3]); ok {
			t.Errorf("%s: read from a 3-byte message", path)
		}
	}
	for _, bad := range []string{"sped", "w[2]", "p", "w", "p.z", "a..b"} {
		if _, err := NewGetter(l, bad); !errors.Is(err, ErrNoField) {
			t.Errorf("%s: %v, want ErrNoField", bad, err)
		}
	}

	j, _ := NewDecoder(Type{MessageEncoding: EncodingJSON})
	jm := []byte(`{"a": {"b": [1, -2.5e3, true]}, "s": "x\"y", "n": null}`)
	for path, want := range map[string]Value{
		"a.b[1]": {Kind: KindFloat, Num: -2500}, "a.b[2]": {Kind: KindBool, Num: 1}, "s": {Kind: KindString, Bytes: []byte(`x"y`)},
	} {
		g, _ := NewGetter(j, path)
		if v, ok := g.Get(jm); !ok || v.Kind != want.Kind || v.Num != want.Num || !bytes.Equal(v.Bytes, want.Bytes) {
			t.Errorf("json %s: %+v %v, want %+v", path, v, ok, want)
		}
	}
	for _, path := range []string{"n", "a", "a.b[3]", "z"} {
		g, _ := NewGetter(j, path)
		if v, ok := g.Get(jm); ok {
			t.Errorf("json %s: %+v, want false", path, v)
		}
	}
	g, _ := NewGetter(j, "a")
	if _, ok := g.Get([]byte(`{"a": 1`)); ok {
		t.Error("read from invalid JSON")
	}
}

// TestGetterRecursionBounded: paths through a self-recursive protobuf type
// (message Node { Node child = 1; ... }) and deeply nested JSON read in
// bounded depth: a message nested deeper than MaxDepth reads as false,
// never a stack overflow.
func TestGetterRecursionBounded(t *testing.T) {
	typ, _ := vehicleType(t, "Node")
	d, err := NewDecoder(typ)
	if err != nil {
		t.Fatal(err)
	}
	nest := func(depth int, leaf []byte) []byte {
		b := leaf
		for range depth {
			b = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), b)
		}
		return b
	}
	v15 := protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), 0x3ff8000000000000) // v = 1.5
	g, err := NewGetter(d, "child.child.child.v")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := g.Get(nest(3, v15)); !ok || v.Num != 1.5 {
		t.Errorf("3 deep: %+v %v", v, ok)
	}
	deepPath := strings.Repeat("child.", MaxDepth+5) + "v"
	g, err = NewGetter(d, deepPath)
	if err != nil {
		t.Fatal(err)
	}
	m1, m2 := nest(MaxDepth+5, v15), nest(3000, v15)
	j, _ := NewDecoder(Type{MessageEncoding: EncodingJSON})
	jg, _ := NewGetter(j, "a.a")
	jm := []byte(strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000))
	if v, ok := g.Get(m1); ok {
		t.Errorf("%d deep: %+v, want false", MaxDepth+5, v)
	}
	if _, ok := g.Get(m2); ok {
		t.Error("3000 deep: read")
	}
	if _, ok := jg.Get(jm); ok {
		t.Error("JSON 100000 deep: read")
	}
}
