package kway

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestHeapMatchesSort drives a Heap with random operations and checks
// every Top and Pop against a plain slice model. Entries are indexes into
// keys, so FixTop can be exercised the way a merge does: the top entry's
// key grows in place.
func TestHeapMatchesSort(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var keys []int
		less := func(a, b int) bool { return keys[a] < keys[b] }
		h := New(less, rapid.IntRange(0, 4).Draw(rt, "capacity"))
		var model []int // entries in the heap, any order
		minKey := func() int {
			m := keys[model[0]]
			for _, e := range model[1:] {
				m = min(m, keys[e])
			}
			return m
		}
		remove := func(e int) {
			i := slices.Index(model, e)
			if i < 0 {
				rt.Fatalf("entry %d came out but is not in the heap", e)
			}
			model = slices.Delete(model, i, i+1)
		}
		newEntry := func(label string) int {
			keys = append(keys, rapid.IntRange(-20, 20).Draw(rt, label))
			return len(keys) - 1
		}
		ops := rapid.SliceOfN(rapid.IntRange(0, 5), 0, 200).Draw(rt, "ops")
		for _, op := range ops {
			switch op {
			case 0, 1: // Push (twice as likely)
				e := newEntry("key")
				h.Push(e)
				model = append(model, e)
			case 2: // Pop
				if len(model) == 0 {
					continue
				}
				want := minKey()
				e := h.Pop()
				if keys[e] != want {
					rt.Fatalf("Pop: key %d, want %d", keys[e], want)
				}
				remove(e)
			case 3: // the top's key grows, FixTop
				if len(model) == 0 {
					continue
				}
				keys[h.Top()] += rapid.IntRange(0, 30).Draw(rt, "grow")
				h.FixTop()
			case 4: // Init with new entries
				n := rapid.IntRange(0, 10).Draw(rt, "init")
				model = model[:0]
				items := make([]int, n)
				for i := range items {
					items[i] = newEntry("initkey")
				}
				h.Init(items...)
				model = append(model, items...)
			case 5:
				h.Reset()
				model = model[:0]
			}
			if h.Len() != len(model) {
				rt.Fatalf("Len %d, want %d", h.Len(), len(model))
			}
			if len(model) > 0 && keys[h.Top()] != minKey() {
				rt.Fatalf("Top: key %d, want %d", keys[h.Top()], minKey())
			}
		}
		// draining gives the keys sorted
		var want, got []int
		for _, e := range model {
			want = append(want, keys[e])
		}
		slices.Sort(want)
		for h.Len() > 0 {
			got = append(got, keys[h.Pop()])
		}
		if !slices.Equal(got, want) {
			rt.Fatalf("drain: %v, want %v", got, want)
		}
	})
}

// source is one sorted input of a merge.
type source struct {
	id   int
	keys []int
	i    int
}

func lessSource(a, b *source) bool {
	ka, kb := a.keys[a.i], b.keys[b.i]
	return ka < kb || (ka == kb && a.id < b.id)
}

// TestMergeIsSortedAndStable merges sorted lists the way a k-way merge
// does (Top, advance, FixTop or Pop) and compares with a stable sort by
// key of all entries, listed by source: ties come out by source index, so
// the merge is deterministic.
func TestMergeIsSortedAndStable(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.IntRange(0, 8).Draw(rt, "k")
		type entry struct{ key, src, pos int }
		var want []entry
		var srcs []*source
		for i := range k {
			keys := rapid.SliceOfN(rapid.IntRange(0, 15), 0, 20).Draw(rt, "keys")
			slices.Sort(keys)
			for p, key := range keys {
				want = append(want, entry{key, i, p})
			}
			if len(keys) > 0 {
				srcs = append(srcs, &source{id: i, keys: keys})
			}
		}
		slices.SortStableFunc(want, func(a, b entry) int { return a.key - b.key })
		h := New(lessSource, 0)
		h.Init(srcs...)
		var got []entry
		for h.Len() > 0 {
			s := h.Top()
			got = append(got, entry{s.keys[s.i], s.id, s.i})
			if s.i++; s.i < len(s.keys) {
				h.FixTop()
			} else {
				h.Pop()
			}
		}
		if !slices.Equal(got, want) {
			rt.Fatalf("merge:\n got %v\nwant %v", got, want)
		}
	})
}

func TestEmptyHeapPanics(t *testing.T) {
	f := func(name string, fn func(h *Heap[int])) {
		t.Helper()
		defer func() {
			t.Helper()
			r := recover()
			if s, ok := r.(string); !ok || !strings.HasPrefix(s, "BUG: ") {
				t.Errorf("%s of an empty heap: recovered %v, want a BUG: panic", name, r)
			}
		}()
		h := New(func(a, b int) bool { return a < b }, 1)
		h.Push(1)
		h.Pop()
		fn(h)
	}
	f("Top", func(h *Heap[int]) { h.Top() })
	f("Pop", func(h *Heap[int]) { h.Pop() })
	h := New(func(a, b int) bool { return a < b }, 0)
	h.FixTop() // nothing to fix
	h.Init()
	if h.Len() != 0 {
		t.Errorf("Len %d after an empty Init", h.Len())
	}
}

// TestPopClearsSlots: entries that left the heap are not kept reachable
// through its backing array.
func TestPopClearsSlots(t *testing.T) {
	a, b, c := new(int), new(int), new(int)
	*a, *b, *c = 1, 2, 3
	h := New(func(x, y *int) bool { return *x < *y }, 3)
	h.Init(c, a, b)
	h.Pop()
	if s := h.items[:3]; s[2] != nil {
		t.Errorf("Pop left %v in a freed slot", *s[2])
	}
	h.Reset()
	for i, p := range h.items[:3] {
		if p != nil {
			t.Errorf("Reset left slot %d set", i)
		}
	}
	h.Init(b)
	if s := h.items[:3]; s[0] != b || s[1] != nil || s[2] != nil {
		t.Errorf("Init over a longer heap left slots set: %v", s)
	}
}
