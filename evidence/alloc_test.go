//go:build !race

package evidence

import "testing"

// TestHasherAllocs: marking, hashing and going back allocate nothing (a
// dump writer marks before every provisional frame).
func TestHasherAllocs(t *testing.T) {
	h := NewHasher()
	x := []byte("x")
	if n := testing.AllocsPerRun(100, func() { h.Mark(); h.Write(x); h.Back() }); n != 0 {
		t.Fatalf("Mark, Write, Back allocate %v times", n)
	}
}

// TestHasherLendAllocs: the pipelined hash (a frame lent to the worker, a
// small record copied aside while it runs, a mark taken on the worker)
// allocates nothing in steady state.
func TestHasherLendAllocs(t *testing.T) {
	h := NewHasher()
	h.Async(func() {})
	defer h.Stop()
	frames := [2][]byte{make([]byte, 128<<10), make([]byte, 128<<10)}
	rec := make([]byte, 200)
	k := 0
	step := func() {
		h.Write(rec)
		h.Mark()
		h.Lend(int64(k), nil, frames[k%2][:100], frames[k%2][100:])
		k++
	}
	for range 4 {
		step()
	}
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("Write, Mark, Lend allocate %v times", n)
	}
}
