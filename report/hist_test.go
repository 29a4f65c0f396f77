package report

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// nearestRank is the reference quantile: the value of rank ceil(q*n).
func nearestRank(sorted []int64, q float64) int64 {
	r := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return sorted[min(r, len(sorted))-1]
}

// TestHistQuantiles: exact while the values are kept, within 1/1024 of the
// reference once bucketed; count, min, max, mean exact.
func TestHistQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 11, ExactValues, ExactValues + 1, 200000} {
		var h Hist
		vals := make([]int64, n)
		var sum float64
		for i := range vals {
			// intervals around 1 ms with a long tail and a few zeros
			v := int64(1e6 + rng.NormFloat64()*2e4)
			switch {
			case i%997 == 0:
				v = int64(rng.ExpFloat64() * 5e7)
			case i%1009 == 0:
				v = 0
			}
			vals[i] = max(v, 0)
			sum += float64(vals[i])
			h.Add(vals[i])
		}
		slices.Sort(vals)
		if h.Count() != uint64(n) || h.Min() != vals[0] || h.Max() != vals[n-1] || math.Abs(h.Mean()-sum/float64(n)) > 1e-6*sum/float64(n) {
			t.Errorf("n=%d: count %d min %d max %d mean %g, want %d %d %d %g", n, h.Count(), h.Min(), h.Max(), h.Mean(), n, vals[0], vals[n-1], sum/float64(n))
		}
		for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1} {
			got, want := h.Quantile(q), nearestRank(vals, q)
			tol := int64(0)
			if n > ExactValues {
				tol = want/1024 + 1
			}
			if d := got - want; d > tol || d < -tol {
				t.Errorf("n=%d q=%g: %d, want %d ± %d", n, q, got, want, tol)
			}
		}
	}
}

func TestSignedHist(t *testing.T) {
	var h SignedHist
	vals := []int64{-5, -1, 0, 3, 3, 7, -2, 100}
	for _, v := range vals {
		h.Add(v)
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	for _, q := range []float64{0, 0.1, 0.25, 0.3, 0.5, 0.75, 0.9, 1} {
		if got, want := h.Quantile(q), nearestRank(sorted, q); got != want {
			t.Errorf("q=%g: %d, want %d", q, got, want)
		}
	}
	if h.Min() != -5 || h.Max() != 100 || h.Negative() != 3 || h.Count() != 8 || h.Mean() != 105.0/8 {
		t.Errorf("min %d max %d neg %d count %d mean %g", h.Min(), h.Max(), h.Negative(), h.Count(), h.Mean())
	}
	var only SignedHist
	only.Add(-3)
	only.Add(-9)
	if only.Min() != -9 || only.Max() != -3 || only.Quantile(0.5) != -9 {
		t.Errorf("all negative: min %d max %d p50 %d", only.Min(), only.Max(), only.Quantile(0.5))
	}
}

// TestHistBuckets: every value lies in the bucket histIndex gives it.
func TestHistBuckets(t *testing.T) {
	for _, v := range []int64{0, 1, 1023, 1024, 1025, 2047, 2048, 1e6, 1e9, 1<<62 + 12345, math.MaxInt64} {
		b, i := histIndex(v)
		lo, hi := bucketRange(b, i)
		if v < lo || v > hi || b >= histBlocks || i >= histSub {
			t.Errorf("%d: block %d bucket %d [%d, %d]", v, b, i, lo, hi)
		}
		if v >= histSub && float64(hi-lo+1) > float64(v)/1024 {
			t.Errorf("%d: bucket %d wide, more than 1/1024", v, hi-lo+1)
		}
	}
}
