package engine

import (
	"sync"
	"testing"
)

func TestDropLogWindow(t *testing.T) {
	type want struct {
		from, to int64
		n        uint64
		exact    bool
	}
	f := func(name string, drops []int64, wants []want) {
		t.Helper()
		var l dropLog
		for _, ns := range drops {
			l.record(ns)
		}
		if l.load() != uint64(len(drops)) {
			t.Fatalf("%s: total %d, want %d", name, l.load(), len(drops))
		}
		for _, w := range wants {
			n, exact := l.window(w.from, w.to)
			if n != w.n || exact != w.exact {
				t.Errorf("%s: window [%d, %d] = %d (exact %v), want %d (exact %v)", name, w.from, w.to, n, exact, w.n, w.exact)
			}
		}
	}
	f("none", nil, []want{{0, 100, 0, true}})
	f("boundaries inclusive", []int64{10, 10, 20, 30, 40}, []want{
		{20, 30, 2, true}, {0, 9, 0, true}, {10, 10, 2, true}, {11, 19, 0, true}, {41, 100, 0, true}, {0, 100, 5, true},
	})
	// Times never go back: a late, earlier drop counts at the newest time.
	f("clamped", []int64{50, 40}, []want{{50, 50, 2, true}, {40, 49, 0, true}})
	// 8 spans exactly: no merge, every window exact.
	f("full", []int64{1, 2, 3, 4, 5, 6, 7, 8}, []want{{3, 6, 4, true}, {8, 8, 1, true}})
	// A burst of 100 distinct times between two isolated drops: the
	// burst's older drops merge into one span [1000, 1094] (the newest
	// keep their times), the isolated drops stay exactly timed.
	burst := []int64{-1000}
	for ns := int64(1000); ns < 1100; ns++ {
		burst = append(burst, ns)
	}
	burst = append(burst, 5000)
	f("burst", burst, []want{
		{-2000, 999, 1, true},   // before the burst: exact
		{1100, 6000, 1, true},   // after it: exact
		{900, 1200, 100, true},  // all of it: exact
		{1095, 1200, 5, true},   // its newest drops: exact
		{1050, 1200, 99, false}, // cuts the merged span: 5 + its last drop + 93 unplaced (upper bound)
		{900, 1000, 94, false},  // only its first drop is known inside: 1 + 93 unplaced
	})
	// A merged span of two drops cut by the window is still exact: its
	// end points are its drops.
	two := []int64{0, 100, 200, 300, 400, 500, 600, 700, 701}
	f("two", two, []want{{701, 800, 1, true}, {0, 700, 8, true}})
}

// TestDropLogConcurrent: concurrent recorders (a MultiProducer topic) and
// a reader lose no drop.
func TestDropLogConcurrent(t *testing.T) {
	var l dropLog
	var wg sync.WaitGroup
	const per = 10000
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				l.record(int64(i*4 + w))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 1000 {
			l.window(0, 1<<40)
		}
	}()
	wg.Wait()
	if n, _ := l.window(0, 1<<40); n != 4*per || l.load() != 4*per {
		t.Fatalf("window %d, total %d, want %d", n, l.load(), 4*per)
	}
}
