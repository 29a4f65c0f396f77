package schema

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestEventTimeHugeSchema(t *testing.T) {
	huge := make([]byte, 100<<20) // zero pages: never touched
	if _, err := NewEventTime(Type{MessageEncoding: EncodingPacked, Schema: Schema{Name: "a", Encoding: SchemaLayout, Data: huge}}, "a", UnitNs); !errors.Is(err, ErrTooLarge) {
		t.Errorf("NewEventTime: %v, want ErrTooLarge", err)
	}
}

func TestEventTimePacked(t *testing.T) {
	typ := Type{MessageEncoding: EncodingPacked, Schema: Schema{Name: "vehicle.State", Encoding: SchemaLayout, Data: []byte(example)}}
	msg := exampleMessage()
	f := func(path, unit string, want int64, wantOK bool) {
		t.Helper()
		e, err := NewEventTime(typ, path, unit)
		if err != nil {
			t.Fatalf("NewEventTime(%q, %q): %v", path, unit, err)
		}
		if ns, ok := e.Ns(msg); ns != want || ok != wantOK {
			t.Errorf("%s (%s): %d %v, want %d %v", path, unit, ns, ok, want, wantOK)
		}
		for n := range len(msg) { // never a panic on a short message
			e.Ns(msg[:n])
		}
	}
	f("t", "", 1_796_169_600_123_456_789, true) // the declared unit
	f("t", UnitNs, 1_796_169_600_123_456_789, true)
	f("t", UnitUs, 0, false) // overflows int64 nanoseconds
	f("wheel[0]", UnitMs, 1_200_000_000, true)
	f("wheel[3]", UnitS, -32_768_000_000_000, true)
	f("p.y", UnitS, -2_250_000_000, true)
	f("p.yaw", UnitS, 0, false) // +Inf

	stamp := Type{MessageEncoding: EncodingPacked, Schema: Schema{Name: "s", Encoding: SchemaLayout, Data: []byte("struct time { u32le sec; u32le nsec }\nu8 seq; time stamp")}}
	e, err := NewEventTime(stamp, "stamp", UnitStamp)
	if err != nil {
		t.Fatal(err)
	}
	m := binary.LittleEndian.AppendUint32([]byte{1}, 1_796_169_600)
	m = binary.LittleEndian.AppendUint32(m, 999_999_999)
	if ns, ok := e.Ns(m); !ok || ns != 1_796_169_600_999_999_999 {
		t.Errorf("stamp: %d %v", ns, ok)
	}
	if _, ok := e.Ns(m[:8]); ok {
		t.Error("stamp in a short message")
	}

	for _, c := range []struct{ path, unit, want string }{
		{"speed", "", `unit "m/s" is not a time unit`},
		{"gear", "", `unit "" is not a time unit`},
		{"note", UnitNs, "is str8, not a number"},
		{"ok", UnitNs, "is bool, not a number"},
		{"p", UnitStamp, "a stamp needs an integer member named one of"},
		{"p", UnitNs, "is a struct pose"},
		{"t", "min", `unit "min": want ns, us, ms, s or stamp`},
		{"nope", UnitNs, "no field nope"},
	} {
		if _, err := NewEventTime(typ, c.path, c.unit); !errors.Is(err, ErrNoField) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewEventTime(%q, %q) = %v, want ErrNoField saying %q", c.path, c.unit, err, c.want)
		}
	}
}

