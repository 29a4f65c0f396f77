package testutil

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	if got := Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("Median(3,1,2) = %v", got)
	}
	if got := Median([]int64{4, 1, 3, 2}); got != 2 {
		t.Errorf("Median(4,1,3,2) = %v (integer mean of 2 and 3)", got)
	}
	if got := Median[float64](nil); got != 0 {
		t.Errorf("Median(nil) = %v", got)
	}
}

// A ref that sleeps ten times longer than the item gives a ratio near 10.
func TestSameRunRatio(t *testing.T) {
	calls := 0
	r, ti, tr := SameRunRatio(5, func() { calls++; time.Sleep(time.Millisecond) }, func() { time.Sleep(10 * time.Millisecond) })
	if calls != 5 {
		t.Errorf("item ran %d times, want 5", calls)
	}
	if r < 3 || r > 12 || ti >= tr {
		t.Errorf("ratio %.2f (item %v, ref %v), want about 10", r, ti, tr)
	}
}
