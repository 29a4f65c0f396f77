package bench

import "slices"

// median is the middle of v (the upper one of an even count), v unchanged.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
