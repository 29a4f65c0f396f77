package shm

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// The shm gate (issue #18, item 5; docs/performance.md, "shm"): producer
// → segment → consumer → engine.Recorder of a round of messages against a
// same-run copy of the same payloads into a ring of the same size, the
// median over interleaved rounds of copy time / pipeline time.
// The producer publishes (Publish: a copy of a payload it holds) or, at
// 64 KiB, also writes each message in place (Reserve, a memset of the
// reserved bytes standing for the producer's own encoding, Commit;
// BenchmarkInPlaceVsPublish compares the two in one run).
var throughputGates = []struct {
	size    int
	inPlace bool
	goal    float64
	floor   float64 // enforced while the goal is out of reach on the 2-vCPU machine
}{
	{64, false, 0.15, 0.02},
	{1024, false, 0.4, 0.02},
	{64 << 10, false, 0.7, 0.05},
	{64 << 10, true, 0.7, 0.05},
}

func gateName(size int, inPlace bool) string {
	if inPlace {
		return fmt.Sprintf("size=%d/reserve", size)
	}
	return fmt.Sprintf("size=%d", size)
}

// pipeRound moves msgs messages of size bytes through the pipeline (at
// most half a ring in flight, as BenchmarkThroughput) and waits until the
// recorder has them all.
type pipeRound struct {
	sink    *pacedSink
	p       *Producer
	c       *Consumer
	payload []byte
	inPlace bool // Reserve, memset, Commit instead of Publish
	window  uint64
	sent    uint64
	ring    []byte // the copy baseline's
	off     int
}

func newPipeRound(tb testing.TB, size int) *pipeRound {
	return newPipeRoundOpts(tb, size, ConsumerOptions{})
}

func newPipeRoundOpts(tb testing.TB, size int, opts ConsumerOptions) *pipeRound {
	return newPipeRoundSink(tb, size, opts, false)
}

// newPipeRoundSink is newPipeRoundOpts with, when noBatch, a recorder that
// takes no runs (chunkOnly): small records take the chunk path.
func newPipeRoundSink(tb testing.TB, size int, opts ConsumerOptions, noBatch bool) *pipeRound {
	dir := tmpfsDir(tb)
	rec, err := engine.New(engine.Config{CacheSize: benchRing, TopicBytes: benchRing, Pre: new(time.Hour)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rec.Close() })
	sink := &pacedSink{Recorder: rec}
	var consumerSink ingest.Sink = sink
	if noBatch {
		consumerSink = chunkOnly{sink}
	}
	c := startConsumer(tb, dir, consumerSink, opts)
	p := newProducer(tb, dir, ProducerOptions{Name: "ratio", Capacity: benchRing})
	return &pipeRound{sink: sink, p: p, c: c, payload: make([]byte, size),
		window: uint64(benchRing / 2 / int(recordSize(uint64(size)))), ring: make([]byte, benchRing)}
}

func (r *pipeRound) pipe(msgs int) {
	limit := r.sink.ingested.Load() + r.window
	for range msgs {
		for spins := 1; r.sent >= limit; spins++ {
			if limit = r.sink.ingested.Load() + r.window; r.sent >= limit && spins%1024 == 0 {
				runtime.Gosched()
			}
		}
		if r.inPlace {
			if buf, err := r.p.Reserve(len(r.payload)); err == nil {
				clear(buf)
				r.p.Commit(1, len(buf))
			}
		} else {
			r.p.Publish(1, r.payload)
		}
		r.sent++
	}
	for r.sink.ingested.Load() < r.sent {
		runtime.Gosched()
	}
}

func (r *pipeRound) copyRing(msgs int) {
	n := len(r.payload)
	for range msgs {
		if r.off+n > len(r.ring) {
			r.off = 0
		}
		copy(r.ring[r.off:], r.payload)
		r.off += n
	}
}

// msgsPerRound keeps a round near 16 MiB of payload (at least 64 messages).
func msgsPerRound(size int) int { return max(16<<20/size, 64) }

