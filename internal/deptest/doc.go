// Package deptest holds the test that keeps the rooms of edr-lite apart:
// which packages may import what (ARCHITECTURE.md, "Rooms"). It has no
// code of its own.
//
// It is not for: anything at run time.
//
// # Caveats
//
// The test shells out to "go list -deps", so it needs the go command (as
// every test run has).
package deptest
