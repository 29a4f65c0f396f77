//go:build !race

package testutil

// RaceEnabled reports whether the binary was built with the race detector
// (which slows code 2-20x and grows its memory 5-10x: time and memory
// bounds do not hold under it).
const RaceEnabled = false
