//go:build unix

package step_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/testutil"
	"github.com/edr-lite/edr-lite/step"
)

// The cost of recording a tick in process. The reference's recording
// rhythm costs 1–10 µs a frame; docs/performance.md ("In-process step
// recording") holds the figures and the load they were measured at.

// jsonBrakeLoop is the brake node's loop with JSON codecs (the obstacle
// distance finite: JSON has no NaN).
func jsonBrakeLoop() step.Loop[Speed, Brake] {
	return step.Loop[Speed, Brake]{Name: "brake", Input: "vehicle/speed", Output: "planner/brake",
		In: step.JSON[Speed]("edr.example.Speed"), Out: step.JSON[Brake]("edr.example.Brake")}
}

// benchStep is the brake node's decision with a finite obstacle distance.
func benchStep(ctx context.Context, in Speed) (Brake, error) {
	b, err := (&brakeNode{threshold: 18, gain: 0.01}).Step(ctx, in)
	b.Obstacle = 120
	return b, err
}

var sinkBrake Brake

func recordedBench(b *testing.B, codec string) (step.Func[Speed, Brake], *step.Recorder) {
	rec, err := step.Create(b.TempDir()+"/bench.pack", step.RecorderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	loop := jsonBrakeLoop()
	if codec == "packed" {
		loop = brakeLoop(b)
	}
	f, err := step.Record(rec, loop, benchStep)
	if err != nil {
		b.Fatal(err)
	}
	return f, rec
}

// BenchmarkRecord: one op is one tick of the brake node through its
// recorded step (the input and the output encoded into the recorder's
// batch; the batches written by the recorder's goroutine to a pack file),
// with packed and JSON codecs, beside the bare step (bare). The ctx carries
// the tick's time (WithTime). ns/op is the wall time per tick, stalls
// included (ticks waiting for the writer when it falls behind); cpu-ns/tick
// the process's CPU time per tick, the writer's and Close's included.
func BenchmarkRecord(b *testing.B) {
	ctx := step.WithTime(context.Background(), t0)
	for _, codec := range []string{"packed", "json"} {
		b.Run("codec="+codec, func(b *testing.B) {
			f, rec := recordedBench(b, codec)
			b.ReportAllocs()
			b.SetBytes(4 + 13)
			i := 0
			cpu0 := processCPU()
			for b.Loop() {
				out, err := f(ctx, Speed{speedAt(i)})
				if err != nil {
					b.Fatal(err)
				}
				sinkBrake = out
				i++
			}
			b.StopTimer()
			st := rec.Stats()
			if err := rec.Close(); err != nil {
				b.Fatal(err)
			}
			// the CPU of the ticks and of the writer goroutine, the
			// file made durable: what recording costs the machine,
			// whatever else shares its cores
			b.ReportMetric(float64(processCPU()-cpu0)/float64(i), "cpu-ns/tick")
			if st.Loops[0].Ticks != uint64(i) || st.Loops[0].Outputs != uint64(i) {
				b.Fatalf("recorded %+v of %d ticks", st.Loops[0], i)
			}
			b.ReportMetric(float64(st.Stalls), "stalls")
		})
	}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			out, _ := benchStep(ctx, Speed{speedAt(i)})
			sinkBrake = out
			i++
		}
	})
}

// BenchmarkRecordMedian gives the figure docs/performance.md quotes: the
// median over rounds of the time per recorded tick (rounds of 4096 ticks,
// each beside 4096 ticks of the bare step, the order flipping every round:
// testutil.SameRunRatio), and what recording adds to a tick (median
// recorded - median bare). One op is one round.
func BenchmarkRecordMedian(b *testing.B) {
	const ticks, rounds = 4096, 31
	ctx := step.WithTime(context.Background(), t0)
	for _, codec := range []string{"packed", "json"} {
		b.Run("codec="+codec, func(b *testing.B) {
			f, rec := recordedBench(b, codec)
			defer rec.Close()
			item := func() {
				for i := range ticks {
					sinkBrake, _ = f(ctx, Speed{speedAt(i)})
				}
			}
			ref := func() {
				for i := range ticks {
					sinkBrake, _ = benchStep(ctx, Speed{speedAt(i)})
				}
			}
			var tick, bare time.Duration
			for b.Loop() {
				_, tm, rm := testutil.SameRunRatio(rounds, item, ref)
				tick, bare = tm/ticks, rm/ticks
			}
			b.ReportMetric(float64(tick.Nanoseconds()), "ns/tick")
			b.ReportMetric(float64(bare.Nanoseconds()), "bare-ns/tick")
			b.ReportMetric(float64((tick - bare).Nanoseconds()), "added-ns/tick")
			b.ReportMetric(testing.AllocsPerRun(100, func() { sinkBrake, _ = f(ctx, Speed{19}) }), "allocs/tick")
		})
	}
}

// processCPU is the process's CPU time (user and system), ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
