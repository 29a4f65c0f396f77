//go:build !race

package schema

import "testing"

// TestAccessorAllocs: reading a field allocates nothing, at a fixed offset
// or behind a string.
func TestAccessorAllocs(t *testing.T) {
	l := MustParseLayout(example)
	msg := exampleMessage()
	for _, path := range []string{"speed", "wheel[2]", "p.x", "t", "ok", "note", "vin"} {
		a, err := l.Accessor(path)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		var n int
		read := func() {
			v, _ := a.Float64(msg)
			i, _ := a.Int64(msg)
			u, _ := a.Uint64(msg)
			b, _ := a.Bytes(msg)
			sum += v + float64(i) + float64(u)
			n += len(b)
		}
		if allocs := testing.AllocsPerRun(1000, read); allocs != 0 {
			t.Errorf("%s: %v allocs per read, want 0", path, allocs)
		}
	}
}

// TestLayoutWalkAllocs: AppendJSON with room in dst and Numeric called on
// the *Layout allocate nothing once the path pool is warm.
func TestLayoutWalkAllocs(t *testing.T) {
	l := MustParseLayout(example)
	msg := exampleMessage()
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(1000, func() { dst, _ = l.AppendJSON(dst[:0], msg) }); n != 0 {
		t.Errorf("AppendJSON: %v allocs, want 0", n)
	}
	var sum float64
	fn := func(p []byte, v float64) { sum += v + float64(len(p)) }
	l.Numeric(msg, fn) // warm the pool
	if n := testing.AllocsPerRun(1000, func() { l.Numeric(msg, fn) }); n != 0 {
		t.Errorf("Numeric: %v allocs, want 0", n)
	}
}

// TestEventTimeAllocs: the event time of packed and protobuf messages is
// read without allocating.
func TestEventTimeAllocs(t *testing.T) {
	packed := Type{MessageEncoding: EncodingPacked, Schema: Schema{Name: "vehicle.State", Encoding: SchemaLayout, Data: []byte(example)}}
	pb, md := vehicleType(t, "Vehicle")
	pmsg := vehicleMessage(t, md)
	for _, c := range []struct {
		typ        Type
		path, unit string
		msg        []byte
	}{
		{packed, "t", "", exampleMessage()},
		{packed, "p.y", UnitS, exampleMessage()},
		{pb, "header.stamp", UnitStamp, pmsg},
		{pb, "t_ns", UnitNs, pmsg},
		{pb, "wheels[1].rpm", UnitS, pmsg},
	} {
		e, err := NewEventTime(c.typ, c.path, c.unit)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		if n := testing.AllocsPerRun(1000, func() { ns, _ := e.Ns(c.msg); sum += ns }); n != 0 {
			t.Errorf("%s %s: %v allocs, want 0", c.typ.MessageEncoding, c.path, n)
		}
	}
}