func TestEventTimeProtobuf(t *testing.T) {
	typ, md := vehicleType(t, "Vehicle")
	msg := vehicleMessage(t, md)
	f := func(msg []byte, path, unit string, want int64, wantOK bool) {
		t.Helper()
		e, err := NewEventTime(typ, path, unit)
		if err != nil {
			t.Fatalf("NewEventTime(%q, %q): %v", path, unit, err)
		}
		if ns, ok := e.Ns(msg); ns != want || ok != wantOK {
			t.Errorf("%s (%s): %d %v, want %d %v", path, unit, ns, ok, want, wantOK)
		}
	}
	f(msg, "header.stamp", UnitStamp, 1_796_169_600_250_000_000, true)
	f(msg, "t_ns", UnitNs, 1_796_169_600_250_000_001, true)
	f(msg, "header.stamp.seconds", UnitS, 1_796_169_600_000_000_000, true)
	f(msg, "header.seq", UnitMs, 7_000_000, true)
	f(msg, "wheels[1].rpm", UnitS, 101_500_000_000, true)
	f(msg, "wheels[1].torque", UnitNs, -1, true) // sint32
	f(msg, "wheels[2].rpm", UnitS, 0, false)     // no third wheel
	f(msg, "ranges[0]", UnitS, 1_250_000_000, true)
	f(msg, "ranges[1]", UnitS, 0, false) // NaN
	f(msg, "offset", UnitNs, -5, true)   // sfixed32
	f(msg, "gear", UnitNs, 2, true)
	f(msg, "accel", UnitS, 0, true) // absent scalar: its default
	f(nil, "header.stamp", UnitStamp, 0, false)
	f(nil, "t_ns", UnitNs, 0, true)
	// A singular message sent in two parts is merged: the last value wins.
	part := func(sec, nanos uint64) []byte {
		var st []byte
		if sec != 0 {
			st = protowire.AppendVarint(protowire.AppendTag(st, 1, protowire.VarintType), sec)
		}
		st = protowire.AppendVarint(protowire.AppendTag(st, 2, protowire.VarintType), nanos)
		hdr := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), st)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), hdr)
	}
	f(append(part(10, 5), part(0, 7)...), "header.stamp", UnitStamp, 10_000_000_007, true)
	// Unpacked repeated floats count like packed ones.
	var unpacked []byte
	for _, v := range []float32{1, 2, 3} {
		unpacked = protowire.AppendFixed32(protowire.AppendTag(unpacked, 7, protowire.Fixed32Type), math.Float32bits(v))
	}
	f(unpacked, "ranges[2]", UnitS, 3_000_000_000, true)
	// Malformed bytes are false, never a panic.
	e, _ := NewEventTime(typ, "header.stamp", UnitStamp)
	for n := range len(msg) {
		e.Ns(msg[:n])
	}
	if _, ok := e.Ns([]byte{0x0a, 0x05, 0x0a}); ok {
		t.Error("stamp from a truncated message")
	}

	for _, c := range []struct{ path, unit, want string }{
		{"header.stamp", UnitNs, "is message, not a number"},
		{"header", UnitStamp, "has no integer field named one of"},
		{"wheels.rpm", UnitS, "wheels is repeated; index it"},
		{"temps.front", UnitS, "maps are not supported"},
		{"speed.x", UnitS, "speed is not a message"},
		{"header[0]", UnitS, "header is not a repeated field"},
		{"t_ns", "", "say the unit"},
		{"header.frame_id", UnitS, "is string, not a number"},
	} {
		if _, err := NewEventTime(typ, c.path, c.unit); !errors.Is(err, ErrNoField) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewEventTime(%q, %q) = %v, want ErrNoField saying %q", c.path, c.unit, err, c.want)
		}
	}
}

func TestEventTimeJSON(t *testing.T) {
	typ := Type{MessageEncoding: EncodingJSON}
	f := func(msg, path, unit string, want int64, wantOK bool) {
		t.Helper()
		e, err := NewEventTime(typ, path, unit)
		if err != nil {
			t.Fatalf("NewEventTime(%q, %q): %v", path, unit, err)
		}
		if ns, ok := e.Ns([]byte(msg)); ns != want || ok != wantOK {
			t.Errorf("%s in %s: %d %v, want %d %v", path, msg, ns, ok, want, wantOK)
		}
	}
	ros := `{"header": {"seq": 1, "stamp": {"sec": 1796169600, "nanosec": 42}}}`
	f(ros, "header.stamp", UnitStamp, 1_796_169_600_000_000_042, true)
	f(ros, "header.stamp.sec", UnitS, 1_796_169_600_000_000_000, true)
	f(ros, "header.seq", UnitUs, 1000, true)
	f(ros, "header.nope", UnitUs, 0, false)
	f(`{"t": 1796169600123456789}`, "t", UnitNs, 1_796_169_600_123_456_789, true) // exact
	f(`{"t": "1796169600123456789"}`, "t", UnitNs, 1_796_169_600_123_456_789, true)
	f(`{"t": 1.5}`, "t", UnitS, 1_500_000_000, true)
	f(`{"t": 1e300}`, "t", UnitS, 0, false)
	f(`{"t": "soon"}`, "t", UnitS, 0, false)
	f(`{"t": "Infinity"}`, "t", UnitS, 0, false)
	f(`{"t": "0x1p4"}`, "t", UnitS, 0, false)
	f(`{"t": "1.25"}`, "t", UnitS, 1_250_000_000, true)
	f(`{"t": [5, 6]}`, "t[1]", UnitMs, 6_000_000, true)
	f(`{"stamp": "2026-12-02T00:00:00.25Z"}`, "stamp", UnitStamp, 1_796_169_600_250_000_000, true) // protojson
	f(`{"stamp": {"seconds": 1, "nanos": 2}}`, "stamp", UnitStamp, 1_000_000_002, true)
	f(`{"stamp": {"seconds": 1}}`, "stamp", UnitStamp, 0, false)
	f(`{"t": 1`, "t", UnitNs, 0, false)
	f(`[1]`, "t", UnitNs, 0, false)
}
