package replay

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/shm"
)

// stepDump is n speed samples 1 ms apart with the node's answers recorded.
func stepDump(b *testing.B, n int) string { return stepDumpT(b, n) }

func stepDumpT(b testing.TB, n int) string {
	var msgs []rec
	for i := 0; i < n; i++ {
		v := 15 + float32(i%100)/10
		ts := t0 + int64(i)*1e6
		msgs = append(msgs, rec{name: "vehicle/speed", gen: ts, done: ts, data: binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))})
		msgs = append(msgs, rec{name: "planner/brake", gen: ts, done: ts + 1000, data: decide(v, 18)})
	}
	return writeDump(b, "steps.pack", msgs, nil)
}

// pingSink signals each message it is given.
type pingSink struct{ got chan struct{} }

func (s *pingSink) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	if info.Name != "planner/brake" {
		return 0, errNotOutput
	}
	return 0, nil
}
func (s *pingSink) Now() int64                         { return time.Now().UnixNano() }
func (s *pingSink) Offline(ingest.TopicID)             {}
func (s *pingSink) Lost(ingest.TopicID, int64, uint64) {}
func (s *pingSink) IngestAt(ingest.TopicID, int64, int64, []byte) bool {
	s.got <- struct{}{}
	return true
}

var errNotOutput = shm.ErrBadOption

// BenchmarkLoopLockstep: one op is a closed loop in lockstep over 1000
// inputs (a node in the same process answering each over shm, compared
// exactly), beside the same-run baseline of 1000 bare round trips
// through the same node (publish, wait for the answer with a plain shm
// consumer). step/s is over the steps alone (the player's elapsed time
// for the loop): its ratio to the baseline's is the cost of the loop's
// path per step (the private recorder, the wake-ups, the bookkeeping).
// fixed-ms is the rest of an op: setting up the private recorder (a
// 16 MiB arena touched at start) and the consumer, the 100 ms the outputs
// must stay quiet at the end, the comparison and the tear-down.
func BenchmarkLoopLockstep(b *testing.B) {
	const steps = 1000
	dump := stepDump(b, steps)
	b.Run("loop", func(b *testing.B) {
		dir := b.TempDir()
		startNode(b, dir, func(v float32) []byte { return decide(v, 18) }, "")
		b.ReportAllocs()
		var stepping time.Duration
		for b.Loop() {
			l, err := NewLoop([]string{dump}, Options{}, LoopOptions{Expect: []string{"planner/brake"}, Listen: []Listen{{Shm: dir}},
				Lockstep: LockstepAck, Ack: "planner/brake"})
			if err != nil {
				b.Fatal(err)
			}
			res, err := l.Run(context.Background(), NewShm(ShmOptions{Dir: dir}))
			l.Close()
			if err != nil || !res.OK || res.Topics[0].Matched != steps {
				b.Fatal(err, res)
			}
			stepping += res.Stats.Elapsed
		}
		b.ReportMetric(float64(steps)*float64(b.N)/stepping.Seconds(), "step/s")
		b.ReportMetric(float64((b.Elapsed()-stepping).Milliseconds())/float64(b.N), "fixed-ms")
	})
	b.Run("baseline=roundtrip", func(b *testing.B) {
		dir := b.TempDir()
		startNode(b, dir, func(v float32) []byte { return decide(v, 18) }, "")
		b.ReportAllocs()
		for b.Loop() {
			sink := &pingSink{got: make(chan struct{}, 1)}
			c, err := shm.NewConsumer(dir, sink, shm.ConsumerOptions{SkipExisting: true, KeepFiles: true})
			if err != nil {
				b.Fatal(err)
			}
			c.Start()
			p, err := shm.NewProducer(dir, shm.ProducerOptions{Name: "vehicle/speed"})
			if err != nil {
				b.Fatal(err)
			}
			msg := make([]byte, 4)
			for i := 0; i < steps; i++ {
				binary.LittleEndian.PutUint32(msg, math.Float32bits(15+float32(i%100)/10))
				p.Publish(int64(i), msg)
				select {
				case <-sink.got:
				case <-time.After(5 * time.Second):
					b.Fatal("no answer")
				}
			}
			p.Close()
			c.Close()
		}
		b.ReportMetric(float64(steps)*float64(b.N)/b.Elapsed().Seconds(), "step/s")
	})
}
