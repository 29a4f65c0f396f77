package report

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
)

const ms = int64(1e6)

// TestTimingHandComputed writes a pack dump with known intervals, a gap,
// producer-time reordering, latencies and a capture time that goes back,
// and checks the timing analysis against values worked out by hand (in the
// comments; quantiles are nearest-rank, exact below ExactValues values).
func TestTimingHandComputed(t *testing.T) {
	t0 := int64(1796218339) * 1e9
	// topic a: capture times (ms)    0 10 20 31 40 50 60 100 110 120 130 139
	//          latency cap-gen (ms)  2  2  3  2  5 16  2   2   4   2   2  15
	//          producer time (ms)   -2  8 17 29 35 34 58  98 106 118 128 124
	// producer time goes back twice (34 < 35, 124 < 128): out of order 2.
	capA := []int64{0, 10, 20, 31, 40, 50, 60, 100, 110, 120, 130, 139}
	latA := []int64{2, 2, 3, 2, 5, 16, 2, 2, 4, 2, 2, 15}
	// topic b: capture times 0 10 5 20 (ms): 5 goes back (counted, not an
	// interval); intervals 10 (0→10) and 10 (10→20).
	capB := []int64{0, 10, 5, 20}
	p := filepath.Join(t.TempDir(), "timing.pack")
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test", CreatedNs: t0})
	if err != nil {
		t.Fatal(err)
	}
	type msg struct {
		topic    string
		cap, gen int64
	}
	var msgs []msg
	ia, ib := 0, 0
	for ia < len(capA) || ib < len(capB) {
		if ib >= len(capB) || ia < len(capA) && capA[ia] <= capB[ib] && ib != 2 {
			msgs = append(msgs, msg{"a", t0 + capA[ia]*ms, t0 + (capA[ia]-latA[ia])*ms})
			ia++
		} else {
			msgs = append(msgs, msg{"b", t0 + capB[ib]*ms, 0})
			ib++
		}
	}
	for _, m := range msgs {
		if err := w.Add(m.topic, "", nil, m.gen, m.cap, []byte{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SetDumpInfo(dumpinfo.Info{StartNs: t0, EndNs: t0 + 139*ms}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := FromDumps([]string{p}, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Topics) != 2 || r.Topics[0].Name != "a" || r.Topics[1].Name != "b" {
		t.Fatalf("topics %+v", r.Topics)
	}
	a := r.Topics[0].Timing
	// intervals (ms): 10 10 11 9 10 10 40 10 10 10 9; sorted 9 9 10 10 10 10 10 10 10 11 40
	// p50 = rank ceil(5.5)=6 → 10; p99 = rank ceil(10.89)=11 → 40; mean 139/11
	wantInterval := Dist{Count: 11, Min: 9 * ms, P50: 10 * ms, P99: 40 * ms, Max: 40 * ms, Mean: float64(139*ms) / 11}
	// jitter |iv-10|: 0 0 1 1 0 0 30 0 0 0 1; sorted 0×7 1×3 30: p50 rank 6 → 0, p99 rank 11 → 30; mean 33/11
	wantJitter := Dist{Count: 11, Min: 0, P50: 0, P99: 30 * ms, Max: 30 * ms, Mean: float64(33*ms) / 11}
	// latency sorted 2×7 3 4 5 15 16: p50 rank 6 → 2, p99 rank ceil(11.88)=12 → 16; mean 57/12
	wantLatency := Dist{Count: 12, Min: 2 * ms, P50: 2 * ms, P99: 16 * ms, Max: 16 * ms, Mean: float64(57*ms) / 12}
	checkDist(t, "a interval", a.Interval, wantInterval)
	checkDist(t, "a jitter", a.Jitter, wantJitter)
	checkDist(t, "a latency", a.Latency, wantLatency)
	if a.OutOfOrder != 2 || a.CaptureBackwards != 0 {
		t.Errorf("a: out of order %d, capture backwards %d; want 2, 0", a.OutOfOrder, a.CaptureBackwards)
	}
	// rate (12-1) / 0.139 s; largest gap 40 ms from 60 ms; gaps over 3×10 ms: that one
	if d := a.RateHz - 11/0.139; d > 1e-9 || d < -1e-9 {
		t.Errorf("a rate %g, want %g", a.RateHz, 11/0.139)
	}
	if a.LargestGapNs != 40*ms || a.LargestGapAtNs != t0+60*ms {
		t.Errorf("a largest gap %d at %d", a.LargestGapNs, a.LargestGapAtNs-t0)
	}
	if g := r.Topics[0].Gaps; len(g) != 1 || g[0] != (Gap{t0 + 60*ms, 40 * ms}) {
		t.Errorf("a gaps %+v", g)
	}
	b := r.Topics[1].Timing
	checkDist(t, "b interval", b.Interval, Dist{Count: 2, Min: 10 * ms, P50: 10 * ms, P99: 10 * ms, Max: 10 * ms, Mean: float64(10 * ms)})
	if b.CaptureBackwards != 1 || b.OutOfOrder != 0 || b.Latency.Count != 0 {
		t.Errorf("b: capture backwards %d, out of order %d, latency count %d; want 1, 0, 0", b.CaptureBackwards, b.OutOfOrder, b.Latency.Count)
	}
	if len(r.Topics[1].Gaps) != 0 {
		t.Errorf("b gaps %+v", r.Topics[1].Gaps)
	}
}

func checkDist(t *testing.T, what string, got, want Dist) {
	t.Helper()
	if got.Count != want.Count || got.Min != want.Min || got.P50 != want.P50 || got.P99 != want.P99 || got.Max != want.Max ||
		got.Mean-want.Mean > 1e-3 || want.Mean-got.Mean > 1e-3 {
		t.Errorf("%s = %+v\nwant %+v", what, got, want)
	}
}

// TestLargestGaps: over random intervals the analyzer keeps exactly the
// MaxGaps largest, and reports those above GapFactor × the median.
func TestLargestGaps(t *testing.T) {
	a, err := NewAnalyzer(Options{}, 0, 1e12, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := a.Topic(TopicSpec{Name: "x"})
	var ivs []int64
	at := int64(0)
	rng := uint64(12345)
	for i := 0; i < 5000; i++ {
		rng = rng*6364136223846793005 + 1442695040888963407
		iv := int64(1e6 + rng>>44) // about 1 to 2 ms
		if i%617 == 0 {
			iv = int64(5e6 + rng>>40) // a few long ones
		}
		if i > 0 {
			at += iv
			ivs = append(ivs, iv)
		}
		a.Message(id, at, 0, nil)
	}
	r := a.Report()
	sorted := slices.Clone(ivs)
	slices.SortFunc(sorted, func(x, y int64) int { return int(y - x) })
	med := nearestRank(slices.Sorted(slices.Values(ivs)), 0.5)
	var want []int64
	for _, v := range sorted[:MaxGaps] {
		if v > GapFactor*med {
			want = append(want, v)
		}
	}
	var got []int64
	for _, g := range r.Topics[0].Gaps {
		got = append(got, g.DurationNs)
	}
	if !slices.Equal(got, want) || r.Topics[0].Timing.LargestGapNs != sorted[0] {
		t.Errorf("gaps %v, want %v (largest %d)", got, want, sorted[0])
	}
}
