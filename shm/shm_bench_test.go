package shm

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"

	"golang.org/x/sys/unix"
)

var benchSizes = []int{64, 1024, 64 << 10}

// benchRing is the size of every ring in the benchmarks: the segment's, the
// engine topic's and the copy baseline's, so that the ratios compare like
// with like.
const benchRing = 8 << 20

var sinkBytes uint64 // benchmark results land here so nothing is optimised away

// BenchmarkPublish is the producer's cost per message (no consumer running:
// the ring is overwritten continuously, the steady state of a lagging
// recorder).
func BenchmarkPublish(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			p := newProducer(b, tmpfsDir(b), ProducerOptions{Name: "bench", Capacity: benchRing})
			payload := make([]byte, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				p.Publish(1, payload)
			}
			sinkBytes += p.Stats().Bytes
		})
	}
}

// BenchmarkCopy is the same-run baseline: a plain copy of each payload into
// a ring of the same size (benchRing).
func BenchmarkCopy(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			ring := make([]byte, benchRing)
			payload := make([]byte, size)
			off := 0
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if off+size > len(ring) {
					off = 0
				}
				copy(ring[off:], payload)
				off += size
			}
			sinkBytes += uint64(ring[0]) + uint64(off)
		})
	}
}

// pacedSink counts what reaches the recorder so the benchmark producer can
// stay within the ring (measuring throughput without loss).
type pacedSink struct {
	*engine.Recorder
	ingested atomic.Uint64
	_        [56]byte
}

func (s *pacedSink) IngestAt(id ingest.TopicID, c, g int64, p []byte) bool {
	ok := s.Recorder.IngestAt(id, c, g, p)
	s.ingested.Add(1)
	return ok
}

// ReserveAt and Commit count the records the consumer hands over directly
// (ingest.DirectSink) as IngestAt counts the others: a refused one, or a
// committed one.
func (s *pacedSink) ReserveAt(id ingest.TopicID, c, g int64, n int) ([]byte, bool) {
	dst, ok := s.Recorder.ReserveAt(id, c, g, n)
	if !ok {
		s.ingested.Add(1)
	}
	return dst, ok
}

func (s *pacedSink) Commit(id ingest.TopicID) bool {
	ok := s.Recorder.Commit(id)
	s.ingested.Add(1)
	return ok
}

// CommitBatch counts a run the consumer hands over (ingest.BatchSink) once;
// a run the recorder refuses (StageBatch 0) goes to IngestAt, which counts.
func (s *pacedSink) CommitBatch(id ingest.TopicID) int {
	n := s.Recorder.CommitBatch(id)
	s.ingested.Add(uint64(n))
	return n
}

// BenchmarkThroughput moves messages producer → shared memory → consumer →
// engine.Recorder. The producer keeps at most half a ring in flight, so
// nothing is lost and the figure is the sustainable end-to-end rate; compare
// with BenchmarkCopy of the same size.
func BenchmarkThroughput(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			const capa = benchRing
			dir := tmpfsDir(b)
			rec, err := engine.New(engine.Config{CacheSize: benchRing, TopicBytes: benchRing, Pre: new(time.Hour)})
			if err != nil {
				b.Fatal(err)
			}
			defer rec.Close()
			sink := &pacedSink{Recorder: rec}
			c := startConsumer(b, dir, sink, ConsumerOptions{})
			p := newProducer(b, dir, ProducerOptions{Name: "tput", Capacity: capa})
			window := uint64(capa / 2 / int(recordSize(uint64(size))))
			payload := make([]byte, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			start := time.Now()
			sent, limit := uint64(0), window
			for b.Loop() {
				// Benchmark pacing only (Publish itself never waits): look
				// at the consumer's progress only when the window is used
				// up, so the producer does not bounce its cache line.
				for spins := 1; sent >= limit; spins++ {
					if limit = sink.ingested.Load() + window; sent >= limit && spins%1024 == 0 {
						runtime.Gosched()
					}
				}
				p.Publish(1, payload)
				sent++
			}
			for sink.ingested.Load() < sent {
				runtime.Gosched()
			}
			el := time.Since(start)
			b.ReportMetric(float64(sent)/el.Seconds(), "msg/s")
			if st := c.Stats(); st.Lost != 0 {
				b.Fatalf("lost %d with pacing", st.Lost)
			}
			c.Close()
		})
	}
}

