package fuzz

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/edr-lite/edr-lite/can"
)

// readCANLog reads every frame of a log and checks the properties of a
// reader of untrusted lines: no panic, errors are *can.LineError (or the
// end), every frame read is one a bus can carry, and what is read writes
// back and reads again as the same frames.
func readCANLog(t *testing.T, r can.LogReader, asc bool) {
	var recs []can.Record
	for range 100000 { // a line is at most MaxLineBytes: the input bounds the loop too
		var rec can.Record
		err := r.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			var le *can.LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error %v is not a *can.LineError with a line", err)
			}
			return
		}
		if err := rec.Frame.Check(); err != nil {
			t.Fatalf("line %d gave a frame Check refuses: %v", r.Line(), err)
		}
		rec.Bus = bytes.Clone(rec.Bus)
		recs = append(recs, rec)
	}
	if asc {
		return
	}
	var out []byte
	for _, rec := range recs {
		if bytes.ContainsAny(rec.Bus, " \t") {
			t.Fatalf("bus %q with white space", rec.Bus)
		}
		out = can.AppendCandump(out, rec.TimeNs, string(rec.Bus), &rec.Frame)
	}
	back := can.NewCandumpReader(bytes.NewReader(out))
	for i, want := range recs {
		var rec can.Record
		if err := back.Next(&rec); err != nil {
			t.Fatalf("frame %d written back does not read: %v\n%s", i, err, out)
		}
		if rec.Frame != want.Frame || rec.TimeNs != want.TimeNs || string(rec.Bus) != string(want.Bus) {
			t.Fatalf("frame %d: %+v after a round trip, want %+v", i, rec, want)
		}
	}
}

func FuzzCandump(f *testing.F) {
	for _, s := range []string{
		"(1436509052.249713) can0 123#DEADBEEF\n",
		"(1436509052.249713) can0 12345678#DEADBEEF R\n(1.000000) can1 123#R4\n",
		"(1.000000) vcan0 123##5112233445566778899AABBCC T\n",
		"(1.000000123) can0 123#1122334455667788_E\n(2.000000) can0 20000080#0000000000000000\n",
		"DROPCOUNT: dropped 3 CAN frames on 'can0' socket (total drops 3)\n",
		"(1.000000) can0 7FF#R8_F\r\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		readCANLog(t, can.NewCandumpReader(bytes.NewReader(b)), false)
	})
}

func FuzzASC(f *testing.F) {
	for _, s := range []string{
		"date Thu Jul  9 06:17:32 2015\nbase hex  timestamps absolute\n   0.249713 1  123             Rx   d 4 DE AD BE EF\n",
		"base dec  timestamps relative\n0.1 2 291x Tx r 4\n0.2 1 ErrorFrame\n",
		"date Wed Jan 22 02:20:08.532 pm 2020\n1.000000 CANFD   1 Rx 123  1 0 9 12 00 01 02 03 04 05 06 07 08 09 0a 0b  130000  130  3000 0 0 0 0 0\n",
		"// edr-lite channel 1: body\n1.5 1 7FF Rx d F 11 22 33 44 55 66 77 88\n0.0 Start of measurement\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		readCANLog(t, can.NewASCReader(bytes.NewReader(b)), true)
	})
}

// FuzzDBC: a DBC file of any bytes parses or is an ErrDBC naming the
// file, never a panic; what parses decodes any frame without a panic, to
// exactly its messages' sizes.
func FuzzDBC(f *testing.F) {
	for _, s := range []string{
		"VERSION \"\"\nBU_: A\nBO_ 256 W: 8 A\n SG_ S : 0|16@1+ (0.01,0) [0|655.35] \"km/h\" A\n SG_ T : 7|12@0- (0.1,-5) [0|0] \"bar\" A\n",
		"BO_ 258 T: 2 X\n SG_ G : 0|4@1+ (1,0) [0|15] \"\" X\n SG_ M M : 8|2@1+ (1,0) [0|3] \"\" X\n SG_ O m0 : 10|6@1+ (2,-40) [0|0] \"C\" X\nVAL_ 258 G 0 \"P\" 1 \"R\" ;\n",
		"BO_ 2147484416 S: 64 X\n SG_ F : 0|32@1- (1,0) [0|0] \"\" X\nSIG_VALTYPE_ 2147484416 F : 1;\nBA_DEF_ BO_ \"x\" INT 0 1;\nBA_ \"x\" BO_ 2147484416 1;\nCM_ SG_ 2147484416 F \"a \\\"q\\\" b\";\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := can.ParseDBC("fuzz.dbc", b)
		if err != nil {
			if !errors.Is(err, can.ErrDBC) {
				t.Fatalf("error %v is not an ErrDBC", err)
			}
			return
		}
		var fr can.Frame
		fr.Len = 64
		for i := range fr.Data {
			fr.Data[i] = byte(i * 37)
		}
		dst := make([]byte, 64*17*8)
		for _, m := range d.Messages {
			if m.EncodedSize() > len(dst) {
				t.Fatalf("%s: %d bytes decoded", m.Name, m.EncodedSize())
			}
			m.Decode(dst, &fr)
		}
	})
}

