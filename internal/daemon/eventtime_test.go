package daemon

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/config"
)

// TestEventTimesResolve: which topics get an event time, and from which
// table: the first [[topic]] matching the topic when it sets event_time
// (unset keeps the listener's, as for every [[topic]] key), else the
// listener it came from; a JSON stamp (sec + nanosec) and a packed field with its
// declared unit read; a path the topic's type lacks is logged once with
// topic and cause, and the topic is not ordered.
func TestEventTimesResolve(t *testing.T) {
	f := &config.File{
		Topics: []config.Topic{
			{Match: "cam/*", TypeKeys: config.TypeKeys{EventTime: "header.stamp", EventTimeUnit: "stamp"}},
			{Match: "imu/raw"}, // event_time unset: the listener's applies
			{Match: "gps", TypeKeys: config.TypeKeys{EventTime: "nope", EventTimeUnit: "ns"}},
		},
		Sources: config.Sources{UDP: []config.UDPSource{{Listen: "127.0.0.1:30490", TypeKeys: config.TypeKeys{EventTime: "t"}}}},
	}
	var logs bytes.Buffer
	e := newEventTimes(f)
	e.log = slog.New(slog.NewTextHandler(&logs, nil))
	eo := e.order(f)
	jsonT := ingest.Type{MessageEncoding: ingest.EncodingJSON}
	imu := ingest.Packed("demo.Imu", "u64le t (ns); f32le ax")
	cam := eo.EventTime(&ingest.TopicInfo{Name: "cam/front", Type: jsonT})
	if cam == nil || cam.Path != "header.stamp" || cam.Unit != "stamp" {
		t.Fatalf("cam/front: %+v", cam)
	}
	if ns, ok := cam.Ns([]byte(`{"header": {"stamp": {"sec": 2, "nanosec": 5}}}`)); !ok || ns != 2e9+5 {
		t.Errorf("cam stamp: %d %v", ns, ok)
	}
	udp := eo.EventTime(&ingest.TopicInfo{Name: "imu/other", Source: "udp:127.0.0.1:30490", Type: imu})
	if udp == nil || udp.Path != "t" || udp.Unit != "ns" {
		t.Fatalf("udp topic: %+v", udp)
	}
	if ns, ok := udp.Ns(binary.LittleEndian.AppendUint64(nil, 42)); !ok || ns != 42 {
		t.Errorf("udp t: %d %v", ns, ok)
	}
	if got := eo.EventTime(&ingest.TopicInfo{Name: "imu/raw", Source: "udp:127.0.0.1:30490", Type: imu}); got == nil || got.Path != "t" {
		t.Errorf("imu/raw: %+v, want the listener's t", got)
	}
	if got := eo.EventTime(&ingest.TopicInfo{Name: "other", Source: "shm:/x", Type: imu}); got != nil {
		t.Errorf("other: %+v", got)
	}
	for range 3 {
		if got := eo.EventTime(&ingest.TopicInfo{Name: "gps", Type: imu}); got != nil {
			t.Errorf("gps: %+v, want none (no field nope)", got)
		}
	}
	if n := strings.Count(logs.String(), "event time not readable"); n != 1 || !strings.Contains(logs.String(), "topic=gps") || !strings.Contains(logs.String(), "no field nope") {
		t.Errorf("%d log lines:\n%s", n, logs.String())
	}
	if newEventTimes(&config.File{Topics: []config.Topic{{Match: "a"}}}) != nil {
		t.Error("event times without any event_time")
	}
}
