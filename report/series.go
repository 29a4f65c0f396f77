package report

import "math"

// series accumulates one numeric field for its plot. Up to 2*cols samples
// are kept as they are; past that the samples are folded into cols pixel
// columns over [start, end], each keeping its first, last, smallest and
// largest sample with their times (so a one-sample spike survives: the
// M4 reduction), and the plot has at most 4*cols points. Memory is bounded
// by cols whatever the number of samples.
type series struct {
	topic, field, unit string

	n, nonFinite uint64
	min, max     float64
	sum          float64
	// integral: every sample so far is an integer; plusOne counts the
	// samples one more than the one before (a sequence number: nearly
	// all of them, restarts and drops aside; see isCounter); prev is the
	// last sample. asked: the field was named by Options.Fields (a
	// counter is then plotted too).
	integral, asked bool
	plusOne         uint64
	prev            float64

	start, end int64
	ncols      int
	scale      float64 // columns per ns
	raw        []Point
	cols       []column // nil until more than 2*ncols samples
}

type column struct {
	n                       uint32
	first, last, lo, hi     float64
	firstT, lastT, loT, hiT int64
	// gap is the longest interval between two samples of the column,
	// from gapAt: a gap inside one pixel column still breaks the line.
	gap, gapAt int64
}

func newSeries(topic, field, unit string, start, end int64, cols int) *series {
	s := &series{topic: topic, field: field, unit: unit, start: start, end: end, ncols: cols}
	if end > start {
		s.scale = float64(cols) / float64(end-start)
	}
	return s
}

// add records one sample at time t.
func (s *series) add(t int64, v float64) {
	if v-v != 0 { // NaN or ±Inf
		s.nonFinite++
		return
	}
	if s.n == 0 {
		s.integral = true
	}
	s.integral = s.integral && v == math.Trunc(v)
	if s.n > 0 && v == s.prev+1 {
		s.plusOne++
	}
	s.prev = v
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum += v
	if s.cols == nil {
		if len(s.raw) < 2*s.ncols {
			s.raw = append(s.raw, Point{t, v})
			return
		}
		s.cols = make([]column, s.ncols)
		for _, p := range s.raw {
			s.fold(p.TimeNs, p.Value)
		}
		s.raw = nil
	}
	s.fold(t, v)
}

// colOf returns the pixel column of time t (times outside [start, end]
// go to the first or last column).
func (s *series) colOf(t int64) int {
	if t <= s.start {
		return 0
	}
	return min(int(float64(t-s.start)*s.scale), s.ncols-1)
}

func (s *series) fold(t int64, v float64) {
	c := &s.cols[s.colOf(t)]
	if c.n == 0 {
		*c = column{n: 1, first: v, last: v, lo: v, hi: v, firstT: t, lastT: t, loT: t, hiT: t}
		return
	}
	c.n++
	if iv := t - c.lastT; iv > c.gap {
		c.gap, c.gapAt = iv, c.lastT
	}
	c.last, c.lastT = v, t
	if v < c.lo {
		c.lo, c.loT = v, t
	}
	if v > c.hi {
		c.hi, c.hiT = v, t
	}
}

// signal returns the series as a Signal: its samples, or per column its
// first, extreme and last samples in time order (duplicates left out),
// with its gaps: every interval between consecutive samples longer than
// gapNs (0: none), where the line breaks.
func (s *series) signal(gapNs int64) Signal {
	sig := Signal{Topic: s.topic, Field: s.field, Unit: s.unit, Count: s.n, NonFinite: s.nonFinite,
		Min: s.min, Max: s.max, Downsampled: s.cols != nil, Points: []Point{}}
	if s.n > 0 {
		sig.Mean = s.sum / float64(s.n)
	}
	gap := func(at, iv int64) {
		if gapNs > 0 && iv > gapNs {
			sig.Gaps = append(sig.Gaps, Gap{at, iv})
		}
	}
	if s.cols == nil {
		sig.Points = append(sig.Points, s.raw...)
		for k := 1; k < len(s.raw); k++ {
			gap(s.raw[k-1].TimeNs, s.raw[k].TimeNs-s.raw[k-1].TimeNs)
		}
		return sig
	}
	prevLast, seen := int64(0), false
	for i := range s.cols {
		c := &s.cols[i]
		if c.n == 0 {
			continue
		}
		if seen {
			gap(prevLast, c.firstT-prevLast)
		}
		gap(c.gapAt, c.gap)
		prevLast, seen = c.lastT, true
		pts := [4]Point{{c.firstT, c.first}, {c.loT, c.lo}, {c.hiT, c.hi}, {c.lastT, c.last}}
		if pts[2].TimeNs < pts[1].TimeNs {
			pts[1], pts[2] = pts[2], pts[1]
		}
		for k, p := range pts {
			if k > 0 && sig.Points[len(sig.Points)-1] == p {
				continue // the same sample twice (the column's first is its low, ...)
			}
			sig.Points = append(sig.Points, p)
		}
	}
	return sig
}

// isCounter reports whether the field only counts: integers, nine in ten
// of them one more than the sample before (a sequence number, which may
// restart or skip where messages were lost).
func (s *series) isCounter() bool {
	return s.integral && s.n > 1 && s.plusOne*10 >= (s.n-1)*9
}
