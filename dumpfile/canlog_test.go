package dumpfile

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/can"
)

// TestBusOf: the bus a frame topic is written as in a log: the topic less
// can/, its error topic's /errors, a per-ID topic's ID (can.IDTopic).
func TestBusOf(t *testing.T) {
	for _, c := range []struct {
		topic, channel string
		errs           bool
		want           string
	}{
		{"can/can0", "", false, "can0"},
		{"can/can0/errors", "", true, "can0"},
		{"can/can0/0x123", "", false, "can0"},
		{"can/body/0x01ABCDEFx", "", false, "body"},
		{"veh/body", "", false, "veh/body"},
		{"can/can0/0xZZ", "", false, "can0/0xZZ"},
		{"can/can0", "left", false, "can0#left"},
		{"can/a b", "", false, "a_b"},
	} {
		if got := busOf(SourceTopic{Name: c.topic, Channel: c.channel}, c.errs); got != c.want {
			t.Errorf("busOf(%q, %q) = %q, want %q", c.topic, c.channel, got, c.want)
		}
	}
}

// canDump writes a pack dump of CAN frames (can/can0, a per-ID topic
// can/can1/0x101, an error topic) and a topic that is not CAN, and
// returns its path and the DBC that decodes it.
func canDump(t testing.TB) (string, *can.DBC) {
	t.Helper()
	d, err := can.LoadDBC(filepath.Join("..", "can", "testdata", "vehicle.dbc"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "can.pack")
	w, err := Create(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"can/can0", "can/can1/0x101", "can/can0/errors"} {
		if err := w.SetType(topic, can.FrameType); err != nil {
			t.Fatal(err)
		}
	}
	frame := func(topic string, ns int64, f can.Frame) {
		var b [can.FrameSize]byte
		f.Encode(b[:], false)
		if err := w.Write(topic, ns, ns-5, b[:]); err != nil {
			t.Fatal(err)
		}
	}
	brake := can.Frame{ID: 0x101, Len: 8, DLC: 8, Data: [64]byte{0xAB, 0xC8, 0xFF, 0x38, 0, 0, 0, 7}}
	frame("can/can0", 1000, brake)
	w.Write("vehicle/speed", 1500, 0, []byte{1, 2})
	frame("can/can0", 2000, can.Frame{ID: 0x555, Len: 1, DLC: 1})
	frame("can/can0/errors", 2500, can.Frame{ID: 0x80, Len: 8, DLC: 8, Flags: can.ErrorFrame})
	frame("can/can1/0x101", 3000, brake)
	frame("can/can0", 4000, can.Frame{ID: 0x101, Len: 1, DLC: 1})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, d
}

// TestDBCsDecodeADump: with SetDBCs, a dump's CAN frame topics are given
// decoded through the Timeline as a bus recording with the DBC records
// them: after each frame a DBC message has the ID of, the message on its
// bus's topic (a per-ID topic's bus), with the frame's times; the Source
// lists the decoded topics and each frame topic's accounting; a bus that
// no DBC names is not decoded; without SetDBCs nothing is.
func TestDBCsDecodeADump(t *testing.T) {
	path, d := canDump(t)
	read := func() (got []string, src *Source) {
		tl, err := OpenTimeline(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tl.Close() })
		it, err := tl.Messages()
		if err != nil {
			t.Fatal(err)
		}
		for {
			m, err := it.Next()
			if err == io.EOF {
				return got, tl.Sources()[0]
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s@%d/%d", m.Topic(), m.TimeNs, m.GenNs))
		}
	}
	got, src := read()
	if want := "can/can0@1000/995 vehicle/speed@1500/0 can/can0@2000/1995 can/can0/errors@2500/2495 can/can1/0x101@3000/2995 can/can0@4000/3995"; strings.Join(got, " ") != want {
		t.Errorf("without SetDBCs: %v", got)
	}
	if src.DecodedTopics() != nil {
		t.Error("decoded topics without SetDBCs")
	}

	o := &DBCs{Buses: map[string]*can.DBC{"can0": d, "can1": d}}
	SetDBCs(o)
	defer SetDBCs(nil)
	got, src = read()
	want := "can/can0@1000/995 can/can0/Brake@1000/995 vehicle/speed@1500/0 can/can0@2000/1995 can/can0/errors@2500/2495 " +
		"can/can1/0x101@3000/2995 can/can1/Brake@3000/2995 can/can0@4000/3995"
	if strings.Join(got, " ") != want {
		t.Errorf("decoded:\n%v\nwant\n%v", got, want)
	}
	var names []string
	for _, tp := range src.DecodedTopics() {
		names = append(names, fmt.Sprintf("%s:%d:%s", tp.Name, tp.Messages, tp.Type.Schema.Name))
	}
	if strings.Join(names, " ") != "can/can0/Brake:1:dbc.Brake can/can1/Brake:1:dbc.Brake" {
		t.Errorf("decoded topics %v", names)
	}
	di, ok := src.DumpInfo()
	accs := map[string]string{}
	for _, a := range di.Topics {
		if a.CAN != nil {
			accs[a.Topic] = fmt.Sprintf("%d/%d%v/%d%v", a.CAN.Decoded, a.CAN.Unknown, a.CAN.UnknownIDs, a.CAN.Short, a.CAN.ShortIDs)
		}
	}
	if !ok || accs["can/can0#"] != "1/1[555]/1[101]" || accs["can/can1/0x101#"] != "1/0[]/0[]" || len(accs) != 2 {
		t.Errorf("accounting %v", accs)
	}
	if missing, found, frames := o.Unfound(); len(missing) != 0 || strings.Join(found, ",") != "can0,can1" || !frames {
		t.Errorf("Unfound: %v %v %v", missing, found, frames)
	}

	// One bus only.
	SetDBCs(&DBCs{Buses: map[string]*can.DBC{"can1": d}})
	if got, _ = read(); strings.Contains(strings.Join(got, " "), "can/can0/Brake") || !strings.Contains(strings.Join(got, " "), "can/can1/Brake") {
		t.Errorf("can1 only: %v", got)
	}
}
