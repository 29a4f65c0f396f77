package report

import (
	"math"
	"math/bits"
	"slices"
)

// Hist is a distribution of non-negative int64 values (durations in ns).
// The first ExactValues values are kept as they are, so quantiles of a
// small distribution are exact; past that they move into a log-linear
// histogram: values below 1024 counted exactly, larger ones in buckets
// 1/1024 of their power of two wide, so a quantile is within 0.1% of the
// true value (docs/report.md, "Timing"). Count, min, max and sum are
// always exact. Buckets are allocated per power of two as values reach
// them, at most 55 blocks of 8 KiB: memory does not depend on how many
// values are added.
type Hist struct {
	exact    []int64 // while n <= ExactValues and blocks are unused
	sorted   bool
	blocks   [histBlocks]*[histSub]uint64
	bucketed bool
	n        uint64
	min, max int64
	sum      float64
}

// ExactValues is how many values a Hist keeps exactly before it buckets
// them.
const ExactValues = 4096

const (
	histSubBits = 10
	histSub     = 1 << histSubBits // buckets per power of two
	// block 0 holds 0..1023 exactly; block b >= 1 holds [1024<<(b-1), 1024<<b).
	histBlocks = 64 - histSubBits + 1
)

// histIndex returns the block and the bucket of v >= 0.
func histIndex(v int64) (int, int) {
	if v < histSub {
		return 0, int(v)
	}
	e := bits.Len64(uint64(v)) - 1 // >= histSubBits
	shift := e - histSubBits
	return shift + 1, int(uint64(v)>>shift) - histSub
}

// bucketRange returns the smallest and largest value of a bucket.
func bucketRange(b, i int) (int64, int64) {
	if b == 0 {
		return int64(i), int64(i)
	}
	shift := b - 1
	lo := int64(histSub+i) << shift
	return lo, lo + (int64(1)<<shift - 1)
}

// Add counts v (negative values count as 0).
func (h *Hist) Add(v int64) {
	if h.bucketed && v >= 0 { // the common case, kept short
		b, i := histIndex(v)
		if blk := h.blocks[b]; blk != nil {
			blk[i]++
			h.min, h.max = min(h.min, v), max(h.max, v)
			h.n++
			h.sum += float64(v)
			return
		}
	}
	h.AddN(v, 1)
}

// AddN counts v n times.
func (h *Hist) AddN(v int64, n uint64) {
	if n == 0 {
		return
	}
	if v < 0 {
		v = 0
	}
	if !h.bucketed && h.n+n > ExactValues {
		h.bucketed = true
		for _, x := range h.exact {
			h.bucket(x, 1)
		}
		h.exact = nil
	}
	if h.bucketed {
		h.bucket(v, n)
	} else {
		for k := uint64(0); k < n; k++ {
			h.exact = append(h.exact, v)
		}
		h.sorted = false
	}
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if h.n == 0 || v > h.max {
		h.max = v
	}
	h.n += n
	h.sum += float64(v) * float64(n)
}

func (h *Hist) bucket(v int64, n uint64) {
	b, i := histIndex(v)
	blk := h.blocks[b]
	if blk == nil {
		blk = new([histSub]uint64)
		h.blocks[b] = blk
	}
	blk[i] += n
}

func (h *Hist) sortExact() {
	if !h.sorted {
		slices.Sort(h.exact)
		h.sorted = true
	}
}

// Count returns how many values were added.
func (h *Hist) Count() uint64 { return h.n }

// Min and Max return the exact extremes (0 when empty).
func (h *Hist) Min() int64 { return h.min }

// Max returns the largest value added.
func (h *Hist) Max() int64 { return h.max }

// Mean returns the exact mean (0 when empty).
func (h *Hist) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile returns the nearest-rank q-quantile (0 <= q <= 1): the value of
// rank ceil(q*n), exact while the values are kept, else the middle of its
// bucket clamped to [Min, Max]. q = 0 gives Min, q = 1 gives Max, exactly.
// 0 when empty.
func (h *Hist) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	if q <= 0 {
		return h.min
	}
	if q >= 1 {
		return h.max
	}
	return h.atRank(max(uint64(math.Ceil(q*float64(h.n))), 1))
}

// atRank returns the value of rank r (1-based, r <= Count) as Quantile does.
func (h *Hist) atRank(rank uint64) int64 {
	if rank <= 1 {
		return h.min
	}
	if rank >= h.n {
		return h.max
	}
	if !h.bucketed {
		h.sortExact()
		return h.exact[rank-1]
	}
	var seen uint64
	for b, blk := range h.blocks {
		if blk == nil {
			continue
		}
		for i, c := range blk {
			if c == 0 {
				continue
			}
			seen += c
			if seen >= rank {
				lo, hi := bucketRange(b, i)
				return min(max(lo+(hi-lo)/2, h.min), h.max)
			}
		}
	}
	return h.max
}

// each calls fn for every kept value, or every non-empty bucket with its
// representative value (as Quantile gives it) and count, in increasing
// order.
func (h *Hist) each(fn func(v int64, n uint64)) {
	if !h.bucketed {
		h.sortExact()
		for _, v := range h.exact {
			fn(v, 1)
		}
		return
	}
	for b, blk := range h.blocks {
		if blk == nil {
			continue
		}
		for i, c := range blk {
			if c != 0 {
				lo, hi := bucketRange(b, i)
				fn(min(max(lo+(hi-lo)/2, h.min), h.max), c)
			}
		}
	}
}

// SignedHist is a Hist of values of either sign (latencies between two
// clocks that may disagree).
type SignedHist struct {
	neg, pos Hist // neg holds magnitudes of negative values
}

// Add counts v.
func (s *SignedHist) Add(v int64) {
	if v < 0 {
		if v == math.MinInt64 {
			v++
		}
		s.neg.Add(-v)
		return
	}
	s.pos.Add(v)
}

// Count returns how many values were added.
func (s *SignedHist) Count() uint64 { return s.neg.n + s.pos.n }

// Negative returns how many values were below zero.
func (s *SignedHist) Negative() uint64 { return s.neg.n }

// Min returns the smallest value.
func (s *SignedHist) Min() int64 {
	if s.neg.n > 0 {
		return -s.neg.max
	}
	return s.pos.min
}

// Max returns the largest value.
func (s *SignedHist) Max() int64 {
	if s.pos.n > 0 {
		return s.pos.max
	}
	return -s.neg.min
}

// Mean returns the exact mean.
func (s *SignedHist) Mean() float64 {
	n := s.Count()
	if n == 0 {
		return 0
	}
	return (s.pos.sum - s.neg.sum) / float64(n)
}

// Quantile returns the nearest-rank q-quantile, as Hist.Quantile.
func (s *SignedHist) Quantile(q float64) int64 {
	n := s.Count()
	switch {
	case n == 0:
		return 0
	case q <= 0:
		return s.Min()
	case q >= 1:
		return s.Max()
	}
	rank := max(uint64(math.Ceil(q*float64(n))), 1)
	if rank <= s.neg.n {
		// the rank-th smallest overall is the (neg.n-rank+1)-th smallest magnitude
		return -s.neg.atRank(s.neg.n - rank + 1)
	}
	return s.pos.atRank(rank - s.neg.n)
}
