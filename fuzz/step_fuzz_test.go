package fuzz

import (
	"bytes"
	"testing"

	"github.com/edr-lite/edr-lite/schema"
	"github.com/edr-lite/edr-lite/step"
)

// packedLayout has every kind of member the packed codec binds: scalars of
// both byte orders, pad, char, length-prefixed strings and bytes, a nested
// struct, arrays of scalars and of structs.
const packedLayout = `struct pose { f64le x; f32be yaw; i16le w[2] }
f32le speed; u8 gear; i64be t; pad 3; bool ok
char vin[5]
str8 note
bytes16be blob
pose p
pose ps[2]
u32le ids[3]
`

type fuzzPose struct {
	X   float64
	Yaw float32
	W   [2]int16
}

type fuzzState struct {
	Speed float32
	Gear  uint16
	T     int64
	OK    bool
	VIN   [5]byte
	Note  string
	Blob  []byte
	P     fuzzPose
	Ps    []fuzzPose
	IDs   []uint64 `edr:"ids"`
}

// FuzzPackedCodec decodes arbitrary messages with step's packed codec (the
// recorded messages a replay decodes are untrusted): no panic; it decodes
// exactly the messages the schema room's layout decoder reads (the same
// layout, read by field name as "cat --decode" reads it), into a value
// that encodes again to a message that decoder reads as the same JSON.
func FuzzPackedCodec(f *testing.F) {
	f.Add([]byte("\x00\x00\xa0\x41\x03\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x01WVW\x00\x00\x02hi\x00\x01\xff"))
	f.Add(bytes.Repeat([]byte{0xff}, 120))
	codec, err := step.Packed[fuzzState]("fuzz.State", packedLayout)
	if err != nil {
		f.Fatal(err)
	}
	layout := schema.MustParseLayout(packedLayout)
	f.Fuzz(func(t *testing.T, msg []byte) {
		var v fuzzState
		derr := codec.Decode(msg, &v)
		js, jerr := layout.AppendJSON(nil, msg)
		if (derr == nil) != (jerr == nil) {
			t.Fatalf("codec: %v, layout: %v", derr, jerr)
		}
		if derr != nil {
			return
		}
		again, err := codec.Append(nil, v)
		if err != nil {
			t.Fatalf("a decoded value does not encode: %v", err)
		}
		js2, err := layout.AppendJSON(nil, again)
		if err != nil || !bytes.Equal(js, js2) {
			t.Fatalf("re-encoded:\n%s\n%s (%v)", js, js2, err)
		}
	})
}
