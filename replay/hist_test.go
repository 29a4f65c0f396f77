package replay

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestHistQuantilesWithinResolution(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 10, 1000, 100000} {
		var h hist
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = int64(r.ExpFloat64() * 50000) // ~50µs
			h.add(vals[i])
		}
		sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
		for _, q := range []float64{0.5, 0.99, 1} {
			rank := int(q*float64(n)+0.999999) - 1
			want := vals[rank]
			got := int64(h.quantile(q))
			if d := got - want; d > want/16+1 || d < -want/16-1 {
				t.Errorf("n=%d q=%v: %d, want %d within 1/16", n, q, got, want)
			}
		}
		if h.max != vals[n-1] {
			t.Errorf("max %d, want %d", h.max, vals[n-1])
		}
	}
	var h hist
	if h.quantile(0.5) != 0 {
		t.Error("empty histogram quantile not 0")
	}
	h.add(-5)
	h.add(int64(time.Hour))
	if h.quantile(0.5) != 0 || h.quantile(1) != time.Hour {
		t.Errorf("clamped quantiles %v %v", h.quantile(0.5), h.quantile(1))
	}
}

func TestHistIndexMonotonic(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<20; v += 7 {
		i := histIndex(v)
		if i < prev || i >= histBuckets {
			t.Fatalf("index(%d) = %d after %d", v, i, prev)
		}
		if lo := histValue(i); v >= 32 && (int64(v) < lo-lo/32-1 || int64(v) > lo+lo/32+1) {
			t.Fatalf("value %d in bucket %d whose middle is %d", v, i, lo)
		}
		prev = i
	}
	if i := histIndex(^uint64(0)); i >= histBuckets {
		t.Fatalf("max index %d", i)
	}
}
