package can

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// sampleLog is a candump log with every shape of frame.
const sampleLog = `(1436509052.249713) can0 123#DEADBEEF
(1436509052.249800) can0 12345678#DEADBEEF R
(1436509052.250000) can1 123#R4
(1436509052.250001) can1 7FF#R8_E T
(1436509052.250002) can0 123##5112233445566778899AABBCC
(1436509052.250003) can0 00000123##3
(1436509052.250004) can0 123#1122334455667788_E
(1436509052.250005) can0 20000080#0000000000000000
(1436509052.250006) can0 456#
(1436509052.250007123) can0 456#00 T
`

func readLog(t *testing.T, r LogReader) []Record {
	t.Helper()
	var out []Record
	for {
		var rec Record
		err := r.Next(&rec)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("line %d: %v", r.Line(), err)
		}
		rec.Bus = append([]byte(nil), rec.Bus...)
		if err := rec.Frame.Check(); err != nil {
			t.Fatalf("line %d: the reader made a frame Check refuses: %v", r.Line(), err)
		}
		out = append(out, rec)
	}
}

func TestCandumpRoundTrip(t *testing.T) {
	recs := readLog(t, NewCandumpReader(strings.NewReader(sampleLog)))
	if len(recs) != 10 {
		t.Fatalf("%d frames", len(recs))
	}
	want := []Frame{
		frameOf(0x123, 0, 0xde, 0xad, 0xbe, 0xef),
		frameOf(0x12345678, Extended, 0xde, 0xad, 0xbe, 0xef),
		{ID: 0x123, Flags: RTR, DLC: 4},
		{ID: 0x7ff, Flags: RTR | Tx, DLC: 14},
		frameOf(0x123, FD|BRS, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc),
		frameOf(0x123, FD|Extended|BRS|ESI),
		{ID: 0x123, DLC: 14, Len: 8, Data: [64]byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}},
		{ID: 0x80, Flags: ErrorFrame, DLC: 8, Len: 8},
		frameOf(0x456, 0),
		frameOf(0x456, Tx, 0),
	}
	for i, r := range recs {
		if r.Frame != want[i] {
			t.Errorf("frame %d: %+v, want %+v", i, r.Frame, want[i])
		}
	}
	if recs[0].TimeNs != 1436509052249713000 || recs[9].TimeNs != 1436509052250007123 || string(recs[2].Bus) != "can1" {
		t.Errorf("times %d %d, bus %s", recs[0].TimeNs, recs[9].TimeNs, recs[2].Bus)
	}
	// Written back and read again: the same frames and times.
	var out []byte
	for _, r := range recs {
		out = AppendCandump(out, r.TimeNs, string(r.Bus), &r.Frame)
	}
	again := readLog(t, NewCandumpReader(bytes.NewReader(out)))
	for i := range recs {
		if again[i].Frame != recs[i].Frame || again[i].TimeNs != recs[i].TimeNs || string(again[i].Bus) != string(recs[i].Bus) {
			t.Errorf("frame %d after a round trip: %+v, want %+v", i, again[i], recs[i])
		}
	}
	if !strings.HasPrefix(string(out), "(1436509052.249713) can0 123#DEADBEEF\n(1436509052.249800) can0 12345678#DEADBEEF\n") {
		t.Errorf("written:\n%s", out)
	}
}

// TestCandumpBadLines: every wrong shape is an error naming the line and
// the column at fault.
func TestCandumpBadLines(t *testing.T) {
	cases := map[string]string{
		"(1.000000) can0":                                   "line 2: want (TIME) BUS FRAME",
		"1.000000 can0 123#00":                              "line 2, column 1: the time is not in parentheses",
		"(1.0000) can0 123#00":                              "needs 6 or 9 decimal places",
		"(1.00000a) can0 123#00":                            "not SECONDS.FRACTION",
		"(99999999999.000000) can0 123#00":                  "not SECONDS.FRACTION",
		"(1.000000) can0 12#00":                             "column 17: the ID \"12\" is not 3 hex digits",
		"(1.000000) can0 800#00":                            "exceeds 7FF",
		"(1.000000) can0 123456789#00":                      "not 3 hex digits",
		"(1.000000) can0 40000000#00":                       "exceeds 1FFFFFFF",
		"(1.000000) can0 123":                               "has no '#'",
		"(1.000000) can0 123#0":                             "an odd number of hex digits",
		"(1.000000) can0 123#0G":                            "column 21: \"0G\" is not a hex byte",
		"(1.000000) can0 123#001122334455667788":            "more than 8 data bytes",
		"(1.000000) can0 123##0001122334455667788":          "9 data bytes: not a CAN FD length",
		"(1.000000) can0 123##8":                            "CAN FD flags",
		"(1.000000) can0 123##":                             "without the CAN FD flags",
		"(1.000000) can0 123#R9":                            "RTR length",
		"(1.000000) can0 123#R4x":                           "after the RTR",
		"(1.000000) can0 123#0011_E":                        "'_X' is only for 8 classic bytes",
		"(1.000000) can0 123#1122334455667788_3":            "raw DLC",
		"(1.000000) can0 20000080#00":                       "an error frame has 8 data bytes",
		"(1.000000) can0 60000080#0000000000000000":         "bits beyond the error class",
		"(1.000000) can0 20000080#R":                        "cannot be an RTR",
		"(1.000000) can0 123#00 X":                          "want R or T",
		"(1.000000) can0 123#00 R extra":                    "found 5 fields",
		"DROPCOUNT: dropped many":                           "without its count",
		"DROPCOUNT: dropped 3 CAN frames":                   "without its 'bus'",
		"(1.000000) " + strings.Repeat("b", 65) + " 123#00": "a bus name of 65 bytes",
		strings.Repeat("x", MaxLineBytes+10):                "line 2: longer than 4096 bytes",
	}
	for line, want := range cases {
		r := NewCandumpReader(strings.NewReader("(0.000000) can0 001#\n" + line + "\n"))
		var rec Record
		if err := r.Next(&rec); err != nil {
			t.Fatalf("first line: %v", err)
		}
		err := r.Next(&rec)
		var le *LineError
		if !errors.As(err, &le) || !errors.Is(err, ErrLog) || le.Line != 2 || !strings.Contains(err.Error(), want) {
			t.Errorf("%.50q: got %v, want line 2 saying %q", line, err, want)
		}
	}
	r := NewCandumpReader(strings.NewReader("DROPCOUNT: dropped 3 CAN frames on 'can0' socket (total drops 3)\n\n(1.000000) can0 123#00\n"))
	recs := readLog(t, r)
	if len(recs) != 1 || r.Dropped()["can0"] != 3 {
		t.Errorf("%d frames, dropped %v", len(recs), r.Dropped())
	}
}

