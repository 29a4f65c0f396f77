//go:build !race

package dump

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/evidence/crypt"
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

// TestEncryptedDumpBytesAllocated: an encrypted dump written after
// another takes the buffers between its age stream and its file's writer
// thread from the dumps before it (durable.Behind.Release): it allocates
// less than 512 KiB more than the same dump in clear (age's own chunk
// buffer and header), where two 1 MiB buffers per dump were allocated
// before.
func TestEncryptedDumpBytesAllocated(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	perDump := func(cfg Config) uint64 {
		r, vc, _ := dumpRecorder(t, rigConfig{
			Rec:  engine.Config{Pre: new(2 * time.Second), Post: new(10 * time.Millisecond), Guard: new(time.Duration(0)), TopicBytes: 8 << 20, CacheSize: 32 << 20},
			Dump: cfg,
		})
		ids := discover(t, r, "a")
		p := make([]byte, 4000)
		ns := t0
		least := uint64(1 << 62)
		for i := range 4 { // the first warms up; the least of the others
			for range 1000 { // 4 MB: several of the file's buffers
				ns += ms
				vc.Set(ns)
				r.Ingest(ids["a"], ns-1, p)
			}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			trig, err := r.Trigger(TriggerParams{Reason: "alloc"})
			if err != nil {
				t.Fatal(err)
			}
			ns += 100 * ms
			vc.Set(ns)
			if res := wait(t, r, trig); res.Err != nil || res.Bytes < 3<<20 {
				t.Fatalf("%+v", res)
			}
			runtime.ReadMemStats(&m1)
			if i > 0 {
				least = min(least, m1.TotalAlloc-m0.TotalAlloc)
			}
		}
		return least
	}
	plain := perDump(Config{FrameSize: 64 << 10})
	enc := perDump(Config{NewWriter: EncryptedWriter([]age.Recipient{id.Recipient()}, false, false), Extension: PackExt + crypt.Ext, FrameSize: 64 << 10})
	t.Logf("bytes allocated per dump: %d in clear, %d encrypted", plain, enc)
	if enc > plain+512<<10 {
		t.Errorf("an encrypted dump allocates %d bytes, %d more than in clear: want under 512 KiB more", enc, enc-plain)
	}
}
