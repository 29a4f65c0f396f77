package can

import (
	"errors"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/schema"
)

func frameOf(id uint32, flags Flags, data ...byte) Frame {
	f := Frame{ID: id, Flags: flags, Len: uint8(len(data))}
	copy(f.Data[:], data)
	f.DLC = f.Len
	if flags&FD != 0 {
		f.DLC, _ = FDDLC(len(data))
	}
	return f
}

func TestFrameCheck(t *testing.T) {
	ok := []Frame{
		frameOf(0x123, 0, 0xde, 0xad),
		frameOf(0x7ff, 0),
		frameOf(0x1fffffff, Extended, 1, 2, 3, 4, 5, 6, 7, 8),
		frameOf(0x100, FD|BRS|ESI, make([]byte, 64)...),
		frameOf(0x100, FD, make([]byte, 12)...),
		{ID: 0x123, Flags: RTR, DLC: 3},
		{ID: 0x123, DLC: 15, Len: 8},
		{ID: ErrClassBusOff, Flags: ErrorFrame, DLC: 8, Len: 8},
		frameOf(0x10, Tx, 1),
	}
	for _, f := range ok {
		if err := f.Check(); err != nil {
			t.Errorf("%+v: %v", f, err)
		}
	}
	bad := map[string]Frame{
		"exceeds 11 bits":   frameOf(0x800, 0),
		"exceeds 29 bits":   frameOf(0x20000000, Extended),
		"unknown flags":     {Flags: 0x80},
		"no RTR":            {Flags: FD | RTR},
		"CAN FD DLC 9":      {Flags: FD, DLC: 9, Len: 9},
		"CAN FD flags":      {Flags: BRS},
		"carries no data":   {Flags: RTR, DLC: 2, Len: 2},
		"DLC 3 means 3":     {DLC: 3, Len: 4},
		"DLC 16 exceeds":    {DLC: 16},
		"an error frame":    {Flags: ErrorFrame | Extended, DLC: 8, Len: 8},
		"not zero":          {DLC: 1, Len: 1, Data: [64]byte{1, 2}},
		"DLC 20 exceeds 15": {DLC: 20, Len: 8},
	}
	for want, f := range bad {
		err := f.Check()
		if err == nil || !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), strings.Fields(want)[0]) {
			t.Errorf("%+v: got %v, want an ErrFrame saying %q", f, err, want)
		}
	}
}

func TestFDLengths(t *testing.T) {
	for dlc := range uint8(16) {
		n := FDLen(dlc)
		if d, ok := FDDLC(int(n)); !ok || d != dlc {
			t.Errorf("FDDLC(%d) = %d, %v; want %d", n, d, ok, dlc)
		}
	}
	for _, n := range []int{9, 13, 63, 65, -1} {
		if _, ok := FDDLC(n); ok {
			t.Errorf("FDDLC(%d) ok", n)
		}
	}
}

// TestFrameEncoding pins the byte layout of docs/can.md and checks that the
// layout the topics are typed with reads it: what cat --decode, the report
// and the MCAP export show.
func TestFrameEncoding(t *testing.T) {
	f := frameOf(0x1abcdef, Extended|Tx, 0xde, 0xad, 0xbe, 0xef)
	var b [FDFrameSize]byte
	n := f.Encode(b[:], false)
	want := []byte{0xef, 0xcd, 0xab, 0x01, 4, 4, uint8(Extended | Tx), 0, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0}
	if n != FrameSize || string(b[:n]) != string(want) {
		t.Fatalf("Encode = % x, want % x", b[:n], want)
	}
	var g Frame
	if err := g.Decode(b[:n]); err != nil || g != f {
		t.Fatalf("Decode = %+v, %v; want %+v", g, err, f)
	}
	for _, c := range []struct {
		typ  string
		fd   bool
		size int
	}{{FrameLayout, false, FrameSize}, {FDFrameLayout, true, FDFrameSize}} {
		l, err := schema.ParseLayout([]byte(c.typ))
		if err != nil {
			t.Fatal(err)
		}
		if l.MinSize() != c.size {
			t.Errorf("layout %q is %d bytes, want %d", c.typ, l.MinSize(), c.size)
		}
		n := f.Encode(b[:], c.fd)
		js, err := l.AppendJSON(nil, b[:n])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(js), `{"id":28036591,"len":4,"dlc":4,"flags":65,"data":[222,173,190,239,0,0,0,0`) {
			t.Errorf("JSON %s", js)
		}
		back, err := l.AppendPacked(nil, js)
		if err != nil || string(back) != string(b[:n]) {
			t.Errorf("AppendPacked(AppendJSON) = % x, %v; want % x", back, err, b[:n])
		}
	}
	if err := schema.Check(FrameType); err != nil {
		t.Error(err)
	}
	if err := schema.Check(FDFrameType); err != nil {
		t.Error(err)
	}
	// A CAN FD frame does not fit a classic topic.
	fd := frameOf(1, FD, make([]byte, 12)...)
	if n := fd.Encode(b[:], false); n != 0 {
		t.Errorf("CAN FD frame encoded as classic: %d bytes", n)
	}
}

func TestFrameDecodeRefuses(t *testing.T) {
	good := frameOf(0x123, 0, 1, 2)
	var b [FDFrameSize]byte
	good.Encode(b[:], false)
	cases := map[string][]byte{
		"15 bytes":        b[:15],
		"reserved byte 7": func() []byte { c := append([]byte(nil), b[:16]...); c[7] = 1; return c }(),
		"9 data bytes":    func() []byte { c := append([]byte(nil), b[:16]...); c[4], c[5] = 9, 9; return c }(),
		"not zero":        func() []byte { c := append([]byte(nil), b[:16]...); c[15] = 1; return c }(),
		"exceeds 11 bits": func() []byte { c := append([]byte(nil), b[:16]...); c[1] = 0x08; return c }(),
	}
	for want, in := range cases {
		var f Frame
		if err := f.Decode(in); err == nil || !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), strings.Fields(want)[0]) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}