func (r *pipeRound) ratio(tb testing.TB, rounds int) (ratio float64, pipe time.Duration) {
	n := msgsPerRound(len(r.payload))
	r.pipe(n) // warm
	ratio, pipe, _ = testutil.SameRunRatio(rounds, func() { r.pipe(n) }, func() { r.copyRing(n) })
	if st := r.c.Stats(); st.Lost != 0 {
		tb.Fatalf("lost %d with pacing", st.Lost)
	}
	return ratio, pipe
}

// BenchmarkThroughputRatio reports the pipeline's speed as a fraction of
// the same run's copy (ratio/copy, the median of the per-round ratios;
// every b.Loop iteration is one round of both, ~16 MiB of payload).
//
//	go test -run '^$' -bench ThroughputRatio -benchtime 9x ./shm/
func BenchmarkThroughputRatio(b *testing.B) {
	for _, g := range throughputGates {
		b.Run(gateName(g.size, g.inPlace), func(b *testing.B) {
			r := newPipeRound(b, g.size)
			r.inPlace = g.inPlace
			n := msgsPerRound(g.size)
			r.pipe(n)
			var ratios, rates []float64
			b.ReportAllocs()
			for b.Loop() { // timed inline: ReportAllocs counts the pipeline's allocations only
				t0 := time.Now()
				r.pipe(n)
				tp := time.Since(t0)
				t0 = time.Now()
				r.copyRing(n)
				tc := time.Since(t0)
				ratios = append(ratios, float64(tc)/float64(tp))
				rates = append(rates, float64(n)/tp.Seconds())
			}
			b.ReportMetric(testutil.Median(ratios), "ratio/copy")
			b.ReportMetric(testutil.Median(rates), "msgs/s")
			r.c.Close()
		})
	}
}

// TestThroughputSpeedGate fails a size below its floor and logs whether it
// reached its goal. A speed gate: EDR_SPEED_GATES=1.
//
//	EDR_SPEED_GATES=1 go test -run TestThroughputSpeedGate -v ./shm/
func TestThroughputSpeedGate(t *testing.T) {
	if !testutil.SpeedGates() {
		t.Skip("a speed gate: runs alone in CI's bench-gates step (EDR_SPEED_GATES=1), not beside other tests on shared cores")
	}
	for _, g := range throughputGates {
		r := newPipeRound(t, g.size)
		r.inPlace = g.inPlace
		name := gateName(g.size, g.inPlace)
		// 9 rounds; a result below the goal gets up to 2 more tries of 9
		// (the best counts: the pipeline needs both cores, the copy one).
		var ratio float64
		var pipe time.Duration
		for try := 0; try < 3; try++ {
			rt, p := r.ratio(t, 9)
			if rt > ratio {
				ratio, pipe = rt, p
			}
			if ratio >= g.goal {
				break
			}
		}
		n := msgsPerRound(g.size)
		t.Logf("%s: %.3f of copy (goal %.2f), %.2f M msg/s", name, ratio, g.goal, float64(n)/pipe.Seconds()/1e6)
		switch {
		case ratio >= g.goal:
		case ratio < g.floor:
			t.Errorf("%s: %.3f of the same run's copy, below the regression floor %.2f (goal %.2f)", name, ratio, g.floor, g.goal)
		default:
			t.Logf("%s: GOAL NOT MET on this machine: %.3f of copy, goal %.2f; gated at the floor %.2f (docs/performance.md)", name, ratio, g.goal, g.floor)
		}
		r.c.Close()
	}
}

// BenchmarkDirectThreshold picks DefaultDirectMin: for each record size,
// the pipeline with every record going straight into the recorder
// (DirectMin 1) against the chunk copy (DirectMin never), interleaved round
// by round in the same run; chunk/direct is the median of the per-round
// time ratios (> 1: the direct path is faster).
//
//	go test -run '^$' -bench DirectThreshold -benchtime 9x ./shm/
func BenchmarkDirectThreshold(b *testing.B) {
	for _, size := range []int{512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			direct := newPipeRoundOpts(b, size, ConsumerOptions{DirectMin: 1})
			chunk := newPipeRoundOpts(b, size, ConsumerOptions{DirectMin: math.MaxUint32})
			n := msgsPerRound(size)
			direct.pipe(n)
			chunk.pipe(n)
			var ratios []float64
			for b.Loop() {
				ratio, _, _ := testutil.SameRunRatio(1, func() { direct.pipe(n) }, func() { chunk.pipe(n) })
				ratios = append(ratios, ratio)
			}
			b.ReportMetric(testutil.Median(ratios), "chunk/direct")
			direct.c.Close()
			chunk.c.Close()
		})
	}
}

