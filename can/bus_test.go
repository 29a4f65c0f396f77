package can

import (
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
)

func newRecorder(t testing.TB) *engine.Recorder {
	t.Helper()
	rec, err := engine.New(engine.Config{CacheSize: 16 << 20, TopicBytes: 4 << 20, Pre: new(time.Minute), Clock: clock.System{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.Close(); err != nil {
			t.Error(err)
		}
	})
	return rec
}

// topicByName returns the recorder's status of topic name.
func topicByName(t *testing.T, rec *engine.Recorder, name string) engine.TopicStatus {
	t.Helper()
	for _, ts := range rec.Topics() {
		if ts.Info.Name == name {
			return ts
		}
	}
	t.Fatalf("no topic %s", name)
	return engine.TopicStatus{}
}

// readAll returns the messages of topic name, in order.
func readAll(t *testing.T, rec *engine.Recorder, name string) []engine.Message {
	t.Helper()
	var out []engine.Message
	_, _, err := rec.ReadRange(topicByName(t, rec, name).ID, 0, 1<<62, func(m *engine.Message) bool {
		c := *m
		c.Data = append([]byte(nil), m.Data...)
		out = append(out, c)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBusRecordsFrames(t *testing.T) {
	rec := newRecorder(t)
	bus, err := NewBus(rec, BusOptions{Name: "can0", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	in := []Frame{
		frameOf(0x123, 0, 1, 2, 3),
		frameOf(0x1234567, Extended, 9),
		{ID: 0x7ff, Flags: RTR, DLC: 4},
	}
	for i := range in {
		if !bus.Record(int64(1000+i), 0, &in[i]) {
			t.Fatalf("frame %d refused", i)
		}
	}
	ts := topicByName(t, rec, "can/can0")
	if !ts.Info.Type.Equal(FrameType) || ts.Info.Source != "test" {
		t.Fatalf("topic typed %v from %q", ts.Info.Type, ts.Info.Source)
	}
	got := readAll(t, rec, "can/can0")
	if len(got) != len(in) {
		t.Fatalf("%d messages, want %d", len(got), len(in))
	}
	for i, m := range got {
		var f Frame
		if err := f.Decode(m.Data); err != nil || f != in[i] || m.CaptureNs != int64(1000+i) || len(m.Data) != FrameSize {
			t.Errorf("message %d: %+v (%v) at %d, %d bytes; want %+v", i, f, err, m.CaptureNs, len(m.Data), in[i])
		}
	}

	// The first CAN FD frame turns the topic into a CAN FD one (a type
	// change); frames keep their order and bytes.
	fd := frameOf(0x10, FD|BRS, make([]byte, 48)...)
	fd.Data[47] = 0x5a
	classic := frameOf(0x11, 0, 7)
	bus.Record(2000, 0, &fd)
	bus.Record(2001, 0, &classic)
	ts = topicByName(t, rec, "can/can0")
	if !ts.Info.Type.Equal(FDFrameType) || ts.TypeChanges != 1 {
		t.Fatalf("after a CAN FD frame: type %v, %d changes", ts.Info.Type, ts.TypeChanges)
	}
	got = readAll(t, rec, "can/can0")
	for i, want := range []Frame{fd, classic} {
		var f Frame
		m := got[len(in)+i]
		if err := f.Decode(m.Data); err != nil || f != want || len(m.Data) != FDFrameSize {
			t.Errorf("frame after the change %d: %+v (%v), %d bytes", i, f, err, len(m.Data))
		}
	}

	// Error frames go to their own topic and are counted by class.
	busOff := Frame{ID: ErrClassBusOff, Flags: ErrorFrame, DLC: 8, Len: 8}
	restarted := Frame{ID: ErrClassRestarted, Flags: ErrorFrame, DLC: 8, Len: 8}
	bus.Record(3000, 0, &busOff)
	bus.Record(3001, 0, &restarted)
	errs := readAll(t, rec, "can/can0/errors")
	if len(errs) != 2 {
		t.Fatalf("%d error frames recorded", len(errs))
	}
	bus.Lost(3002, 5)
	st := bus.Stats()
	want := BusStats{Frames: 5, ErrorFrames: 2, BusOff: 1, Restarts: 1, Lost: 5}
	if st.Frames != want.Frames || st.ErrorFrames != want.ErrorFrames || st.BusOff != want.BusOff ||
		st.Restarts != want.Restarts || st.Lost != want.Lost || st.Rejected != 0 {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if c := topicByName(t, rec, "can/can0").Counters; c.LostAtSource != 5 {
		t.Errorf("the recorder counted %d lost at the source, want 5", c.LostAtSource)
	}
	bus.Close()
	if topicByName(t, rec, "can/can0").Online || topicByName(t, rec, "can/can0/errors").Online {
		t.Error("topics online after Close")
	}
}

func TestBusFDFromTheStart(t *testing.T) {
	rec := newRecorder(t)
	bus, err := NewBus(rec, BusOptions{Name: "x", Topic: "veh/body", FD: true})
	if err != nil {
		t.Fatal(err)
	}
	f := frameOf(1, 0, 1)
	bus.Record(1, 0, &f)
	if ts := topicByName(t, rec, "veh/body"); !ts.Info.Type.Equal(FDFrameType) || ts.TypeChanges != 0 {
		t.Errorf("type %v, %d changes", ts.Info.Type, ts.TypeChanges)
	}
	if _, err := NewBus(rec, BusOptions{}); err == nil {
		t.Error("a bus without a name")
	}
}

// refusing is a sink that refuses every topic.
type refusing struct{ ingest.Sink }

func (refusing) Discover(ingest.TopicInfo) (ingest.TopicID, error) { return 0, errRefused }

var errRefused = ErrOptions

func TestBusTopicRefused(t *testing.T) {
	if _, err := NewBus(refusing{}, BusOptions{Name: "can0"}); err == nil {
		t.Fatal("NewBus succeeded with a refused topic")
	}
}

// TestBusDecodes: a bus with a DBC records each frame it knows decoded on
// the message's topic too, typed by the message's layout, and counts what
// it could not decode, naming the first IDs.
func TestBusDecodes(t *testing.T) {
	rec := newRecorder(t)
	d := loadDBC(t, "testdata/vehicle.dbc")
	bus, err := NewBus(rec, BusOptions{Name: "can0", DBC: d})
	if err != nil {
		t.Fatal(err)
	}
	frames := []Frame{
		frameOf(256, 0, 0x10, 0x27, 0x11, 0x27, 0x00, 0x00, 0xff, 0xff),
		frameOf(257, 0, 0xAB, 0xC8, 0xFF, 0x38, 0, 0, 0, 0x07),
		frameOf(0x555, 0, 1),
		frameOf(256, 0, 1, 2),
		frameOf(0x556, 0, 1),
		frameOf(0x555, 0, 1),
		{ID: 256, Flags: RTR, DLC: 8},
	}
	for i := range frames {
		bus.Record(int64(100+i), 0, &frames[i])
	}
	ws := topicByName(t, rec, "can/can0/WheelSpeeds")
	if ws.Info.Type.Schema.Name != "dbc.WheelSpeeds" || ws.Counters.Written != 1 {
		t.Errorf("WheelSpeeds: %v, %d written", ws.Info.Type, ws.Counters.Written)
	}
	got := readAll(t, rec, "can/can0/Brake")
	if len(got) != 1 || got[0].CaptureNs != 101 {
		t.Fatalf("Brake: %+v", got)
	}
	st := bus.Stats()
	if st.Frames != 7 || st.Decoded != 2 || st.Unknown != 3 || st.Short != 1 || st.Messages["Brake"] != 1 ||
		len(st.UnknownIDs) != 2 || st.UnknownIDs[0] != 0x555 || st.UnknownIDs[1] != 0x556 || len(st.ShortIDs) != 1 || st.ShortIDs[0] != 256 {
		t.Errorf("stats %+v", st)
	}
	bus.Close()
	if topicByName(t, rec, "can/can0/Brake").Online {
		t.Error("a message topic online after Close")
	}
}

// TestBusPerID: with PerID each identifier's frames have a topic of
// their own, which turns CAN FD alone; errors keep theirs.
func TestBusPerID(t *testing.T) {
	rec := newRecorder(t)
	bus, err := NewBus(rec, BusOptions{Name: "can0", PerID: true})
	if err != nil {
		t.Fatal(err)
	}
	frames := []Frame{frameOf(0x123, 0, 1), frameOf(0x1abcdef, Extended, 2), frameOf(0x123, 0, 3), frameOf(0x124, FD, make([]byte, 12)...)}
	for i := range frames {
		if !bus.Record(int64(i+1), 0, &frames[i]) {
			t.Fatalf("frame %d refused", i)
		}
	}
	if n := len(readAll(t, rec, "can/can0/0x123")); n != 2 {
		t.Errorf("can/can0/0x123: %d frames", n)
	}
	if n := len(readAll(t, rec, "can/can0/0x01ABCDEFx")); n != 1 {
		t.Errorf("can/can0/0x01ABCDEFx: %d frames", n)
	}
	if ts := topicByName(t, rec, "can/can0/0x124"); !ts.Info.Type.Equal(FDFrameType) {
		t.Errorf("0x124: %v", ts.Info.Type)
	}
	if ts := topicByName(t, rec, "can/can0/0x123"); !ts.Info.Type.Equal(FrameType) {
		t.Errorf("0x123: %v", ts.Info.Type)
	}
	for _, ts := range rec.Topics() {
		if ts.Info.Name == "can/can0" {
			t.Error("a per-ID bus has a bus topic")
		}
	}
	bus.Close()
}
