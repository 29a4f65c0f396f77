package testutil

import (
	"runtime"
	"testing"
)

// AllocRounds is how many testing.AllocsPerRun rounds MinAllocs takes the
// minimum of.
const AllocRounds = 5

// MinAllocs returns the smallest of AllocRounds results of
// testing.AllocsPerRun(runs, f), stopping early at 0. A GC cycle that
// lands in one round (emptying a sync.Pool, say) shows in that round only;
// an allocation f makes on every call shows in all of them. f is called
// about AllocRounds*(runs+1) times.
func MinAllocs(runs int, f func()) float64 {
	lowest := -1.0
	for range AllocRounds {
		n := testing.AllocsPerRun(runs, f)
		if lowest < 0 || n < lowest {
			lowest = n
		}
		if lowest == 0 {
			break
		}
	}
	return lowest
}

// allocRuns is the runs per round of AssertNoAllocs.
const allocRuns = 100

// AssertNoAllocs fails tb unless f allocates nothing, measured by
// MinAllocs over rounds of 100 runs. Grow f's buffers before the call, as a
// long-running caller would have.
func AssertNoAllocs(tb testing.TB, f func()) {
	tb.Helper()
	if n := MinAllocs(allocRuns, f); n != 0 {
		tb.Errorf("%v allocations per call (the least of %d rounds of %d calls), want 0", n, AllocRounds, allocRuns)
	}
}

// Mallocs calls f once, then runs times, and returns the heap allocations
// of those runs calls: every one, where testing.AllocsPerRun truncates the
// average (and so hides an allocation made once every few calls, a
// buffer flush say). GOMAXPROCS is 1 meanwhile, so other goroutines add
// few of theirs.
func Mallocs(runs int, f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}