// BenchmarkDrainDirect measures the consumer's own work per record, the
// producer out of the timing: each round publishes a ring's worth of
// records (untimed) into two segments, then drains one through the direct
// path into a recorder and the other through the chunk copy into another,
// timed, in the same round. chunk/direct is the median of the per-round
// time ratios (> 1: the direct path costs less); ns/record-direct and
// ns/record-chunk are medians too.
//
//	go test -run '^$' -bench DrainDirect -benchtime 15x ./shm/
func BenchmarkDrainDirect(b *testing.B) {
	for _, size := range []int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			direct := newDrainSide(b, "direct", 1, false)
			chunk := newDrainSide(b, "chunk", math.MaxUint32, false)
			benchDrainSides(b, size, direct, chunk, "direct")
		})
	}
}

// drainSide is a producer and a segment drained by hand into its own
// recorder (BenchmarkDrainDirect, BenchmarkDrainBatch).
type drainSide struct {
	p    *Producer
	s    *segment
	sink ingest.Sink
	id   ingest.TopicID
}

// newDrainSide makes a drainSide whose consumer takes records of directMin
// bytes and more direct, and runs of the others when batch.
func newDrainSide(b *testing.B, name string, directMin uint32, batch bool) *drainSide {
	dir := tmpfsDir(b)
	rec, err := engine.New(engine.Config{CacheSize: benchRing, TopicBytes: benchRing, Pre: new(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rec.Close() })
	p := newProducer(b, dir, ProducerOptions{Name: name, Capacity: benchRing})
	opts := ConsumerOptions{DirectMin: directMin}
	opts.setDefaults()
	s, err := openSegment(p.Path(), &opts, &bigBuffer{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.close)
	sd := &drainSide{p: p, s: s, sink: chunkOnly{rec}}
	s.direct = rec
	if batch {
		s.batcher, sd.sink = rec, rec
	}
	if sd.id, err = rec.Discover(s.info); err != nil {
		b.Fatal(err)
	}
	return sd
}

// round publishes k records of payload (untimed), then drains them all,
// timed.
func (sd *drainSide) round(b *testing.B, payload []byte, k int) time.Duration {
	for range k {
		sd.p.Publish(1, payload)
	}
	t0 := time.Now()
	for {
		_, done, err := sd.s.drain(sd.sink, sd.id, drainBudget)
		if err != nil {
			b.Fatal(err)
		}
		if done {
			break
		}
	}
	return time.Since(t0)
}

// benchDrainSides times half a ring of size-byte records through each of
// two sides in the same rounds and reports chunk/NAME (the median of the
// per-round time ratios, > 1: the first side costs less) and each side's
// ns/record.
func benchDrainSides(b *testing.B, size int, first, chunk *drainSide, name string) {
	payload := make([]byte, size)
	k := benchRing / 2 / int(recordSize(uint64(size)))
	first.round(b, payload, k)
	chunk.round(b, payload, k)
	var ratios, nsF, nsC []float64
	for b.Loop() {
		tf, tc := first.round(b, payload, k), chunk.round(b, payload, k)
		ratios = append(ratios, float64(tc)/float64(tf))
		nsF = append(nsF, float64(tf.Nanoseconds())/float64(k))
		nsC = append(nsC, float64(tc.Nanoseconds())/float64(k))
	}
	if l := first.s.lost.Load() + chunk.s.lost.Load(); l != 0 {
		b.Fatalf("lost %d", l)
	}
	b.ReportMetric(testutil.Median(ratios), "chunk/"+name)
	b.ReportMetric(testutil.Median(nsF), "ns/record-"+name)
	b.ReportMetric(testutil.Median(nsC), "ns/record-chunk")
}

// BenchmarkDrainChunk is the consumer's work per small record through the
// chunk path into the real recorder, the producer untimed (it publishes
// half a ring between drains). It uses only what main's consumer also
// has, so the file can be dropped into another build to compare the two.
//
//	go test -run '^$' -bench DrainChunk -benchtime 20x ./shm/
func BenchmarkDrainChunk(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			dir := tmpfsDir(b)
			rec, err := engine.New(engine.Config{CacheSize: benchRing, TopicBytes: benchRing, Pre: new(time.Hour)})
			if err != nil {
				b.Fatal(err)
			}
			defer rec.Close()
			p := newProducer(b, dir, ProducerOptions{Name: "chunk", Capacity: benchRing})
			opts := ConsumerOptions{}
			opts.setDefaults()
			s, err := openSegment(p.Path(), &opts, &bigBuffer{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			id, _ := rec.Discover(s.info)
			payload := make([]byte, size)
			k := benchRing / 2 / int(recordSize(uint64(size)))
			var total time.Duration
			recs := 0
			for b.Loop() {
				b.StopTimer()
				for range k {
					p.Publish(1, payload)
				}
				b.StartTimer()
				t0 := time.Now()
				for {
					_, done, err := s.drain(rec, id, drainBudget)
					if err != nil {
						b.Fatal(err)
					}
					if done {
						break
					}
				}
				total += time.Since(t0)
				recs += k
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(recs), "ns/record")
		})
	}
}

// chunkOnly is a recorder that takes reservations but no runs, so small
// records take the chunk path (a copy of the chunk, IngestAt per record).
type chunkOnly struct{ ingest.DirectSink }

// BenchmarkBatchVsChunk runs two whole pipelines in one run, rounds
// interleaved: the recorder taking runs of records straight from the
// segment (the batch path) and one taking no runs (the chunk copy and
// IngestAt per record, as before). chunk/batch is the median of the
// per-round time ratios (> 1: the batch path is faster).
//
//	go test -run '^$' -bench BatchVsChunk -benchtime 15x ./shm/
func BenchmarkBatchVsChunk(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			batch := newPipeRoundSink(b, size, ConsumerOptions{}, false)
			chunk := newPipeRoundSink(b, size, ConsumerOptions{}, true)
			n := msgsPerRound(size)
			batch.pipe(n)
			chunk.pipe(n)
			var ratios []float64
			for b.Loop() {
				ratio, _, _ := testutil.SameRunRatio(1, func() { batch.pipe(n) }, func() { chunk.pipe(n) })
				ratios = append(ratios, ratio)
			}
			b.ReportMetric(testutil.Median(ratios), "chunk/batch")
			batch.c.Close()
			chunk.c.Close()
		})
	}
}

