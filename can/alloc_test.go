//go:build !race

package can

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestBusRecordAllocs: recording a frame through the shared frame path
// allocates nothing (classic, CAN FD, error frames), once the topics exist.
func TestBusRecordAllocs(t *testing.T) {
	rec := newRecorder(t)
	bus, err := NewBus(rec, BusOptions{Name: "can0"})
	if err != nil {
		t.Fatal(err)
	}
	f := frameOf(0x123, 0, 1, 2, 3, 4, 5, 6, 7, 8)
	fd := frameOf(0x124, FD, make([]byte, 64)...)
	ef := Frame{ID: 4, Flags: ErrorFrame, DLC: 8, Len: 8}
	bus.Record(1, 0, &fd)
	bus.Record(1, 0, &ef)
	ts := int64(2)
	testutil.AssertNoAllocs(t, func() {
		ts++
		bus.Record(ts, 0, &f)
		bus.Record(ts, 0, &fd)
		bus.Record(ts, 0, &ef)
	})
}

// TestDecodeAllocs: decoding a DBC message allocates nothing.
func TestDecodeAllocs(t *testing.T) {
	d := loadDBC(t, "testdata/vehicle.dbc")
	tr := frameOf(258, 0, 0x03, 0x00|(30<<2))
	m := d.Lookup(&tr)
	dst := make([]byte, m.EncodedSize())
	testutil.AssertNoAllocs(t, func() { m.Decode(dst, &tr) })
	e := eightSignals(t)
	f := frameOf(291, 0, 1, 2, 3, 4, 5, 6, 7, 8)
	m = e.Lookup(&f)
	dst = make([]byte, m.EncodedSize())
	testutil.AssertNoAllocs(t, func() { m.Decode(dst, &f) })
}

// TestBusDecodeAllocs: a bus with a DBC records and decodes a frame
// without allocating, once the message's topic exists.
func TestBusDecodeAllocs(t *testing.T) {
	rec := newRecorder(t)
	bus, err := NewBus(rec, BusOptions{Name: "can0", DBC: loadDBC(t, "testdata/vehicle.dbc")})
	if err != nil {
		t.Fatal(err)
	}
	br := frameOf(257, 0, 0xAB, 0xC8, 0xFF, 0x38, 0, 0, 0, 0x07)
	unknown := frameOf(0x555, 0, 1)
	bus.Record(1, 0, &br)
	bus.Record(1, 0, &unknown)
	ts := int64(2)
	testutil.AssertNoAllocs(t, func() {
		ts++
		bus.Record(ts, 0, &br)
		bus.Record(ts, 0, &unknown)
	})
}

// TestBusPerIDAllocs: the per-ID path allocates nothing once its topics
// exist.
func TestBusPerIDAllocs(t *testing.T) {
	rec := newRecorder(t)
	bus, err := NewBus(rec, BusOptions{Name: "can0", PerID: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := frameOf(0x123, 0, 1), frameOf(0x1abcdef, Extended, 2)
	bus.Record(1, 0, &a)
	bus.Record(1, 0, &b)
	ts := int64(2)
	testutil.AssertNoAllocs(t, func() {
		ts++
		bus.Record(ts, 0, &a)
		bus.Record(ts, 0, &b)
	})
}