// BenchmarkLatency measures publish → IngestAt latency for messages sent one
// at a time with a pause between them (the consumer goes to sleep, as with
// a 1 kHz sensor), per wait mode; p50 and p99 are reported.
func BenchmarkLatency(b *testing.B) {
	for _, mode := range []struct {
		name string
		w    WaitMode
	}{{"futex", WaitFutex}, {"poll", WaitPoll}} {
		b.Run("wait="+mode.name, func(b *testing.B) {
			dir := tmpfsDir(b)
			sink := &latencySink{}
			startConsumer(b, dir, sink, ConsumerOptions{Wait: mode.w})
			p := newProducer(b, dir, ProducerOptions{Name: "lat"})
			payload := make([]byte, 64)
			p.Publish(time.Now().UnixNano(), payload)
			for sink.n.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			sink.lat = make([]int64, 0, 1<<16)
			sink.n.Store(0)
			b.ReportAllocs()
			sent := uint64(0)
			for b.Loop() {
				time.Sleep(200 * time.Microsecond)
				p.Publish(time.Now().UnixNano(), payload)
				sent++
				for sink.n.Load() < sent {
					runtime.Gosched()
				}
			}
			lat := slices.Clone(sink.lat)
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
			}
		})
	}
}

type latencySink struct {
	n   atomic.Uint64
	lat []int64
}

func (s *latencySink) Discover(ingest.TopicInfo) (ingest.TopicID, error) { return 0, nil }
func (s *latencySink) Now() int64                                        { return 0 }
func (s *latencySink) Offline(ingest.TopicID)                            {}
func (s *latencySink) Lost(ingest.TopicID, int64, uint64)                {}
func (s *latencySink) IngestAt(_ ingest.TopicID, _, gen int64, _ []byte) bool {
	if len(s.lat) < cap(s.lat) {
		s.lat = append(s.lat, time.Now().UnixNano()-gen)
	}
	s.n.Add(1)
	return true
}

// BenchmarkIdleCPU measures the CPU the consumer burns following idle
// segments: each iteration is 200ms of wall time with segments producers
// that publish nothing; reported as percent of one core. segments=0 is the
// baseline (the Go runtime alone).
func BenchmarkIdleCPU(b *testing.B) {
	for _, tc := range []struct {
		segments int
		w        WaitMode
		name     string
	}{{0, WaitFutex, "baseline"}, {100, WaitFutex, "futex"}, {100, WaitPoll, "poll"}} {
		b.Run(fmt.Sprintf("segments=%d/wait=%s", tc.segments, tc.name), func(b *testing.B) {
			dir := tmpfsDir(b)
			sink := newRecSink()
			c := startConsumer(b, dir, sink, ConsumerOptions{Wait: tc.w})
			for i := range tc.segments {
				newProducer(b, dir, ProducerOptions{Name: fmt.Sprintf("idle/%d", i), Capacity: MinCapacity})
			}
			sink.waitFor(b, "discovery", func() bool { return c.Stats().Segments == tc.segments })
			time.Sleep(300 * time.Millisecond) // let every follower go to sleep
			cpu0, wall0 := cpuTime(), time.Now()
			for b.Loop() {
				time.Sleep(200 * time.Millisecond)
			}
			b.ReportMetric(100*float64(cpuTime()-cpu0)/float64(time.Since(wall0)), "cpu-%")
		})
	}
}

func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tmpfsDir is a temporary segment directory in /dev/shm (where segments live
// in production: no writeback faults), or t.TempDir when there is none.
func tmpfsDir(t testing.TB) string {
	dir, err := os.MkdirTemp("/dev/shm", "edr-shm-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
