package shm

import (
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
)

// offlineSignal passes everything to the real recorder and signals when a
// topic goes offline, so tests wait on a channel.
type offlineSignal struct {
	*engine.Recorder
	offline chan ingest.TopicID
}

func (o *offlineSignal) Offline(id ingest.TopicID) {
	o.Recorder.Offline(id)
	o.offline <- id
}

func newTestRecorder(t testing.TB, cache int64) *offlineSignal {
	t.Helper()
	rec, err := engine.New(engine.Config{CacheSize: cache, TopicBytes: cache, Pre: new(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return &offlineSignal{Recorder: rec, offline: make(chan ingest.TopicID, 4)}
}

// TestRecorderHoldsEveryMessage is the acceptance test: a Go
// producer and the C producer each publish 10^6 messages as fast as they
// can while the real engine.Recorder records; afterwards every message is
// either held by the recorder bit-exact (read back through engine.Reader) or
// counted as lost by the consumer — never both, never neither.
func TestRecorderHoldsEveryMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("10^6 messages per producer")
	}
	const n, maxLen = 1_000_000, 64
	for _, producer := range []string{"go", "c"} {
		t.Run(producer, func(t *testing.T) {
			var bin string
			if producer == "c" {
				bin = buildCProducer(t)
			}
			dir := t.TempDir()
			rec := newTestRecorder(t, 128<<20)
			c := startConsumer(t, dir, rec, ConsumerOptions{})
			name := "e2e/" + producer
			if producer == "go" {
				p := newProducer(t, dir, ProducerOptions{Name: name, Capacity: 1 << 20})
				buf := make([]byte, maxLen)
				for i := range uint64(n) {
					p.Publish(int64(i), payloadFor(buf, i, maxLen))
				}
				p.Close()
			} else {
				runCProducer(t, bin, "pub", dir, name, n, maxLen, 1<<20, func() {})
			}
			var id ingest.TopicID
			select {
			case id = <-rec.offline:
			case <-time.After(30 * time.Second):
				t.Fatal("topic never went offline")
			}
			st := c.Stats()
			ts := rec.Topics()[id]
			if ts.Info.Name != name || ts.Counters.EvictedSize+ts.Counters.EvictedAge != 0 {
				t.Fatalf("topic %+v: want %s with nothing evicted (the ring holds 10^6)", ts, name)
			}
			rd, err := rec.NewReader(id)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			var m engine.Message
			held, missing, next := uint64(0), uint64(0), uint64(0)
			for rd.ReadInto(&m) {
				i, err := checkPayload(m.Data, maxLen)
				if err != nil || i < next || m.GenNs != int64(i) {
					t.Fatalf("held message %d: index %d (want >= %d), gen %d: %v", held, i, next, m.GenNs, err)
				}
				missing += i - next
				next = i + 1
				held++
			}
			missing += n - next
			if held+st.Lost != n || missing != st.Lost || rd.Lost() != 0 || ts.Counters.LostAtSource != st.Lost {
				t.Fatalf("held %d + lost %d != %d (missing indexes %d, reader lost %d, recorder's LostAtSource %d)",
					held, st.Lost, n, missing, rd.Lost(), ts.Counters.LostAtSource)
			}
			t.Logf("%s producer: %d held bit-exact, %d lost (counted)", producer, held, st.Lost)
		})
	}
}
