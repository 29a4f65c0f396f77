//go:build !race

package testutil

import "testing"

var sink []byte

func TestMinAllocs(t *testing.T) {
	if n := MinAllocs(10, func() {}); n != 0 {
		t.Errorf("nothing: %v allocs, want 0", n)
	}
	if n := MinAllocs(10, func() { sink = make([]byte, 64) }); n != 1 {
		t.Errorf("one make per call: %v allocs, want 1", n)
	}
	// Allocating through the first two rounds (11 calls each) only: one
	// AllocsPerRun sees it, the minimum over rounds does not.
	calls := 0
	noisy := func() {
		calls++
		if calls <= 22 {
			sink = make([]byte, 64)
		}
	}
	if n := testing.AllocsPerRun(10, noisy); n != 1 {
		t.Fatalf("noisy, one round: %v allocs, want 1", n)
	}
	calls = 0
	if n := MinAllocs(10, noisy); n != 0 {
		t.Errorf("noisy, minimum over rounds: %v allocs, want 0", n)
	}
}

func TestMallocs(t *testing.T) {
	if n := Mallocs(100, func() {}); n != 0 {
		t.Errorf("nothing: %d mallocs, want 0", n)
	}
	// One allocation every 10 calls: AllocsPerRun says 0, Mallocs 10.
	calls := 0
	rare := func() {
		calls++
		if calls%10 == 0 {
			sink = make([]byte, 64)
		}
	}
	if n := testing.AllocsPerRun(100, rare); n != 0 {
		t.Fatalf("AllocsPerRun: %v, want 0 (truncated)", n)
	}
	calls = 0
	if n := Mallocs(100, rare); n != 10 {
		t.Errorf("Mallocs: %d, want 10", n)
	}
}

func TestAssertNoAllocs(t *testing.T) {
	s := &spy{TB: t}
	AssertNoAllocs(s, func() {})
	if s.failed() {
		t.Error("AssertNoAllocs failed a function that does not allocate")
	}
	AssertNoAllocs(s, func() { sink = make([]byte, 64) })
	if !s.failed() {
		t.Error("AssertNoAllocs passed a function that allocates")
	}
}
