package testutil

import (
	"os"
	"slices"
	"time"
)

// SpeedGates reports whether the speed gates are to run: they run alone in
// CI's bench-gates step (EDR_SPEED_GATES=1), not beside other tests on
// shared cores.
func SpeedGates() bool { return os.Getenv("EDR_SPEED_GATES") == "1" }

// ratioClock is SameRunRatio's clock (a test of SameRunRatio itself
// replaces it, so that it checks the arithmetic, not the machine's timer).
var ratioClock = time.Now

// SameRunRatio times item and ref alternately, rounds times each (the
// order flips every round so drift hits both alike), and returns the median
// over the rounds of ref's time / item's time: item's speed as a fraction
// of ref's when both do the same work (2 means item is twice as fast). It
// also returns item's and ref's median times.
func SameRunRatio(rounds int, item, ref func()) (ratio float64, itemMedian, refMedian time.Duration) {
	ratios := make([]float64, 0, rounds)
	ti := make([]time.Duration, 0, rounds)
	tr := make([]time.Duration, 0, rounds)
	timeIt := func(fn func()) time.Duration {
		t0 := ratioClock()
		fn()
		return ratioClock().Sub(t0)
	}
	for i := 0; i < rounds; i++ {
		var a, b time.Duration
		if i%2 == 0 {
			a = timeIt(item)
			b = timeIt(ref)
		} else {
			b = timeIt(ref)
			a = timeIt(item)
		}
		ti, tr = append(ti, a), append(tr, b)
		ratios = append(ratios, float64(b)/float64(max(a, 1)))
	}
	return Median(ratios), Median(ti), Median(tr)
}

// Median returns the median of xs (the mean of the middle two for an even
// count; 0 for none). xs is not changed.
func Median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
