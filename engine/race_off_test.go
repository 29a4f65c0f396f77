//go:build !race

package engine

// raceEnabled reports a -race build (memory figures are then inflated).
const raceEnabled = false
