//go:build race

package testutil

// RaceEnabled reports whether the program was built with -race (tests
// whose time or memory bounds hold only without the race detector skip
// under it).
const RaceEnabled = true
