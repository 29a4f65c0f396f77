//go:build !race

package dump

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
)

// TestEventOrderIngestAllocs: a topic with an event time is ordered in the
// dump's write path, never on ingest: ingesting its packets out of
// event-time order allocates nothing, with the EventOrder transform
// configured and a dump of the topic written in between.
func TestEventOrderIngestAllocs(t *testing.T) {
	eo := &EventOrder{EventTime: onlyTopic("imu"), Window: 60 * time.Millisecond}
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(time.Duration(0)), Guard: new(time.Duration(0))},
		Dump: Config{Transforms: []Transform{eo}}})
	id, err := r.Discover(ingest.TopicInfo{Name: "imu", Type: ingest.Packed("demo.Imu", "u64le t (ns); u32le n")})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 12)
	i := 0
	ingestOne := func() {
		ns := t0 + int64(i)*int64(time.Millisecond)
		vc.Set(ns)
		binary.LittleEndian.PutUint64(buf, uint64(ns-int64((i*7919)%51)*int64(time.Millisecond)))
		binary.LittleEndian.PutUint32(buf[8:], uint32(i))
		if !r.IngestAt(id, ns, 0, buf) {
			t.Fatal("ingest refused")
		}
		i++
	}
	for range 1000 {
		ingestOne()
	}
	tid, _ := r.Trigger(TriggerParams{Reason: "alloc"})
	if res := wait(t, r, tid); res.Err != nil || res.Messages == 0 {
		t.Fatalf("%+v", res)
	}
	if n := testing.AllocsPerRun(10000, ingestOne); n != 0 {
		t.Errorf("%v allocs per ingest of an event-time topic, want 0", n)
	}
}