// fuzzEth checks a CAN-over-Ethernet parser: no panic, an error wraps
// can.ErrEth and names an offset, every message is a frame a bus carries,
// and the messages written back (append) parse as the same.
func fuzzEth(t *testing.T, b []byte, parse func([]byte, func(*can.EthMessage)) (int, error),
	write func([]byte, uint16, uint16, []can.EthMessage) []byte) {
	var ms []can.EthMessage
	_, err := parse(b, func(m *can.EthMessage) {
		if err := m.Frame.Check(); err != nil {
			t.Fatalf("a message Check refuses: %v", err)
		}
		ms = append(ms, *m)
	})
	if err != nil && (!errors.Is(err, can.ErrEth) || !bytes.Contains([]byte(err.Error()), []byte("offset "))) {
		t.Fatalf("error %v: not an ErrEth with an offset", err)
	}
	// written back one device and one kind at a time
	for i := range ms {
		m := ms[i]
		if m.Frame.Flags&can.ErrorFrame != 0 {
			continue // an error seen on the bus is written as a generic one
		}
		var got []can.EthMessage
		if _, err := parse(write(nil, m.Device, 0, []can.EthMessage{m}), func(g *can.EthMessage) { got = append(got, *g) }); err != nil {
			t.Fatalf("message %d written back: %v", i, err)
		}
		if len(got) != 1 || got[0] != m {
			t.Fatalf("message %d written back: %+v, want %+v", i, got, m)
		}
	}
}

func ethSeeds(f *testing.F, write func([]byte, uint16, uint16, []can.EthMessage) []byte) {
	fr := func(id uint32, fl can.Flags, data ...byte) can.Frame {
		x := can.Frame{ID: id, Flags: fl, Len: uint8(len(data)), DLC: uint8(len(data))}
		if fl&can.FD != 0 {
			x.DLC, _ = can.FDDLC(len(data))
		}
		copy(x.Data[:], data)
		return x
	}
	f.Add(write(nil, 7, 1, []can.EthMessage{{Device: 7, Interface: 1, TimeNs: 1e18, Frame: fr(0x123, 0, 1, 2, 3)},
		{Device: 7, Interface: 2, TimeNs: 1e18 + 1, Frame: fr(0x1abcdef, can.Extended|can.Tx, 1, 2, 3, 4, 5, 6, 7, 8)}}))
	f.Add(write(nil, 7, 1, []can.EthMessage{{Device: 7, Interface: 3, Frame: fr(0x100, can.FD|can.BRS, make([]byte, 12)...)}}))
	f.Add(write(nil, 1, 1, []can.EthMessage{{Device: 1, Interface: 1, Frame: can.Frame{ID: 0x7ff, Flags: can.RTR, DLC: 3}}}))
}

func FuzzCMP(f *testing.F) {
	ethSeeds(f, can.AppendCMP)
	f.Fuzz(func(t *testing.T, b []byte) { fuzzEth(t, b, can.ParseCMP, can.AppendCMP) })
}

func FuzzTECMP(f *testing.F) {
	ethSeeds(f, can.AppendTECMP)
	f.Fuzz(func(t *testing.T, b []byte) { fuzzEth(t, b, can.ParseTECMP, can.AppendTECMP) })
}
