package scripts

import (
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
)

// BenchmarkLive is the sustained rate of one rule reading a ring: ingest a
// batch of 256 messages, then the rule's reader delivers them to
// threshold.lua, all on one goroutine (one core). The baseline does the
// same ingest and ring reads with no rule.
func BenchmarkLive(b *testing.B) {
	const batch = 256
	setup := func(b *testing.B) (*engine.Recorder, ingest.TopicID, *clock.Virtual) {
		vc := clock.NewVirtual(base)
		rec, err := engine.New(engine.Config{Clock: vc, CacheSize: 4 << 20, TopicBytes: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rec.Close() })
		id, err := rec.Discover(ingest.TopicInfo{Name: "vehicle/speed"})
		if err != nil {
			b.Fatal(err)
		}
		return rec, id, vc
	}
	payload := f32(20)
	feed := func(rec *engine.Recorder, id ingest.TopicID, vc *clock.Virtual) {
		for range batch {
			ts := vc.Advance(time.Millisecond)
			rec.IngestAt(id, ts, 0, payload)
		}
	}
	b.Run("rule=none", func(b *testing.B) {
		rec, id, vc := setup(b)
		rd, err := rec.NewReader(id)
		if err != nil {
			b.Fatal(err)
		}
		defer rd.Close()
		var m engine.Message
		b.SetBytes(batch * int64(len(payload)))
		perMessage(b, batch, func() {
			feed(rec, id, vc)
			for rd.ReadInto(&m) {
			}
		})
	})
	b.Run("rule=threshold", func(b *testing.B) {
		rec, id, vc := setup(b)
		r, _ := shipped(b, "threshold", map[string]string{"topic": "vehicle/speed", "high": "1e9"})
		l := &Live{rec: rec, opts: LiveOptions{MaxLag: time.Hour}.withDefaults()}
		ru := &runner{live: l, rule: r, known: map[ingest.TopicID]bool{}}
		ru.discover()
		defer func() {
			for _, tr := range ru.readers {
				tr.rd.Close()
			}
		}()
		b.SetBytes(batch * int64(len(payload)))
		perMessage(b, batch, func() {
			feed(rec, id, vc)
			if n := ru.drain(batch + 1); n != batch {
				b.Fatalf("delivered %d of %d", n, batch)
			}
		})
		if st := r.Status(); st.Skipped != 0 || st.Disabled {
			b.Fatalf("%+v", st)
		}
	})
}
