package kway

import (
	"container/heap"
	"fmt"
	"testing"
)

// sinkKey holds benchmark results so nothing is optimised away.
var sinkKey int64

// benchSource is one sorted input of the merge benchmarks: keys stride
// apart from its own offset, so k sources interleave.
type benchSource struct {
	key  int64
	id   int
	left int
}

func lessBench(a, b *benchSource) bool {
	return a.key < b.key || (a.key == b.key && a.id < b.id)
}

// baseline: the same merge through container/heap.
type stdHeap []*benchSource

func (h stdHeap) Len() int           { return len(h) }
func (h stdHeap) Less(i, j int) bool { return lessBench(h[i], h[j]) }
func (h stdHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *stdHeap) Push(x any)        { *h = append(*h, x.(*benchSource)) }
func (h *stdHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func benchSources(k, per int) []*benchSource {
	srcs := make([]*benchSource, k)
	for i := range srcs {
		srcs[i] = &benchSource{id: i}
	}
	refill(srcs, per)
	return srcs
}

// refill restarts every source: per elements from a key below k.
func refill(srcs []*benchSource, per int) {
	for i, s := range srcs {
		s.key, s.left = int64(i*7%len(srcs)), per
	}
}

// BenchmarkMerge: one op is one merged element (read the smallest, advance
// its source, restore the order), over k sources of 1024 elements each;
// heap=container is container/heap doing the same (heap.Fix(h, 0) /
// heap.Pop), the baseline.
func BenchmarkMerge(b *testing.B) {
	const per = 1024
	for _, k := range []int{2, 8, 64, 1024} {
		b.Run(fmt.Sprintf("k=%d/heap=kway", k), func(b *testing.B) {
			srcs := benchSources(k, per)
			h := New(lessBench, k)
			h.Init(srcs...)
			var sum int64
			b.ReportAllocs()
			for b.Loop() {
				if h.Len() == 0 {
					refill(srcs, per)
					h.Init(srcs...)
				}
				s := h.Top()
				sum += s.key
				if s.left--; s.left > 0 {
					s.key += int64(k)
					h.FixTop()
				} else {
					h.Pop()
				}
			}
			sinkKey = sum
			if sum < 0 {
				b.Fatal("keys are not negative")
			}
		})
		b.Run(fmt.Sprintf("k=%d/heap=container", k), func(b *testing.B) {
			srcs := benchSources(k, per)
			h := make(stdHeap, 0, k)
			h = append(h, srcs...)
			heap.Init(&h)
			var sum int64
			b.ReportAllocs()
			for b.Loop() {
				if h.Len() == 0 {
					refill(srcs, per)
					h = append(h, srcs...)
					heap.Init(&h)
				}
				s := h[0]
				sum += s.key
				if s.left--; s.left > 0 {
					s.key += int64(k)
					heap.Fix(&h, 0)
				} else {
					heap.Pop(&h)
				}
			}
			sinkKey = sum
			if sum < 0 {
				b.Fatal("keys are not negative")
			}
		})
	}
}

// BenchmarkPushPop: one op is a Push and a Pop on a heap holding k entries.
func BenchmarkPushPop(b *testing.B) {
	for _, k := range []int{8, 1024} {
		b.Run(fmt.Sprintf("k=%d/heap=kway", k), func(b *testing.B) {
			srcs := benchSources(k+1, 1)
			h := New(lessBench, k+1)
			h.Init(srcs[:k]...)
			x := srcs[k]
			var sum int64
			b.ReportAllocs()
			for b.Loop() {
				x.key += 3
				h.Push(x)
				x = h.Pop()
				sum += x.key
			}
			sinkKey = sum
		})
		b.Run(fmt.Sprintf("k=%d/heap=container", k), func(b *testing.B) {
			srcs := benchSources(k+1, 1)
			h := make(stdHeap, 0, k+1)
			h = append(h, srcs[:k]...)
			heap.Init(&h)
			x := srcs[k]
			var sum int64
			b.ReportAllocs()
			for b.Loop() {
				x.key += 3
				heap.Push(&h, x)
				x = heap.Pop(&h).(*benchSource)
				sum += x.key
			}
			sinkKey = sum
		})
	}
}
