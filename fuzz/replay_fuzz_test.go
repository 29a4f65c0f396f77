package fuzz

import (
	"bytes"
	"testing"

	"github.com/edr-lite/edr-lite/replay"
	"github.com/edr-lite/edr-lite/schema"
)

// brakeLayout is the example node's output (examples/brake-node/brake.layout)
// with a string after it, so that field offsets depend on the message.
const brakeLayout = "f32le speed (m/s); f32le obstacle (m); f32le command; u8 brake; str8 note; f64le trailing[2]"

// FuzzFeedCheck compares arbitrary outputs of a system under test (two
// recorded, two published, cut from the input) by every check mode and
// alignment, with a packed layout: no panic; exact finds nothing when the
// outputs are the recorded ones; every mismatch names the topic, a known
// kind and a sequence within the messages; the count is bounded by the
// messages and their fields.
func FuzzFeedCheck(f *testing.F) {
	f.Add([]byte("\x00\x00\xa0\x41\x00\x00\xc0\x7f\x00\x00\x00\x00\x00\x02hi"), []byte("\x00\x00\xa0\x41\x00\x00\xc0\x7f\x52\xb8\x1e\x3f\x01"), uint8(0))
	f.Add([]byte{}, []byte("\xff\xff\xff\xff"), uint8(5))
	layout, err := schema.ParseLayout([]byte(brakeLayout))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b []byte, sel uint8) {
		mode := replay.CheckMode(sel % 3)
		align := replay.Align(sel / 3 % 3)
		ch := replay.Check{Mode: mode, Align: align, Abs: 1e-6, Rel: 1e-6, Window: 5, Decoder: layout}
		if sel&0x80 != 0 && mode != replay.CheckTolerance {
			ch.Decoder = nil
		}
		half := func(x []byte) []replay.OutputMessage {
			h := len(x) / 2
			return []replay.OutputMessage{{TimeNs: 1, GenNs: 1, Data: x[:h]}, {TimeNs: 2, GenNs: 2, Data: x[h:]}}
		}
		rec, pub := half(a), half(b)
		ms, err := replay.CompareOutputs(ch, "t", rec, pub)
		if err != nil {
			t.Fatalf("check %+v: %v", ch, err)
		}
		if len(ms) > 2*(len(layout.Fields())+4)+4 {
			t.Fatalf("%d mismatches for two messages", len(ms))
		}
		for _, m := range ms {
			switch m.Kind {
			case "value", "missing", "extra", "timing":
			default:
				t.Fatalf("mismatch kind %q", m.Kind)
			}
			if m.Topic != "t" || m.Seq < 0 || m.Seq > 1 {
				t.Fatalf("mismatch %+v", m)
			}
		}
		same, err := replay.CompareOutputs(replay.Check{Mode: replay.CheckExact, Decoder: ch.Decoder}, "t", rec, half(bytes.Clone(a)))
		if err != nil || len(same) != 0 {
			t.Fatalf("the recorded outputs against themselves: %v %+v", err, same)
		}
	})
}