// BenchmarkDrainBatch is the consumer's work per small record through the
// batch path (runs straight from the segment into the recorder) against
// the chunk path, the producer untimed, both in the same rounds: each
// round publishes half a ring into each of two segments, then drains one
// into a recorder through each path, timed. chunk/batch is the median of
// the per-round time ratios (> 1: the batch path costs less).
//
//	go test -run '^$' -bench DrainBatch -benchtime 20x ./shm/
func BenchmarkDrainBatch(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			batch := newDrainSide(b, "batch", DefaultDirectMin, true)
			chunk := newDrainSide(b, "chunk", DefaultDirectMin, false)
			benchDrainSides(b, size, batch, chunk, "batch")
		})
	}
}

// handoff is the least any two-core producer → consumer pipeline does: the
// producer writes each message into an 8 MiB ring and publishes an atomic
// write cursor; the consumer, on its own goroutine, copies each message out
// into a second 8 MiB ring (the recorder's, here a plain slice) and
// publishes its read cursor; at most half the ring is in flight. No record
// headers, no sequence checks, no wake-ups, no recorder: a floor for
// BenchmarkThroughputRatio, not a design.
type handoff struct {
	size    int
	ring    []byte
	dst     []byte
	payload []byte
	doff    int
	w, r    atomic.Uint64
	fill    bool // the producer writes in place (clear) instead of copying a payload
	batch   bool // the consumer loads the write cursor once per batch, not once per message
	msgs    chan int
	done    chan struct{}
}

