package replay

import (
	"math/bits"
	"time"
)

// histBuckets is the size of the log-linear histogram: values below 32 have
// a bucket each; above, every power of two is split into 16 buckets, so a
// quantile is off by at most 1/32 of its value.
const histBuckets = 1024

// hist is a fixed-size log-linear histogram of non-negative durations in
// nanoseconds. Add does not allocate. Not safe for concurrent use.
type hist struct {
	counts [histBuckets]uint64
	n      uint64
	max    int64
}

func histIndex(v uint64) int {
	if v < 32 {
		return int(v)
	}
	shift := bits.Len64(v) - 5
	return 16*shift + int(v>>uint(shift))
}

// histValue is the middle of bucket i.
func histValue(i int) int64 {
	if i < 32 {
		return int64(i)
	}
	shift := i/16 - 1
	mant := int64(i - 16*shift)
	return mant<<uint(shift) + (int64(1)<<uint(shift))/2
}

func (h *hist) add(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.counts[histIndex(uint64(ns))]++
	h.n++
	if ns > h.max {
		h.max = ns
	}
}

// quantile returns the q-quantile (0 < q <= 1), 0 when empty.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	if rank < 1 {
		rank = 1
	}
	var c uint64
	for i, n := range h.counts {
		c += n
		if c >= rank {
			v := histValue(i)
			if v > h.max {
				v = h.max
			}
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}
