package kway

// Heap is a binary min-heap of T in the order of less. It allocates only
// when it grows past its capacity.
type Heap[T any] struct {
	items []T
	less  func(a, b T) bool
}

// New returns an empty heap ordered by less with room for capacity entries.
func New[T any](less func(a, b T) bool, capacity int) *Heap[T] {
	return &Heap[T]{items: make([]T, 0, capacity), less: less}
}

// Len returns the number of entries.
func (h *Heap[T]) Len() int { return len(h.items) }

// Push adds x.
func (h *Heap[T]) Push(x T) {
	h.items = append(h.items, x)
	h.up(len(h.items) - 1)
}

// Top returns the smallest entry without removing it. It panics when the
// heap is empty.
func (h *Heap[T]) Top() T {
	if len(h.items) == 0 {
		panic("BUG: kway: Top of an empty heap")
	}
	return h.items[0]
}

// Pop removes and returns the smallest entry. It panics when the heap is
// empty.
func (h *Heap[T]) Pop() T {
	n := len(h.items) - 1
	if n < 0 {
		panic("BUG: kway: Pop of an empty heap")
	}
	top := h.items[0]
	h.items[0] = h.items[n]
	var zero T
	h.items[n] = zero
	h.items = h.items[:n]
	h.down(0)
	return top
}

// FixTop restores the order after the top entry's key grew (a merge step:
// the source at the top moved to its next element). It is one sift-down,
// cheaper than Pop and Push. On an empty heap it does nothing.
func (h *Heap[T]) FixTop() { h.down(0) }

// Reset empties the heap and keeps its capacity.
func (h *Heap[T]) Reset() {
	clear(h.items)
	h.items = h.items[:0]
}

// Init replaces the contents with items (copied; the heap reuses its
// capacity when it suffices) and orders them in O(len(items)).
func (h *Heap[T]) Init(items ...T) {
	clear(h.items)
	h.items = append(h.items[:0], items...)
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// up moves entry j towards the root while it is smaller than its parent.
func (h *Heap[T]) up(j int) {
	items := h.items
	x := items[j]
	for j > 0 {
		p := (j - 1) / 2
		if !h.less(x, items[p]) {
			break
		}
		items[j] = items[p]
		j = p
	}
	items[j] = x
}

// down moves entry i towards the leaves while a child is smaller.
func (h *Heap[T]) down(i int) {
	items := h.items
	n := len(items)
	if i >= n {
		return
	}
	x := items[i]
	for {
		c := 2*i + 1
		if c >= n || c < 0 { // c < 0: int overflow
			break
		}
		if r := c + 1; r < n && h.less(items[r], items[c]) {
			c = r
		}
		if !h.less(items[c], x) {
			break
		}
		items[i] = items[c]
		i = c
	}
	items[i] = x
}