func newHandoff(size int, fill, batch bool) *handoff {
	h := &handoff{size: size, ring: make([]byte, benchRing), dst: make([]byte, benchRing),
		payload: make([]byte, size), fill: fill, batch: batch,
		msgs: make(chan int), done: make(chan struct{})}
	for i := range h.ring { // fault the pages in before timing
		h.ring[i], h.dst[i] = 1, 1
	}
	go h.consume()
	return h
}

func (h *handoff) slots() uint64 { return uint64(benchRing / h.size) }

func (h *handoff) produce(n int) {
	h.msgs <- n
	window := h.slots() / 2
	for range n {
		w := h.w.Load()
		for spins := 1; w-h.r.Load() >= window; spins++ {
			if spins%1024 == 0 {
				runtime.Gosched()
			}
		}
		slot := h.ring[int(w%h.slots())*h.size:][:h.size]
		if h.fill {
			clear(slot)
		} else {
			copy(slot, h.payload)
		}
		h.w.Store(w + 1)
	}
	<-h.done
}

func (h *handoff) consume() {
	for n := range h.msgs {
		for got := 0; got < n; {
			r := h.r.Load()
			w := h.w.Load()
			for spins := 1; w == r; spins++ {
				if spins%1024 == 0 {
					runtime.Gosched()
				}
				w = h.w.Load()
			}
			if !h.batch {
				w = r + 1
			}
			for ; r < w; r++ {
				if h.doff+h.size > len(h.dst) {
					h.doff = 0
				}
				copy(h.dst[h.doff:], h.ring[int(r%h.slots())*h.size:][:h.size])
				h.doff += h.size
				got++
				if !h.batch {
					h.r.Store(r + 1)
				}
			}
			h.r.Store(r)
		}
		h.done <- struct{}{}
	}
}

// BenchmarkHandoffFloor times the bare hand-off (handoff) against the same
// copy as BenchmarkThroughputRatio, interleaved round by round, for each
// way of handing over: the producer copying a payload (copy) or writing
// the slot in place (fill, what a producer API that lends its slot would
// save at most), the consumer taking one message per cursor load (each)
// or all there are (batch). ratio/copy as in BenchmarkThroughputRatio.
//
//	go test -run '^$' -bench 'HandoffFloor|ThroughputRatio' -benchtime 15x ./shm/
func BenchmarkHandoffFloor(b *testing.B) {
	for _, size := range []int{64, 1024, 64 << 10} {
		for _, v := range []struct {
			name        string
			fill, batch bool
		}{{"copy-each", false, false}, {"copy-batch", false, true}, {"fill-batch", true, true}} {
			b.Run(fmt.Sprintf("size=%d/%s", size, v.name), func(b *testing.B) {
				h := newHandoff(size, v.fill, v.batch)
				defer close(h.msgs)
				base := &pipeRound{payload: make([]byte, size), ring: make([]byte, benchRing)}
				n := msgsPerRound(size)
				h.produce(n) // warm
				var ratios []float64
				for b.Loop() {
					ratio, _, _ := testutil.SameRunRatio(1, func() { h.produce(n) }, func() { base.copyRing(n) })
					ratios = append(ratios, ratio)
				}
				b.ReportMetric(testutil.Median(ratios), "ratio/copy")
			})
		}
	}
}

// BenchmarkInPlaceVsPublish runs two pipelines of 64 KiB messages in one
// run, rounds interleaved: one producer publishing (a copy of a payload it
// holds), one writing in place (Reserve, memset, Commit).
// publish/reserve is the median of the per-round time ratios (> 1: in
// place is faster).
//
//	go test -run '^$' -bench InPlaceVsPublish -benchtime 15x ./shm/
func BenchmarkInPlaceVsPublish(b *testing.B) {
	const size = 64 << 10
	pub, res := newPipeRound(b, size), newPipeRound(b, size)
	res.inPlace = true
	n := msgsPerRound(size)
	pub.pipe(n)
	res.pipe(n)
	var ratios []float64
	for b.Loop() {
		ratio, _, _ := testutil.SameRunRatio(1, func() { res.pipe(n) }, func() { pub.pipe(n) })
		ratios = append(ratios, ratio)
	}
	b.ReportMetric(testutil.Median(ratios), "publish/reserve")
	pub.c.Close()
	res.c.Close()
}
