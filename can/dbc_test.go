package can

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/schema"
)

func loadDBC(t testing.TB, path string) *DBC {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDBC(path, b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// decodeJSON decodes f as m and returns the decoded message as JSON, read
// through the message's type as every reader of typed topics reads it.
func decodeJSON(t *testing.T, m *Message, f *Frame) string {
	t.Helper()
	dst := make([]byte, m.EncodedSize())
	if !m.Decode(dst, f) {
		t.Fatalf("%s: not decoded", m.Name)
	}
	l, err := schema.ParseLayout([]byte(m.Layout))
	if err != nil {
		t.Fatalf("%s's layout %q: %v", m.Name, m.Layout, err)
	}
	js, err := l.AppendJSON(nil, dst)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

func TestDBCDecode(t *testing.T) {
	d := loadDBC(t, "testdata/vehicle.dbc")
	if len(d.Messages) != 4 {
		t.Fatalf("%d messages", len(d.Messages))
	}
	ws := frameOf(256, 0, 0x10, 0x27, 0x11, 0x27, 0x00, 0x00, 0xff, 0xff) // 100.00, 100.01, 0, 655.35
	if got := decodeJSON(t, d.Lookup(&ws), &ws); got != `{"WheelFL":100,"WheelFR":100.01,"WheelRL":0,"WheelRR":655.35}` {
		t.Errorf("WheelSpeeds: %s", got)
	}
	// Motorola: BrakePressure is the 12 bits from bit 7 down: 0xABC =
	// 2748 -> 274.8 bar; BrakePedal bit 11 (byte 1, bit 3); Decel
	// big-endian bytes 2-3 signed: 0xFF38 = -200 -> -0.2; BrakeCounter
	// bits 59..56 (byte 7's low nibble).
	br := frameOf(257, 0, 0xAB, 0xC8, 0xFF, 0x38, 0, 0, 0, 0x07)
	if got := decodeJSON(t, d.Lookup(&br), &br); got != `{"BrakePressure":274.8,"BrakePedal":1,"Decel":-0.2,"BrakeCounter":7}` {
		t.Errorf("Brake: %s", got)
	}
	// Multiplexing and a value table: mode 0 carries OilTemp, mode 1
	// ClutchWear; the other is NaN. Gear 3 is "D".
	tr := frameOf(258, 0, 0x03, 0x00|(30<<2))
	if got := decodeJSON(t, d.Lookup(&tr), &tr); got != `{"Gear":3,"Gear_label":"D","Mode":0,"OilTemp":20,"ClutchWear":"NaN"}` {
		t.Errorf("Transmission mode 0: %s", got)
	}
	tr = frameOf(258, 0, 0x09, 0x01|(30<<2))
	if got := decodeJSON(t, d.Lookup(&tr), &tr); got != `{"Gear":9,"Gear_label":"","Mode":1,"OilTemp":"NaN","ClutchWear":30}` {
		t.Errorf("Transmission mode 1: %s", got)
	}
	// An extended ID, a float32 signal, signed Intel.
	st := frameOf(0x300, Extended, 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint16(st.Data[0:], uint16(0xFFFF&-905)) // -90.5 deg
	binary.LittleEndian.PutUint32(st.Data[2:], math.Float32bits(-1.5))
	binary.LittleEndian.PutUint16(st.Data[6:], uint16(1234)) // 12.34 Nm
	m := d.Lookup(&st)
	if m == nil || m.Name != "Steering" || !m.Extended {
		t.Fatalf("Steering: %+v", m)
	}
	if got := decodeJSON(t, m, &st); got != `{"SteeringAngle":-90.5,"SteeringRate":-1.5,"Torque":12.34}` {
		t.Errorf("Steering: %s", got)
	}
	std := frameOf(0x300, 0, 1, 2, 3, 4, 5, 6, 7, 8)
	if d.Lookup(&std) != nil {
		t.Error("a standard 0x300 matched the extended message")
	}
	// Units and types in the layout.
	if !strings.Contains(d.Lookup(&ws).Layout, "f64le WheelFL (km/h)") || !strings.Contains(d.Lookup(&tr).Layout, "u64le Gear\nchar Gear_label[1]") {
		t.Errorf("layouts:\n%s\n%s", d.Lookup(&ws).Layout, d.Lookup(&tr).Layout)
	}
	// A frame shorter than the message is not decoded.
	short := frameOf(256, 0, 1, 2, 3)
	if d.Lookup(&short).Decode(make([]byte, 64), &short) {
		t.Error("a 3-byte frame decoded as an 8-byte message")
	}
}

// refRaw reads a signal's raw value bit by bit, as the DBC format defines
// it (Intel: from the start bit up; Motorola: from the start bit, the MSB,
// down the sawtooth).
func refRaw(s *Signal, data []byte) uint64 {
	var v uint64
	if !s.BigEndian {
		for i := 0; i < s.Len; i++ {
			p := s.Start + i
			v |= uint64(data[p/8]>>(p%8)&1) << uint(i)
		}
		return v
	}
	p := s.Start
	for i := 0; i < s.Len; i++ {
		v = v<<1 | uint64(data[p/8]>>(p%8)&1)
		if p%8 == 0 {
			p += 15
		} else {
			p--
		}
	}
	return v
}

// TestSignalExtraction: every start bit, length and byte order a message
// of 8 or 64 bytes allows, on random data, against the bit-by-bit reading.
func TestSignalExtraction(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{8, 64} {
		var buf [72]byte
		for trial := 0; trial < 20000; trial++ {
			s := &Signal{Len: 1 + rng.IntN(64), BigEndian: rng.IntN(2) == 0, Start: rng.IntN(size * 8)}
			if s.compile(size) != nil {
				continue
			}
			for i := range size {
				buf[i] = byte(rng.Uint32())
			}
			if got, want := s.raw(&buf), refRaw(s, buf[:size]); got != want {
				t.Fatalf("size %d start %d len %d big-endian %v: %#x, want %#x", size, s.Start, s.Len, s.BigEndian, got, want)
			}
		}
	}
}

func TestDBCRefuses(t *testing.T) {
	cases := map[string]string{
		"BO_ 1 A: 8 X\n SG_ S : 60|8@1+ (1,0) [0|0] \"\" X\n":                                                  "A, signal S: bits 60..67 beyond the message's 8 bytes",
		"BO_ 1 A: 8 X\n SG_ S : 0|0@1+ (1,0) [0|0] \"\" X\n":                                                   "0 bits",
		"BO_ 1 A: 8 X\n SG_ S : 0|8@1+ (0,0) [0|0] \"\" X\n":                                                   "factor 0",
		"BO_ 1 A: 8 X\n SG_ S m1 : 0|8@1+ (1,0) [0|0] \"\" X\n":                                                "no multiplexer switch",
		"BO_ 1 A: 80 X\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" X\n":                                                  "80 bytes",
		"BO_ 1 A: 8 X\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" X\nBO_ 1 B: 8 X\n SG_ T : 0|8@1+ (1,0) [0|0] \"\" X\n": "ID 0x1 is A's too",
		"BO_ 1 errors: 8 X\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" X\n":                                              "the name of the error frames' topic",
		"BO_ 1 A: 8 X\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" X\nSG_MUL_VAL_ 1 S M 0-0;\n":                           "extended multiplexing",
		"BO_ 1 A: 8 X\n SG_ S : 0|8@Q+ (1,0) [0|0] \"\" X\n":                                                   "test.dbc:2:",
		"BO_ 1 A: 8 X\nVAL_ 1 T 0 \"x\" ;\n":                                                                   "VAL_ of an unknown signal T",
	}
	for in, want := range cases {
		_, err := ParseDBC("test.dbc", []byte(in))
		if err == nil || !errors.Is(err, ErrDBC) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

// TestDBCAttributesLinear: a DBC of many attribute values that name no
// attribute parses (they are not used), in time linear in its size.
func TestDBCAttributesLinear(t *testing.T) {
	in := []byte("BO_ 1 A: 8 X\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" X\n" + strings.Repeat("BA_ \"nope\" BO_ 1 3;\n", 200000))
	d, err := ParseDBC("many.dbc", in)
	if err != nil || len(d.Messages) != 1 {
		t.Fatalf("%v", err)
	}
}
