//go:build !race

package kway

import "testing"

// TestHeapAllocs: at steady state (the heap has had its capacity) Push,
// Top, FixTop and Pop allocate nothing, Init and Reset neither.
func TestHeapAllocs(t *testing.T) {
	srcs := make([]*source, 16)
	keys := make([]int, 64)
	for i := range keys {
		keys[i] = i / 3
	}
	for i := range srcs {
		srcs[i] = &source{id: i, keys: keys}
	}
	h := New(lessSource, len(srcs))
	step := func() {
		h.Reset()
		for _, s := range srcs {
			s.i = 0
			h.Push(s)
		}
		for h.Len() > 0 {
			s := h.Top()
			if s.i++; s.i < len(s.keys) {
				h.FixTop()
			} else {
				h.Pop()
			}
		}
		for _, s := range srcs {
			s.i = 0
		}
		h.Init(srcs...)
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Errorf("merge of %d sources: %v allocs, want 0", len(srcs), n)
	}
}