func TestASCRoundTrip(t *testing.T) {
	recs := readLog(t, NewCandumpReader(strings.NewReader(sampleLog)))
	var buf bytes.Buffer
	w, err := NewASCWriter(&buf, recs[0].TimeNs, []string{"can0", "can1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r.TimeNs, int(r.Bus[3]-'0')+1, &r.Frame); err != nil {
			t.Fatal(err)
		}
	}
	if w.Rounded != 1 || w.ErrorDetails != 0 {
		t.Errorf("rounded %d, error details %d", w.Rounded, w.ErrorDetails)
	}
	ar := NewASCReader(&buf)
	again := readLog(t, ar)
	if len(again) != len(recs) || !ar.HasDate() {
		t.Fatalf("%d frames back from ASC:\n%s", len(again), buf.String())
	}
	for i := range recs {
		want := recs[i]
		want.TimeNs -= want.TimeNs % 1000
		if again[i].Frame != want.Frame || again[i].TimeNs != want.TimeNs || string(again[i].Bus) != string(want.Bus) {
			t.Errorf("frame %d: %+v at %d on %s, want %+v at %d on %s", i, again[i].Frame, again[i].TimeNs, again[i].Bus,
				want.Frame, want.TimeNs, want.Bus)
		}
	}
	// Channel names other than canN survive through the comment.
	buf.Reset()
	w, _ = NewASCWriter(&buf, 0, []string{"body", "chassis"})
	w.Write(5000, 2, &recs[0].Frame)
	back := readLog(t, NewASCReader(&buf))
	if len(back) != 1 || string(back[0].Bus) != "chassis" || back[0].TimeNs != 5000 {
		t.Errorf("named channel: %+v", back)
	}
}

func TestASCBadLines(t *testing.T) {
	head := "date Thu Jul  9 06:17:32 2015\nbase hex  timestamps absolute\n"
	cases := map[string]string{
		"base oct timestamps absolute": "want \"base hex|dec",
		"1.0 1 123 Rx d 2 00":          "needs 2 data bytes",
		"1.0 1 800 Rx d 0":             "exceeds 7FF",
		"1.0 1 123 Rx d G":             "DLC \"G\"",
		"1.0 1 123 Rx d 1 0x100":       "not a data byte",
		"1.0 1 123 Rx r 12":            "RTR DLC",
		"1.0 0 123 Rx d 0":             "channel \"0\"",
		"1.0 1 ZZZ Rx d 0":             "not a number",
		"1.0000001 1 123 Rx d 0":       "up to 6 decimal places",
		"1.0 CANFD 1 Rx 123 1 0 9 12":  "12 data bytes and duration",
		"1.0 CANFD 1 Rx 123 1 0 9 13 00 00 00 00 00 00 00 00 00 00 00 00 00 1 2 1000": "CAN FD DLC 9 means 12 bytes, not 13",
		"1.0 CANFD 1 Up 123 1 0 9 12":          "direction",
		"1.0 CANFD 1 Rx 123 1 0 1 1 00 1 2 10": "an RTR frame with 1 data bytes",
		"1.0 CANFD 1 Rx 123 1 0 1 1 00 1 2 ZZ": "flags",
		"hello":                                "not an ASC line",
		"date Thu Foo  9 06:17:32 2015":        "",
	}
	for line, want := range cases {
		r := NewASCReader(strings.NewReader(head + line + "\n"))
		var rec Record
		err := r.Next(&rec)
		if want == "" { // a later date line is ignored, an early bad one is not
			continue
		}
		var le *LineError
		if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60q: got %v, want line 3 saying %q", line, err, want)
		}
	}
	if err := NewASCReader(strings.NewReader("date Thu Foo  9 06:17:32 2015\n")).Next(&Record{}); err == nil || !strings.Contains(err.Error(), "line 1: want \"date") {
		t.Errorf("bad date: %v", err)
	}
	// Events other than frames are skipped and counted.
	r := NewASCReader(strings.NewReader(head + "0.0 Start of measurement\n0.5 1 Statistic: D 0 R 0\n1.0 1 123 Rx d 1 05  Length = 1 BitCount = 2 ID = 291\n"))
	recs := readLog(t, r)
	if len(recs) != 1 || r.Skipped() != 2 || recs[0].Frame.Data[0] != 5 {
		t.Errorf("%d frames, %d skipped", len(recs), r.Skipped())
	}
}
