package pack

import "io"

// Timeline reads several files as one stream of frames in time order: a
// k-way merge (binary heap) over one Reader per file. Frames with equal
// times come in the order of the readers given to NewTimeline, and each
// file's frames keep their file order, so the output is deterministic.
// Steady state does not allocate.
//
// Each reader should have non-decreasing frame times (what the Writer
// records in its index); a file that goes back in time is still merged, but
// only its own order is kept for those frames.
//
// A Timeline is not safe for concurrent use. It does not own the readers.
type Timeline struct {
	srcs     []tlSource
	heap     []int // source indexes, min-heap on (frame time, source index)
	last     int   // source of the frame returned last, refilled on Next
	started  bool
	metaOnly bool
}

type tlSource struct {
	r    *Reader
	f    Frame
	done bool
}

// NewTimeline merges readers, each positioned where it should start.
func NewTimeline(readers ...*Reader) *Timeline {
	t := &Timeline{srcs: make([]tlSource, len(readers)), heap: make([]int, 0, len(readers)), last: -1}
	for i, r := range readers {
		t.srcs[i].r = r
	}
	return t
}

// SetMetaOnly makes Next read metas only (ReadMetaInto), not data.
func (t *Timeline) SetMetaOnly(metaOnly bool) { t.metaOnly = metaOnly }

// SeekTime positions every reader at its first frame with time >= ns and
// restarts the merge.
func (t *Timeline) SeekTime(ns int64) error {
	for i := range t.srcs {
		if err := t.srcs[i].r.SeekTime(ns); err != nil {
			return err
		}
		t.srcs[i].done = false
	}
	t.heap, t.last, t.started = t.heap[:0], -1, false
	return nil
}

// Next returns the next frame in time order and the index of the reader it
// came from. The frame is owned by the Timeline and valid until the next
// call (and its bytes until the reader is closed, as for ReadInto). It
// returns io.EOF when every reader is exhausted. A reader's error (a damaged
// frame) is returned with that reader's index; the reader is then dropped
// from the merge and Next goes on with the others.
func (t *Timeline) Next() (*Frame, int, error) {
	if !t.started {
		t.started = true
		for i := range t.srcs {
			if err := t.fill(i); err != nil {
				return nil, i, err
			}
		}
	} else if t.last >= 0 {
		i := t.last
		t.last = -1
		if err := t.fill(i); err != nil {
			return nil, i, err
		}
	}
	if len(t.heap) == 0 {
		return nil, -1, io.EOF
	}
	i := t.pop()
	t.last = i
	return &t.srcs[i].f, i, nil
}

// fill reads source i's next frame and pushes it.
func (t *Timeline) fill(i int) error {
	s := &t.srcs[i]
	if s.done {
		return nil
	}
	var err error
	if t.metaOnly {
		err = s.r.ReadMetaInto(&s.f)
	} else {
		err = s.r.ReadInto(&s.f)
	}
	if err != nil {
		s.done = true
		if err == io.EOF {
			return nil
		}
		return err
	}
	t.push(i)
	return nil
}

func (t *Timeline) less(a, b int) bool {
	ta, tb := t.srcs[a].f.timeNs, t.srcs[b].f.timeNs
	return ta < tb || (ta == tb && a < b)
}

func (t *Timeline) push(i int) {
	h := append(t.heap, i)
	j := len(h) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !t.less(h[j], h[p]) {
			break
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
	t.heap = h
}

func (t *Timeline) pop() int {
	h := t.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	j := 0
	for {
		l := 2*j + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && t.less(h[r], h[l]) {
			m = r
		}
		if !t.less(h[m], h[j]) {
			break
		}
		h[j], h[m] = h[m], h[j]
		j = m
	}
	t.heap = h
	return top
}
