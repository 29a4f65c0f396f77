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

// tbSpy records Errorf instead of failing.
type tbSpy struct {
	testing.TB
	failed bool
}

func (s *tbSpy) Helper()               {}
func (s *tbSpy) Errorf(string, ...any) { s.failed = true }

func TestAssertNoAllocs(t *testing.T) {
	var s tbSpy
	AssertNoAllocs(&s, func() {})
	if s.failed {
		t.Error("AssertNoAllocs failed a function that does not allocate")
	}
	AssertNoAllocs(&s, func() { sink = make([]byte, 64) })
	if !s.failed {
		t.Error("AssertNoAllocs passed a function that allocates")
	}
}
