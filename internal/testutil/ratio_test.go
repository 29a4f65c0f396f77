package testutil

import (
	"slices"
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

// TestSameRunRatio: a ref that takes ten times longer than the item gives
// a ratio of 10, the two alternating first.
func TestSameRunRatio(t *testing.T) {
	// A clock that only the two functions move: item takes 1 ms, ref 10 ms
	// (a unit test is never gated on the machine's timing).
	var now time.Time
	ratioClock = func() time.Time { return now }
	t.Cleanup(func() { ratioClock = time.Now })
	var order []string
	r, ti, tr := SameRunRatio(5,
		func() { order = append(order, "item"); now = now.Add(time.Millisecond) },
		func() { order = append(order, "ref"); now = now.Add(10 * time.Millisecond) })
	if r != 10 || ti != time.Millisecond || tr != 10*time.Millisecond {
		t.Errorf("ratio %.2f (item %v, ref %v), want 10 (1ms, 10ms)", r, ti, tr)
	}
	want := []string{"item", "ref", "ref", "item", "item", "ref", "ref", "item", "item", "ref"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v (the order flips every round)", order, want)
	}
}
