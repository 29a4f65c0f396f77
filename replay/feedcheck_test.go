package replay

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// brakeMsg encodes the decision layout (decisionLayout) for a command.
func brakeMsg(speed, cmd float32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(speed))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(cmd))
	if cmd > 0 {
		return append(b, 1)
	}
	return append(b, 0)
}

func msgs(specs ...[3]float64) []OutputMessage { // time in ms, gen, command
	var out []OutputMessage
	for _, s := range specs {
		out = append(out, OutputMessage{TimeNs: int64(s[0] * 1e6), GenNs: int64(s[1]), Data: brakeMsg(20, float32(s[2]))})
	}
	return out
}

func mismatchLines(ms []Mismatch) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.String() + "\n")
	}
	return b.String()
}

func TestCompareOutputsAlign(t *testing.T) {
	layout := mustLayout(t)
	rec := msgs([3]float64{100, 1, 0.5}, [3]float64{200, 2, 0.6}, [3]float64{300, 3, 0.7})
	f := func(ch Check, pub []OutputMessage, want ...string) {
		t.Helper()
		ch.Decoder = layout
		ms, err := CompareOutputs(ch, "planner/brake", rec, pub)
		if err != nil {
			t.Fatal(err)
		}
		got := mismatchLines(ms)
		if len(want) == 0 && got != "" {
			t.Errorf("%v/%v: want no mismatch, got\n%s", ch.Mode, ch.Align, got)
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%v/%v: mismatches\n%s\nwant %q", ch.Mode, ch.Align, got, w)
			}
		}
		if n := strings.Count(got, "\n"); len(want) > 0 && n != len(want) {
			t.Errorf("%v/%v: %d mismatches, want %d:\n%s", ch.Mode, ch.Align, n, len(want), got)
		}
	}
	// the second output lost: by sequence the third is compared with the
	// second recorded; by producer time each meets its own
	lost := msgs([3]float64{110, 1, 0.5}, [3]float64{310, 3, 0.7})
	f(Check{Align: AlignSeq}, lost, "step 2 (planner/brake seq 1 at +100ms): value command: expected 0.6, got 0.7", "step 3 (planner/brake seq 2 at +200ms): missing")
	f(Check{Align: AlignTime}, lost, "step 2 (planner/brake seq 1 at +100ms): missing")
	f(Check{Align: AlignNearest, Window: 20e6}, lost, "step 2 (planner/brake seq 1 at +100ms): missing")
	// nearest: out of the window is missing and extra
	f(Check{Align: AlignNearest, Window: 5e6}, lost, "seq 0 at +0s): missing", "seq 1 at +100ms): missing", "seq 2 at +200ms): missing",
		"step 1 (planner/brake seq 0 at +10ms): extra", "step 2 (planner/brake seq 1 at +210ms): extra")
	// nearest takes the closest unused one
	f(Check{Align: AlignNearest, Window: 60e6}, msgs([3]float64{150, 9, 0.6}, [3]float64{95, 9, 0.5}, [3]float64{290, 9, 0.7}))
	// time: a published output whose producer time matches none is extra
	f(Check{Align: AlignTime}, msgs([3]float64{100, 1, 0.5}, [3]float64{200, 2, 0.6}, [3]float64{300, 4, 0.7}),
		"seq 2 at +200ms): missing", "step 3 (planner/brake seq 2 at +200ms): extra")
	// tolerance, fields and NaN
	f(Check{Mode: CheckTolerance, Abs: 0.01}, msgs([3]float64{100, 1, 0.505}, [3]float64{200, 2, 0.6}, [3]float64{300, 3, 0.7}))
	f(Check{Mode: CheckTolerance, Rel: 0.01}, msgs([3]float64{100, 1, 0.505}, [3]float64{200, 2, 0.6}, [3]float64{300, 3, 0.72}),
		"step 3 (planner/brake seq 2 at +200ms): value command: expected 0.7, got 0.72")
	f(Check{Mode: CheckTolerance, Fields: []string{"speed"}}, msgs([3]float64{100, 1, 0.9}, [3]float64{200, 2, 0.6}, [3]float64{300, 3, 0.7}))
	nan := msgs([3]float64{100, 1, math.NaN()})
	if ms, _ := CompareOutputs(Check{Mode: CheckTolerance, Decoder: layout}, "t", nan, msgs([3]float64{100, 1, math.NaN()})); len(ms) != 0 {
		t.Errorf("NaN against NaN: %s", mismatchLines(ms))
	}
	// none: counts, and latency with a window (CompareOutputs gives every
	// message the latency 0 from its own step)
	f(Check{Mode: CheckNone}, msgs([3]float64{1, 1, 0}, [3]float64{2, 2, 0}, [3]float64{3, 3, 0}))
	f(Check{Mode: CheckNone}, msgs([3]float64{1, 1, 0}), "seq 1 at +100ms): missing", "seq 2 at +200ms): missing")
	// a message too short for the layout
	short := []OutputMessage{{TimeNs: 100e6, Data: []byte{1, 2}}, rec[1], rec[2]}
	f(Check{Mode: CheckTolerance}, short, "value (decode): expected decodes, got ")
	// exact without a decoder: the first differing byte
	if ms, _ := CompareOutputs(Check{}, "t", rec[:1], msgs([3]float64{100, 1, 0.25})); len(ms) != 1 || ms[0].Field != "bytes[6]" || ms[0].Expected != "003f01" || ms[0].Got != "803e01" {
		t.Errorf("exact without a decoder: %s", mismatchLines(ms))
	}
	if _, err := CompareOutputs(Check{Mode: CheckTolerance}, "t", rec, rec); err == nil {
		t.Error("tolerance without a decoder accepted")
	}
}

// TestCompareOutputsTiming: check none with a window compares each output's
// latency after its input with the recorded one.
func TestCompareOutputsTiming(t *testing.T) {
	c := &comparer{ch: &Check{Mode: CheckNone, Window: 1000}, topic: "t"}
	var got []Mismatch
	c.add = func(m Mismatch) { got = append(got, m) }
	rec := []recOut{{seq: 0, step: 1, lat: 300}, {seq: 1, step: 2, lat: 300}}
	pub := []pubOut{{seq: 0, step: 1, lat: 900}, {seq: 1, step: 2, lat: 5000}}
	c.run(rec, pub)
	if len(got) != 1 || got[0].Kind != "timing" || got[0].Field != "latency" || got[0].Expected != "300ns" || got[0].Got != "5µs" || got[0].Seq != 1 {
		t.Fatalf("%+v", got)
	}
}
